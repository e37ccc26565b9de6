// fused_rmsnorm_split_ll_push: fused_rmsnorm_split_ll.cu's kernel (LL16 packets) with the cluster's q's exchanged
// without a release, as fused_rmsnorm_split_push.cu (llcomm/fused_split.cuh, kPush). Same outputs, bit for bit.
#include "llcomm/fused_split.cuh"
#include "llcomm/fused_signature.cuh"

#define LLCOMM_FUSED_VARIANT_fused_rmsnorm_split_ll_push(dtype)                                                     \
  extern "C" __global__ void __launch_bounds__(LLCOMM_THREADS, LLCOMM_MIN_BLOCKS_PER_SM)                           \
      llcomm_fused_rmsnorm_split_ll_push_##dtype(const __grid_constant__ LlcommFusedNormParams p) {                \
    LLCOMM_FUSED_SIGNATURE_CLUSTER(p) /* per-process builds only: llcomm/fused_signature.cuh */                     \
    fusedRmsNormSplit<LlcLL16, LLC_DT_##dtype, 0, true>(p, p.ll);                                                   \
  }
#include "instantiations.def"
