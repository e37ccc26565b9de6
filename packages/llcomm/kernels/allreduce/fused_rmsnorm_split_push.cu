// fused_rmsnorm_split_push: fused_rmsnorm_split.cu's kernel with the cluster's q's exchanged without a release
// (llcomm/fused_split.cuh, kPush: st.async into the shared memory of every block of the cluster, its own included,
// counted by an mbarrier, instead of the two barrier.cluster.arrive.release, each a MEMBAR.ALL.GPU on sm_90). Same outputs, bit for bit. Launched by the
// host only with clusters of C > 1 blocks whose rows fit (fused-launcher.ts fusedSplitPushes); elsewhere the
// barrier kernel runs.
#include "llcomm/fused_split.cuh"
#include "llcomm/fused_signature.cuh"

#define LLCOMM_FUSED_VARIANT_fused_rmsnorm_split_push(dtype)                                                        \
  extern "C" __global__ void __launch_bounds__(LLCOMM_THREADS, LLCOMM_MIN_BLOCKS_PER_SM)                           \
      llcomm_fused_rmsnorm_split_push_##dtype(const __grid_constant__ LlcommFusedNormParams p) {                   \
    LLCOMM_FUSED_SIGNATURE_CLUSTER(p) /* per-process builds only: llcomm/fused_signature.cuh */                     \
    fusedRmsNormSplit<LlcSentinel<LLC_DT_##dtype, true>, LLC_DT_##dtype, 0, true>(p, p.sentinel);                   \
  }
#include "instantiations.def"
