// fused_rmsnorm_twoshot: AllReduce + residual add + RMSNorm in one barrier-free launch, on the two-shot sentinel
// protocol (as twoshot_sentinel.cu). Each block (channel) owns whole rows of the [rows][hidden] tensor, one
// contiguous message, split in nranks parts; part o is owned by rank o. Reduce-scatter: every rank sends part o of
// its x to owner o; the owner reduces each slot in rank order in f32 once, rounds to the dtype, adds it to its own
// residual and broadcasts the reduced x (not the residual) to every rank (all-gather lanes); every rank adds the
// owners' reduced x to its own residual. The sum of squares of a row: after the all-gather every rank holds the whole
// reduced row, so each rank computes it over its own complete residual row (redundantly, locally: no extra packet),
// in the order of llcomm/rmsnorm.cuh, so the result is bit-identical to AllReduce + llcomm_rmsnorm_*. The owners
// reduce once, so all ranks hold the same reduced bits; with equal residuals (the tensor-parallel invariant) every
// rank's residual and output are bitwise equal. A block's message must fit nranks parts of one lane each.
#include "llcomm/allreduce_common.cuh"
#include "llcomm/ll_buffer.cuh"
#include "llcomm/rmsnorm.cuh"

template <int DT>
__device__ __forceinline__ void fusedRmsNormTwoshot(const LlcommFusedNormParams& p) {
  using Fmt = LlcSentinel<DT>; // the arrival test of twoshot_sentinel.cu
  using Value = typename LlBuffer<Fmt>::Value;
  constexpr llc_u32 eb = LlcDtype<DT>::kElemBytes;
  constexpr llc_u32 E = 16u / eb;
  llcWaitForPriorGrid(); // before any read of the epoch word or the buffers (PDL launches)
  const LlcBlockRole role = llcBlockRole(p.blocksPerRank, p.launchRanks);
  const LlcFusedRows f = llcFusedRows<DT>(p, role.channel);
  if (f.bytes == 0) return; // a block without rows: no exchange and no epoch step, identically on every rank
  const llc_u32 me = role.rank, n = p.nranks;
  const char* input = reinterpret_cast<const char*>(p.input[me]) + f.rows.begin * f.rowBytes;
  char* residual = reinterpret_cast<char*>(p.residual[me]) + f.rows.begin * f.resRowBytes;
  LlcChannel ch(p.scratch[me], role.channel);
  LlcWaiter waiter(p.errorWord, p.timeoutNs, me, ch.epoch, ch.index);
  // The channel-half of the sentinel region holds 2 * nranks lanes: RS lanes first, then AG lanes.
  const llc_u64 laneBytes = llcDivCount(p.sentinel.channelHalfBytes, 2u * n) / 16u * 16u;
  const llc_u64 base = ch.regionOffset(p.sentinel);
  const LlBuffer<Fmt> rs = llcMakeBuffer<Fmt>(p.recvBuf, base, laneBytes, me, n, ch, &waiter);
  const LlBuffer<Fmt> ag = llcMakeBuffer<Fmt>(p.recvBuf, base + n * laneBytes, laneBytes, me, n, ch, &waiter);
  const llc_u64 elems = f.bytes / eb;
  const llc_u64 partElems = llcPieceElems(elems, n, E); // parts start on slot boundaries
  const llc_u32 slotsPerPart = static_cast<llc_u32>(llcCeilDiv(partElems * eb, 16u));
  Value v;
  // Reduce-scatter, send side.
  for (llc_u32 s = threadIdx.x; s < slotsPerPart; s += blockDim.x) {
    for (llc_u32 k = 1; k < n; ++k) {
      const llc_u32 o = me + k < n ? me + k : me + k - n;
      const LlcRange part = llcPieceAt(elems, partElems, o);
      if (16ull * s >= part.size() * eb) continue;
      llcLoadPayload<DT, 4>(input + part.begin * eb, 16ull * s, part.size() * eb, v.w);
      rs.send(o, s, v);
    }
  }
  // Owner: reduce my part, add it to my residual, broadcast the reduced x.
  const LlcRange mine = llcPieceAt(elems, partElems, me);
  const llc_u64 mineBytes = mine.size() * eb;
  for (llc_u32 s = threadIdx.x; 16ull * s < mineBytes; s += blockDim.x) {
    llcLoadPayload<DT, 4>(input + mine.begin * eb, 16ull * s, mineBytes, v.w);
    // The slot's residual is loaded before the receive, so the load overlaps the wait.
    const LlcSlotFloats<DT> r = llcResidualBefore<DT>(residual, mine.begin + static_cast<llc_u64>(s) * E, p.flags);
    Value sum = rs.template recvReduce<DT>(s, v); // rank order 0..n-1; re-arms the RS slots it read
#pragma unroll
    for (int i = 0; i < 4; ++i) sum.w[i] = Fmt::canonicalize(sum.w[i]); // my sum = the bits peers receive
    ag.bcast(s, sum);
    llcResidualAfter<DT>(residual, mine.begin + static_cast<llc_u64>(s) * E, p.flags, r, sum.w);
  }
  // All-gather, receive side: the other owners' reduced x into my residual.
  for (llc_u32 s = threadIdx.x; s < slotsPerPart; s += blockDim.x) {
    for (llc_u32 k = 1; k < n; ++k) {
      const llc_u32 o = me + k < n ? me + k : me + k - n;
      const LlcRange part = llcPieceAt(elems, partElems, o);
      if (16ull * s >= part.size() * eb) continue;
      const Value r = ag.recv(o, s); // re-arms the AG slot
      llcResidualAddSlot<DT>(residual, part.begin + static_cast<llc_u64>(s) * E, p.flags, r.w);
    }
  }
  LLC_SHARED_WORDS(red, LLCOMM_NORM_SHARED_FLOATS);
  __syncthreads(); // the block's residual rows are complete (and visible to every thread of the block)
  llcFusedNormRows<DT>(p, me, f, reinterpret_cast<float*>(red));
  ch.blockAdvanceEpoch(); // after every recv of this block (ll_buffer.cuh contract)
}

#define LLCOMM_FUSED_VARIANT_fused_rmsnorm_twoshot(dtype)                                                           \
  extern "C" __global__ void __launch_bounds__(LLCOMM_THREADS, LLCOMM_MIN_BLOCKS_PER_SM)                           \
      llcomm_fused_rmsnorm_twoshot_##dtype(const __grid_constant__ LlcommFusedNormParams p) {                      \
    fusedRmsNormTwoshot<LLC_DT_##dtype>(p);                                                                         \
  }
#include "instantiations.def"
