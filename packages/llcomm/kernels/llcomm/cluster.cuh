// Thread-block clusters (sm_90): the block's place in its cluster, the cluster barrier and distributed shared
// memory, in raw PTX (no CUDA headers, as ptx.cuh). Used by the split fused kernel (llcomm/fused_split.cuh), whose
// blocks of one rank share a row and combine its sum of squares through each other's shared memory.
//
// Memory model (PTX ISA, "barrier.cluster" and the memory consistency model): barrier.cluster.arrive.release by a
// thread is a release at cluster scope of everything the thread wrote before it (shared memory included);
// barrier.cluster.wait.acquire completes once every (non-exited) thread of the cluster has arrived and is an acquire
// at cluster scope, so a thread's ld.shared::cluster after the wait sees every write made before any arrive of that
// phase. The barrier is per thread and alternates arrive, wait, arrive, wait...; every thread of every block of the
// cluster must take part (no early return between the first arrive and the last wait).
#pragma once
#include "llcomm/types.cuh"

#if LLC_HAS_DEVICE && defined(LLCOMM_HOST_EMULATION)
// Host emulation (test/kernels/emulator/emu.h supplies every function of this file under the same name).
#elif LLC_HAS_DEVICE

// %cluster_ctarank: this block's rank in its cluster (blockIdx.x % clusterDim.x for the 1-D clusters used here).
LLC_DEVICE llc_u32 llcClusterCtaRank() {
  llc_u32 r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
// %cluster_nctarank: blocks per cluster (1 in a launch without the cluster attribute).
LLC_DEVICE llc_u32 llcClusterNumCtas() {
  llc_u32 r;
  asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(r));
  return r;
}
LLC_DEVICE void llcClusterArriveRelease() { asm volatile("barrier.cluster.arrive.release;" ::: "memory"); }
LLC_DEVICE void llcClusterWaitAcquire() { asm volatile("barrier.cluster.wait.acquire;" ::: "memory"); }

// The shared::cta address (32 bits) of a generic pointer into this block's shared memory.
LLC_DEVICE llc_u32 llcSharedAddress(const void* p) {
  llc_u32 a;
  asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p));
  return a;
}
// The shared::cluster address of the same variable in block `cta` of this cluster.
LLC_DEVICE llc_u32 llcMapSharedCluster(llc_u32 sharedAddress, llc_u32 cta) {
  llc_u32 a;
  asm("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(a) : "r"(sharedAddress), "r"(cta));
  return a;
}
// A weak load from distributed shared memory: only after a barrier.cluster wait that ordered the store (above).
LLC_DEVICE float llcLoadSharedClusterF32(llc_u32 clusterAddress) {
  float v;
  asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(v) : "r"(clusterAddress) : "memory");
  return v;
}

#endif
