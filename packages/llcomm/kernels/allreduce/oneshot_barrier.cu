// oneshot-barrier: the classic custom all-reduce (two global barriers per call), kept as the baseline the
// barrier-free designs are measured against. Each rank copies its input into its own plain buffer, a barrier
// publishes it, every rank reads all ranks' buffers over NVLink and reduces in rank order, and a second barrier
// keeps every rank from overwriting its buffer while peers still read it.
#include "llcomm/allreduce_common.cuh"
#include "llcomm/signature.cuh"
#include "llcomm/flags.cuh"
#include "llcomm/ll_buffer.cuh"

#define LLCOMM_BARRIER_BATCH 8 // ranks whose 16-byte loads are in flight together

template <int DT>
__device__ __forceinline__ void oneshotBarrierAllReduce(const LlcommAllReduceParams& p) {
  const LlcCall call = llcBeginCall<DT, LLCOMM_SIG_ALG_ONESHOT_BARRIER, LLCOMM_SIG_PROTOCOL_NONE>(p);
  if (call.bytes == 0) return; // empty channel: no exchange and no epoch step, identically on every rank
  const llc_u32 me = call.role.rank, n = p.nranks;
  LlcChannel ch(p.scratch[me], call.role.channel);
  LlcWaiter waiter(p.errorWord, p.timeoutNs, me, ch.epoch, ch.index);
  // Call signature (signature.cuh): the first barrier's arrival flags are the signature packets, so the check is
  // that barrier's wait (no exchange of its own), which needs every peer's packet: nothing is left to check later.
  using Sig = LlcCallSignature<LLCOMM_SIG_ALG_ONESHOT_BARRIER, LLCOMM_SIG_PROTOCOL_NONE, DT>;
  const llc_u64 offset = ch.regionOffset(p.plain);
  const llc_u32 slots = static_cast<llc_u32>(llcCeilDiv(call.bytes, 16u));
  llc_u32 w[4];
  for (llc_u32 s = threadIdx.x; s < slots; s += blockDim.x) {
    llcLoadPayload<DT, 4>(call.input, 16ull * s, call.bytes, w);
    LlcWords4 v;
#pragma unroll
    for (int i = 0; i < 4; ++i) v.w[i] = w[i];
    llcStoreWeakV4(reinterpret_cast<char*>(p.recvBuf[me]) + offset + 16ull * s, v); // published by the barrier
  }
  Sig::blockBarrier(p, me, ch, waiter); // every peer makes this call, else MISMATCH; then every copy is visible
  for (llc_u32 s = threadIdx.x; s < slots; s += blockDim.x) {
    LlcAcc<DT, 4> acc;
    for (llc_u32 base = 0; base < n; base += LLCOMM_BARRIER_BATCH) {
      LlcWords4 got[LLCOMM_BARRIER_BATCH];
#pragma unroll
      for (int j = 0; j < LLCOMM_BARRIER_BATCH; ++j)
        // Strong loads: ordered after the barrier's acquire, and never served from a stale L1 line.
        if (base + j < n) got[j] = llcLoadRelaxedSysV4(reinterpret_cast<const char*>(p.recvBuf[base + j]) + offset + 16ull * s);
#pragma unroll
      for (int j = 0; j < LLCOMM_BARRIER_BATCH; ++j) {
        if (base + j >= n) break;
        if (base + j == 0)
          acc.set(got[j].w);
        else
          acc.add(got[j].w);
      }
    }
    acc.pack(w);
    llcStorePayload<DT, 4>(call.output, 16ull * s, call.bytes, w);
  }
  // Second barrier: no rank leaves (and may overwrite its buffer next call) before every rank has read it.
  llcBlockGlobalBarrier(p.scratch, me, n, ch.index, 1, ch.epoch, waiter);
  ch.blockAdvanceEpoch();
}

#define LLCOMM_VARIANT_oneshot_barrier(protocol, dtype, op)                                                         \
  extern "C" __global__ void __launch_bounds__(LLCOMM_THREADS, LLCOMM_MIN_BLOCKS_PER_SM)                           \
      LLCOMM_KERNEL_NAME(oneshot_barrier, protocol, dtype, op)(const __grid_constant__ LlcommAllReduceParams p) {   \
    oneshotBarrierAllReduce<LLC_DT_##dtype>(p);                                                                     \
  }
#include "instantiations.def"
