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

// The split kernel's exchange of its q's without a release (fused_split.cuh, `push`). Why: on sm_90 ptxas compiles
// barrier.cluster.arrive.release to MEMBAR.ALL.GPU + ERRBAR + CGAERRBAR + UCGABAR_ARV (SASS of 27d54bb, 2026-12-07):
// the arrive waits until every earlier store of the thread is performed GPU-wide, the residual stores and the receive
// buffer's re-arming stores included, which took the split kernel's first barrier +0.73 us and its second arrive
// +0.45 us on an H100 with every thread already there (research/notes/fused-probes.md, 2026-12-07). So each block
// pushes its q's into the shared memory of every block of its cluster, its own included, with st.async, whose
// completion an mbarrier of the destination block counts; nothing is released and no MEMBAR is issued after the
// kernel's start.
// Memory model (PTX ISA: "mbarrier", "st.async", "fence.mbarrier_init", "barrier.cluster"):
// - init: mbarrier.init is a plain write of the object. Before any st.async (another block's, or one of its own
//   block's) may complete transactions on it, the initializing thread issues fence.mbarrier_init.release.cluster and then its barrier.cluster arrive, and
//   every pushing thread issues barrier.cluster.wait (acquire by default) before its first st.async: the fence makes
//   the init visible at cluster scope, the barrier orders it before every complete-tx (the pattern CUTLASS uses
//   for cluster-wide mbarrier init: fence_barrier_init, cluster_arrive_relaxed, cluster_wait). Every thread's arrive,
//   the initializing thread's included, is relaxed: fence.mbarrier_init is the light-weight release that orders the
//   init before that thread's relaxed arrive, and the other threads publish nothing through theirs.
// - the push: st.async.shared::cluster.mbarrier::complete_tx::bytes writes 4 bytes into the destination block's
//   shared memory, then performs a complete-tx of 4 bytes on the destination's mbarrier (same block as the address);
//   the complete-tx has release semantics at cluster scope for that write, so a thread that observes the phase
//   completion with an acquire at cluster scope sees the bytes.
// - the wait: mbarrier.try_wait.parity.acquire.cluster is true once the phase of that parity completed (its one
//   arrival made and every expected transaction byte completed), with acquire semantics at cluster scope.
// - lifetime: a block reads only its own shared memory after the push, and cannot pass its wait (so cannot exit)
//   before every push into it completed; a pushing block may exit with its st.async in flight (the stored value is a
//   register operand, nothing of its own shared memory is read), so no barrier is needed at the end.
// The expect-tx is made with the init, before the arrive every pusher waits on, so the tx count never goes negative.
LLC_DEVICE void llcMbarInit(llc_u32 mbar, llc_u32 arrivals) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(mbar), "r"(arrivals) : "memory");
}
// One arrival on my block's mbarrier that also expects `bytes` transaction bytes in the current phase.
LLC_DEVICE void llcMbarArriveExpectTx(llc_u32 mbar, llc_u32 bytes) {
  asm volatile("{ .reg .b64 st; mbarrier.arrive.expect_tx.release.cta.shared::cta.b64 st, [%0], %1; }" ::"r"(mbar),
               "r"(bytes)
               : "memory");
}
LLC_DEVICE void llcFenceMbarrierInitCluster() { asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory"); }
// The cluster barrier's arrive without release (no MEMBAR); waited on with llcClusterWaitAcquire.
LLC_DEVICE void llcClusterArriveRelaxed() { asm volatile("barrier.cluster.arrive.relaxed;" ::: "memory"); }
// Whether the phase of parity `parity` of my block's mbarrier completed (no spin here: the caller loops; the
// instruction itself may suspend the thread for a while).
LLC_DEVICE bool llcMbarTryWaitParityCluster(llc_u32 mbar, llc_u32 parity) {
  llc_u32 done;
  asm volatile(
      "{ .reg .pred p; mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
      : "=r"(done)
      : "r"(mbar), "r"(parity)
      : "memory");
  return done != 0u;
}
// st.async of 4 bytes to the shared::cluster address `dst` (mapa), completing 4 transaction bytes on the mbarrier at
// the shared::cluster address `dstMbar` (of the same block).
LLC_DEVICE void llcStoreAsyncClusterF32(llc_u32 dst, float v, llc_u32 dstMbar) {
  asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.b32 [%0], %1, [%2];" ::"r"(dst),
               "r"(__float_as_uint(v)), "r"(dstMbar)
               : "memory");
}

#endif
