// fused_rmsnorm_split_ll: as fused_rmsnorm_split.cu, on LL16 packets (the flag in every 8-byte half carries the
// epoch: no re-arm store, the protocol of the unfused oneshot-ll that wins small AllReduces), in the `ll` region.
#include "llcomm/fused_split.cuh"
#include "llcomm/fused_signature.cuh"

#define LLCOMM_FUSED_VARIANT_fused_rmsnorm_split_ll(dtype)                                                          \
  extern "C" __global__ void __launch_bounds__(LLCOMM_THREADS, LLCOMM_MIN_BLOCKS_PER_SM)                           \
      llcomm_fused_rmsnorm_split_ll_##dtype(const __grid_constant__ LlcommFusedNormParams p) {                     \
    LLCOMM_FUSED_SIGNATURE_CLUSTER(p) /* per-process builds only: llcomm/fused_signature.cuh */                     \
    fusedRmsNormSplit<LlcLL16, LLC_DT_##dtype>(p, p.ll);                                                            \
  }
#include "instantiations.def"
