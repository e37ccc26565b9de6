// fused_rmsnorm_oneshot: AllReduce + residual add + RMSNorm in one barrier-free launch, on the one-shot sentinel
// protocol (as oneshot_sentinel.cu). Each block (channel) owns whole rows of the [rows][hidden] tensor; its rows are
// one contiguous message. Every rank broadcasts its x slots into every peer's lane of the sentinel region, receives
// all lanes and reduces each slot in rank order in f32 (LlBuffer::recvReduce, re-arming every slot it read), rounds
// to the dtype, adds the result to its residual and writes the residual; after a __syncthreads the block normalizes
// its rows (llcomm/rmsnorm.cuh, the same arithmetic as the reference llcomm_rmsnorm_* kernel). Every rank reduces
// every row itself, so the sum of squares of a row needs no exchange. A row's bytes times the rows of a block must
// fit one sentinel lane (fused-launcher.ts picks the blocks and refuses what does not fit).
#include "llcomm/allreduce_common.cuh"
#include "llcomm/ll_buffer.cuh"
#include "llcomm/rmsnorm.cuh"
#include "llcomm/fused_signature.cuh"

template <int DT>
__device__ __forceinline__ void fusedRmsNormOneshot(const LlcommFusedNormParams& p) {
  using Fmt = LlcSentinel<DT, true>; // the arrival test of oneshot_sentinel.cu
  using Value = typename LlBuffer<Fmt>::Value;
  constexpr llc_u32 E = 16u / LlcDtype<DT>::kElemBytes;
  llcWaitForPriorGrid(); // before any read of the epoch word or the buffers (PDL launches)
  const LlcBlockRole role = llcBlockRole(p.blocksPerRank, p.launchRanks);
  const LlcFusedRows f = llcFusedRows<DT>(p, role.channel);
  if (f.bytes == 0) return; // a block without rows: no exchange and no epoch step, identically on every rank
  const llc_u32 me = role.rank;
  const llc_u32 slots = static_cast<llc_u32>(f.bytes / 16u);
  const char* input = reinterpret_cast<const char*>(p.input[me]) + f.rows.begin * f.rowBytes;
  char* residual = reinterpret_cast<char*>(p.residual[me]) + f.rows.begin * f.resRowBytes;
  Value next{};
  if (threadIdx.x < slots) llcLoadPayload<DT, 4>(input, 16ull * threadIdx.x, f.bytes, next.w); // before the epoch
  LlcChannel ch(p.scratch[me], role.channel);
  LlcWaiter waiter(p.errorWord, p.timeoutNs, me, ch.epoch, ch.index);
  const llc_u64 laneBytes = llcDivCount(p.sentinel.channelHalfBytes, p.nranks) / 16u * 16u;
  const LlBuffer<Fmt> buf =
      llcMakeBuffer<Fmt>(p.recvBuf, ch.regionOffset(p.sentinel), laneBytes, me, p.nranks, ch, &waiter);
  Value v{};
  for (llc_u32 s = threadIdx.x; s < slots; s += blockDim.x) {
    v = next; // loaded one iteration ahead, so the load overlaps the sends
    if (s + blockDim.x < slots) llcLoadPayload<DT, 4>(input, 16ull * (s + blockDim.x), f.bytes, next.w);
    buf.bcast(s, v);
  }
  for (llc_u32 s = threadIdx.x; s < slots; s += blockDim.x) {
    llcLoadPayload<DT, 4>(input, 16ull * s, f.bytes, v.w); // own contribution (the thread that sent slot s)
    // The slot's residual is loaded before the receive, so the load overlaps the wait.
    const LlcSlotFloats<DT> r = llcResidualBefore<DT>(residual, static_cast<llc_u64>(s) * E, p.flags);
    const Value sum = buf.template recvReduce<DT>(s, v); // rank order 0..n-1, re-arms every slot it read
    llcResidualAfter<DT>(residual, static_cast<llc_u64>(s) * E, p.flags, r, sum.w);
  }
  LLC_SHARED_WORDS(red, LLCOMM_NORM_SHARED_FLOATS);
  __syncthreads(); // the block's residual rows are written (and visible to every thread of the block)
  llcFusedNormRows<DT>(p, me, f, reinterpret_cast<float*>(red));
  ch.blockAdvanceEpoch(); // after every recv of this block (ll_buffer.cuh contract)
}

#define LLCOMM_FUSED_VARIANT_fused_rmsnorm_oneshot(dtype)                                                           \
  extern "C" __global__ void __launch_bounds__(LLCOMM_THREADS, LLCOMM_MIN_BLOCKS_PER_SM)                           \
      llcomm_fused_rmsnorm_oneshot_##dtype(const __grid_constant__ LlcommFusedNormParams p) {                      \
    LLCOMM_FUSED_SIGNATURE_CLUSTER(p) /* per-process builds only: llcomm/fused_signature.cuh */                     \
    fusedRmsNormOneshot<LLC_DT_##dtype>(p);                                                                         \
  }
#include "instantiations.def"
