// rmsnorm: the unfused reference for the fused kernels, residual = residual + x; out = RMSNorm(residual) * weight,
// with x the AllReduce's output. One block of LLCOMM_THREADS threads per (rank slot, row): blockIdx.x = slot * rows
// + row, the rank is launchRanks[slot] (virtual ranks of one device run in one launch, as the all-reduce kernels).
// The arithmetic is llcomm/rmsnorm.cuh's, the fused kernels' own, so AllReduce + this kernel is bit-identical to
// the fused call. No communication: the buffer fields of the params are unused.
#include "llcomm/allreduce_common.cuh"
#include "llcomm/rmsnorm.cuh"

template <int DT>
__device__ __forceinline__ void referenceRmsNorm(const LlcommFusedNormParams& p) {
  constexpr llc_u32 E = 16u / LlcDtype<DT>::kElemBytes;
  llcWaitForPriorGrid(); // the AllReduce before it wrote x (PDL launches)
  const llc_u32 slot = blockIdx.x / p.rows, row = blockIdx.x - slot * p.rows;
  const llc_u32 rank = p.launchRanks[slot];
  LlcFusedRows f;
  f.rows.begin = row;
  f.rows.end = row + 1u;
  f.rowBytes = static_cast<llc_u64>(p.hidden) * LlcDtype<DT>::kElemBytes;
  f.resRowBytes = static_cast<llc_u64>(p.hidden) * ((p.flags & LLCOMM_FUSED_RESIDUAL_F32) ? 4u : LlcDtype<DT>::kElemBytes);
  f.bytes = f.rowBytes;
  const char* x = reinterpret_cast<const char*>(p.input[rank]) + row * f.rowBytes;
  char* residual = reinterpret_cast<char*>(p.residual[rank]) + row * f.resRowBytes;
  const llc_u32 slots = static_cast<llc_u32>(f.rowBytes / 16u);
  for (llc_u32 s = threadIdx.x; s < slots; s += blockDim.x) {
    const LlcWords4 w = llcLoadWeakV4(x + 16ull * s);
    llcResidualAddSlot<DT>(residual, static_cast<llc_u64>(s) * E, p.flags, w.w);
  }
  LLC_SHARED_WORDS(red, LLCOMM_NORM_SHARED_FLOATS);
  __syncthreads(); // the row's residual is written (and visible to every thread of the block)
  llcFusedNormRows<DT>(p, rank, f, reinterpret_cast<float*>(red));
}

#define LLCOMM_FUSED_VARIANT_rmsnorm(dtype)                                                                         \
  extern "C" __global__ void __launch_bounds__(LLCOMM_THREADS, LLCOMM_MIN_BLOCKS_PER_SM)                           \
      llcomm_rmsnorm_##dtype(const __grid_constant__ LlcommFusedNormParams p) {                                    \
    referenceRmsNorm<LLC_DT_##dtype>(p);                                                                            \
  }
#include "instantiations.def"
