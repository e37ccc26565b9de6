// allreduce_many: several AllReduces of different sizes in one launch, on the one-shot sentinel protocol (as
// oneshot_sentinel.cu). The buffers are laid end to end in slot space, each starting on a slot of its own (buffer i
// takes ceil(count_i * elemBytes / 16) slots; a buffer's tail slot is zero-padded and never stored past its end); the
// channels split that slot range as one message. Each slot is reduced in rank order in f32 (recvReduce), exactly
// the arithmetic of one oneshot-sentinel call per buffer, so the results are bit-identical to one call per buffer.
// Per process (LLCOMM_FUSED_SIG_CLUSTER): one more block after the R x B data blocks (grid R x B + 1) publishes and
// checks the launch's call signature (llcomm/fused_signature.cuh); the data blocks' waits (LlBuffer through
// LlcWaiter::keepWaiting) read the error word at every deadline check, so its MISMATCH ends them.
#include "llcomm/allreduce_common.cuh"
#include "llcomm/fused_abi.cuh"
#include "llcomm/ll_buffer.cuh"
#include "llcomm/fused_signature.cuh"

// The buffer and byte offset of virtual slot `s` (buffers <= LLCOMM_MANY_MAX_BUFFERS: a short linear walk).
struct LlcManySlot {
  llc_u32 buffer;
  llc_u64 offset; // bytes into the buffer
  llc_u64 bytes;  // the buffer's bytes
};
template <int DT>
LLC_DEVICE LlcManySlot llcManySlot(const LlcommAllReduceManyParams& p, llc_u32 s) {
  LlcManySlot m{0, 0, 0};
  llc_u32 first = 0; // slots of one launch fit a lane: 32 bits
#pragma unroll
  for (llc_u32 i = 0; i < LLCOMM_MANY_MAX_BUFFERS; ++i) { // unrolled: constant-indexed parameter loads
    if (i >= p.buffers) break;
    const llc_u64 bytes = p.count[i] * LlcDtype<DT>::kElemBytes;
    const llc_u32 slots = static_cast<llc_u32>(llcCeilDiv(bytes, 16u));
    if (s < first + slots) {
      m.buffer = i;
      m.offset = 16ull * (s - first);
      m.bytes = bytes;
      return m;
    }
    first += slots;
  }
  return m;
}

template <int DT>
__device__ __forceinline__ void allReduceMany(const LlcommAllReduceManyParams& p) {
  using Fmt = LlcSentinel<DT, true>;
  using Value = typename LlBuffer<Fmt>::Value;
  llcWaitForPriorGrid(); // before any read of the epoch word or the buffers (PDL launches)
  const LlcBlockRole role = llcBlockRole(p.blocksPerRank, p.launchRanks);
  llc_u64 totalSlots = 0;
  for (llc_u32 i = 0; i < p.buffers; ++i) totalSlots += llcCeilDiv(p.count[i] * LlcDtype<DT>::kElemBytes, 16u);
  const LlcRange range = llcPiece(totalSlots, p.blocksPerRank, role.channel, 1);
  if (range.size() == 0) return; // empty channel: no exchange and no epoch step, identically on every rank
  const llc_u32 me = role.rank;
  const llc_u32 slots = static_cast<llc_u32>(range.size());
  LlcChannel ch(p.scratch[me], role.channel);
  LlcWaiter waiter(p.errorWord, p.timeoutNs, me, ch.epoch, ch.index);
  const llc_u64 laneBytes = llcDivCount(p.sentinel.channelHalfBytes, p.nranks) / 16u * 16u;
  const LlBuffer<Fmt> buf =
      llcMakeBuffer<Fmt>(p.recvBuf, ch.regionOffset(p.sentinel), laneBytes, me, p.nranks, ch, &waiter);
  Value v{};
  for (llc_u32 s = threadIdx.x; s < slots; s += blockDim.x) {
    const LlcManySlot m = llcManySlot<DT>(p, static_cast<llc_u32>(range.begin) + s);
    llcLoadPayload<DT, 4>(reinterpret_cast<const char*>(p.input[m.buffer][me]), m.offset, m.bytes, v.w);
    buf.bcast(s, v);
  }
  for (llc_u32 s = threadIdx.x; s < slots; s += blockDim.x) {
    {
      const LlcManySlot m = llcManySlot<DT>(p, static_cast<llc_u32>(range.begin) + s);
      llcLoadPayload<DT, 4>(reinterpret_cast<const char*>(p.input[m.buffer][me]), m.offset, m.bytes, v.w);
    }
    const Value sum = buf.template recvReduce<DT>(s, v); // re-arms every slot it read
    // The slot's place is found again rather than kept across recvReduce (which holds a batch of received values
    // in registers: keeping it made the kernel spill).
    const LlcManySlot m = llcManySlot<DT>(p, static_cast<llc_u32>(range.begin) + s);
    llcStorePayload<DT, 4>(reinterpret_cast<char*>(p.output[m.buffer][me]), m.offset, m.bytes, sum.w);
  }
  ch.blockAdvanceEpoch();
}

#define LLCOMM_FUSED_VARIANT_allreduce_many(dtype)                                                                  \
  extern "C" __global__ void __launch_bounds__(LLCOMM_THREADS, LLCOMM_MIN_BLOCKS_PER_SM)                           \
      llcomm_allreduce_many_##dtype(const __grid_constant__ LlcommAllReduceManyParams p) {                         \
    LLCOMM_FUSED_SIGNATURE_CLUSTER(p) /* per-process builds only: one signature block, llcomm/fused_signature.cuh */ \
    allReduceMany<LLC_DT_##dtype>(p);                                                                               \
  }
#include "instantiations.def"
