// Cost-decomposition probes of the split fused kernels (llcomm/fused_split.cuh kProbe bits), bf16 only, for
// scripts/bench-fused.mjs --probes (packages/tools/src/bench/fused.ts, FUSED_PROBES). Not listed in
// instantiations.def: no library call reaches them; the bench launches them by name with a split plan's shape
// (FusedLauncher.prepareNormProbe). Except the empty kernels, each is the shipped kernel with a part taken out, so
// the difference between two columns is what that part costs. NO_BARRIER kernels give wrong outputs (timing only).
#include "llcomm/fused_split.cuh"

#if LLC_HAS_DEVICE

// The launch alone: the fused parameter struct (3.3 KB), no work.
extern "C" __global__ void __launch_bounds__(LLCOMM_THREADS, LLCOMM_MIN_BLOCKS_PER_SM)
    llcomm_fused_probe_empty(const __grid_constant__ LlcommFusedNormParams p) {
  llcWaitForPriorGrid();
  if (p.rows == 0xFFFFFFFFu && threadIdx.x == 0) *reinterpret_cast<llc_u32*>(p.errorWord) = 0u; // never: keeps p
}

// The launch alone with a 16-byte parameter struct (what the parameter size costs).
struct LlcFusedProbeSmall {
  llc_u64 errorWord;
  llc_u32 rows;
  llc_u32 pad;
};
extern "C" __global__ void __launch_bounds__(LLCOMM_THREADS, LLCOMM_MIN_BLOCKS_PER_SM)
    llcomm_fused_probe_empty_small(const __grid_constant__ LlcFusedProbeSmall p) {
  llcWaitForPriorGrid();
  if (p.rows == 0xFFFFFFFFu && threadIdx.x == 0) *reinterpret_cast<llc_u32*>(p.errorWord) = 0u; // never
}

#define LLC_FUSED_PROBE(name, Fmt, region, bits)                                                                    \
  extern "C" __global__ void __launch_bounds__(LLCOMM_THREADS, LLCOMM_MIN_BLOCKS_PER_SM)                           \
      llcomm_fused_probe_##name(const __grid_constant__ LlcommFusedNormParams p) {                                 \
    fusedRmsNormSplit<Fmt, LLC_DT_bf16, bits>(p, p.region);                                                        \
  }
// split-ll (LL16)
LLC_FUSED_PROBE(ll_xchg, LlcLL16, ll, LLC_SPLIT_PROBE_XCHG_ONLY)
LLC_FUSED_PROBE(ll_xchg_flagc, LlcLL16, ll, LLC_SPLIT_PROBE_XCHG_ONLY | LLC_SPLIT_PROBE_C_FROM_FLAGS)
LLC_FUSED_PROBE(ll_nonorm, LlcLL16, ll, LLC_SPLIT_PROBE_NO_NORM)
LLC_FUSED_PROBE(ll_nobar, LlcLL16, ll, LLC_SPLIT_PROBE_NO_BARRIER)
LLC_FUSED_PROBE(ll_nobar_nonorm, LlcLL16, ll, LLC_SPLIT_PROBE_NO_BARRIER | LLC_SPLIT_PROBE_NO_NORM)
// candidate: split-ll with the residual stored after the cluster barriers (same outputs; bench checks bitwise)
LLC_FUSED_PROBE(ll_late, LlcLL16, ll, LLC_SPLIT_LATE_RESIDUAL)
// candidates: the peer-parallel exchange where it applies (else identical to split-ll), alone and with late
LLC_FUSED_PROBE(ll_spread, LlcLL16, ll, LLC_SPLIT_SPREAD)
LLC_FUSED_PROBE(ll_late_spread, LlcLL16, ll, LLC_SPLIT_LATE_RESIDUAL | LLC_SPLIT_SPREAD)
// split (sentinel slots)
using LlcProbeSentinel = LlcSentinel<LLC_DT_bf16, true>;
LLC_FUSED_PROBE(s_xchg, LlcProbeSentinel, sentinel, LLC_SPLIT_PROBE_XCHG_ONLY)
LLC_FUSED_PROBE(s_nonorm, LlcProbeSentinel, sentinel, LLC_SPLIT_PROBE_NO_NORM)

#endif
