// oneshot-ll: every rank broadcasts its input as LL packets (LL16 or LL8) into every peer's lane, then every rank
// receives all lanes and reduces them in rank order. Barrier-free: the flag in each packet carries the epoch, and
// the buffer half alternates with the epoch's parity (double buffering with bidirectional acknowledgement).
#include "llcomm/allreduce_common.cuh"
#include "llcomm/ll_buffer.cuh"

template <class Fmt, int DT>
__device__ __forceinline__ void oneshotLlAllReduce(const LlcommAllReduceParams& p) {
  const LlcCall call = llcBeginCall<DT>(p);
  if (call.bytes == 0) return; // empty channel: no exchange and no epoch step, identically on every rank
  LlcChannel ch(p.scratch[call.role.rank], call.role.channel);
  LlcWaiter waiter(p.errorWord, p.timeoutNs, call.role.rank, ch.epoch, ch.index);
  const llc_u64 laneBytes = p.ll.channelHalfBytes / p.nranks / 16u * 16u;
  const LlBuffer<Fmt> buf =
      llcMakeBuffer<Fmt>(p.recvBuf, ch.regionOffset(p.ll), laneBytes, call.role.rank, p.nranks, ch, &waiter);
  constexpr int W = Fmt::kWords;
  const llc_u32 slots = static_cast<llc_u32>(llcCeilDiv(call.bytes, 4u * W));
  typename LlBuffer<Fmt>::Value v{};
  const llc_u32 groups = buf.spreadGroups(slots); // uniform over the block
  if (groups > 1) {
    // Small message: (slot, peer) pairs spread over the block's threads (ll_buffer.cuh, recvReduceSpread).
    LLC_SHARED_WORDS(stage, LLCOMM_PEER_STAGE_WORDS);
    buf.bcastSpread(slots, groups, [&](llc_u32 s, typename LlBuffer<Fmt>::Value& x) {
      llcLoadPayload<DT, W>(call.input, 4ull * W * s, call.bytes, x.w);
    });
    const llc_u32 s = threadIdx.x;
    if (s < slots) llcLoadPayload<DT, W>(call.input, 4ull * W * s, call.bytes, v.w); // own contribution
    const typename LlBuffer<Fmt>::Value sum = buf.template recvReduceSpread<DT>(slots, groups, v, stage);
    if (s < slots) llcStorePayload<DT, W>(call.output, 4ull * W * s, call.bytes, sum.w);
    ch.advanceEpoch();
    return;
  }
  for (llc_u32 s = threadIdx.x; s < slots; s += blockDim.x) {
    llcLoadPayload<DT, W>(call.input, 4ull * W * s, call.bytes, v.w);
    buf.bcast(s, v);
  }
  for (llc_u32 s = threadIdx.x; s < slots; s += blockDim.x) {
    llcLoadPayload<DT, W>(call.input, 4ull * W * s, call.bytes, v.w); // own contribution (same thread as above)
    const typename LlBuffer<Fmt>::Value sum = buf.template recvReduce<DT>(s, v);
    llcStorePayload<DT, W>(call.output, 4ull * W * s, call.bytes, sum.w);
  }
  ch.advanceEpoch();
}

#define LLC_FMT_ll16 LlcLL16
#define LLC_FMT_ll8 LlcLL8
#define LLCOMM_VARIANT_oneshot_ll(protocol, dtype, op)                                                              \
  extern "C" __global__ void __launch_bounds__(LLCOMM_THREADS, LLCOMM_MIN_BLOCKS_PER_SM)                           \
      LLCOMM_KERNEL_NAME(oneshot_ll, protocol, dtype, op)(const __grid_constant__ LlcommAllReduceParams p) {        \
    oneshotLlAllReduce<LLC_FMT_##protocol, LLC_DT_##dtype>(p);                                                      \
  }
#include "instantiations.def"
