// fused_rmsnorm_split_twoshot: the split push kernel (fused_rmsnorm_split_push.cu: a row shared by the blocks of a
// thread-block cluster, the cluster's q's pushed into every block) with the block's data slots exchanged two-shot
// (llcomm/fused_split.cuh, kTwo: reduce-scatter to the part's owner, which reduces in rank order and broadcasts).
// Same outputs, bit for bit. Launched by the host only with clusters of C > 1 blocks whose rows fit
// (fused-launcher.ts planFusedSplit with 'split-twoshot'); on any other shape it writes nothing.
#include "llcomm/fused_split.cuh"
#include "llcomm/fused_signature.cuh"

#define LLCOMM_FUSED_VARIANT_fused_rmsnorm_split_twoshot(dtype)                                                     \
  extern "C" __global__ void __launch_bounds__(LLCOMM_THREADS, LLCOMM_MIN_BLOCKS_PER_SM)                           \
      llcomm_fused_rmsnorm_split_twoshot_##dtype(const __grid_constant__ LlcommFusedNormParams p) {                \
    LLCOMM_FUSED_SIGNATURE_CLUSTER(p) /* per-process builds only: llcomm/fused_signature.cuh */                     \
    fusedRmsNormSplit<LlcSentinel<LLC_DT_##dtype, true>, LLC_DT_##dtype, 0, true, true>(p, p.sentinel);             \
  }
#include "instantiations.def"
