// fused_rmsnorm_split: AllReduce + residual add + RMSNorm in one barrier-free launch, one-shot on the sentinel
// protocol, a row shared by the blocks of one thread-block cluster (llcomm/fused_split.cuh). Launched with the
// cluster dimension attribute (fused-launcher.ts); without it (cluster of one) it is a one-shot with whole rows.
#include "llcomm/fused_split.cuh"
#include "llcomm/fused_signature.cuh"

#define LLCOMM_FUSED_VARIANT_fused_rmsnorm_split(dtype)                                                             \
  extern "C" __global__ void __launch_bounds__(LLCOMM_THREADS, LLCOMM_MIN_BLOCKS_PER_SM)                           \
      llcomm_fused_rmsnorm_split_##dtype(const __grid_constant__ LlcommFusedNormParams p) {                        \
    LLCOMM_FUSED_SIGNATURE_CLUSTER(p) /* per-process builds only: llcomm/fused_signature.cuh */                     \
    fusedRmsNormSplit<LlcSentinel<LLC_DT_##dtype, true>, LLC_DT_##dtype>(p, p.sentinel);                            \
  }
#include "instantiations.def"
