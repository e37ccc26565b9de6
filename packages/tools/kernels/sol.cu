// Speed-of-light microbenchmarks for `llcomm sol` (docs/design.md §6, after seed 000): L_SoL = 2 L_L2_RTT + L_remote_store.
//   llcomm_sol_l2_rtt    latency of one __threadfence() (fence.sc.gpu) or one dependent L2 load, `iters` in a row
//   llcomm_sol_pingpong  flag round trips between two ranks (blocks), through each side's own flag word
//   llcomm_sol_empty     an empty kernel: the floor of one launch inside a graph
//   llcomm_sol_copy      16-byte grid-stride copy: bandwidth
#include "llcomm/abi.cuh"
#include "llcomm/ptx.cuh"
#include "llcomm/wait.cuh"
#include "tools_abi.cuh"

extern "C" __global__ void llcomm_sol_l2_rtt(const __grid_constant__ LlcommSolL2Params p) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  llc_u64* result = reinterpret_cast<llc_u64*>(p.result);
  const llc_u32* probe = reinterpret_cast<const llc_u32*>(p.probe);
  llc_u32 chain = 0;
  const llc_u64 t0 = llcGlobalTimerNs();
  const llc_u64 c0 = clock64();
  if (p.mode == 0) {
    for (llc_u32 i = 0; i < p.iters; ++i) asm volatile("fence.sc.gpu;" ::: "memory"); // what __threadfence() emits
  } else {
    // Each load's address depends on the previous value (the probe holds 0), so the loads cannot overlap;
    // .relaxed.gpu makes each one a strong access served by L2, not L1.
    for (llc_u32 i = 0; i < p.iters; ++i)
      asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(chain) : "l"(probe + chain) : "memory");
  }
  const llc_u64 c1 = clock64();
  const llc_u64 t1 = llcGlobalTimerNs();
  result[0] = t1 - t0;
  result[1] = c1 - c0;
  result[2] = chain;
}

extern "C" __global__ void llcomm_sol_pingpong(const __grid_constant__ LlcommSolPingPongParams p) {
  if (threadIdx.x != 0) return;
  const llc_u32 side = p.launchRanks[blockIdx.x];
  llc_u32* mine = reinterpret_cast<llc_u32*>(p.flag[side]);
  llc_u32* theirs = reinterpret_cast<llc_u32*>(p.flag[side ^ 1u]);
  LlcWaiter waiter(p.errorWord, p.timeoutNs, side, 0, 0);
  const llc_u64 t0 = llcGlobalTimerNs();
  llc_u32 done = 0;
  for (llc_u32 i = 1; i <= p.iters; ++i) {
    // ordering 0: relaxed flag stores/loads, the cost of an LL packet hop (no data rides on the flag);
    // ordering 1: release/acquire, the cost of a flag that publishes data written before it.
    if (side == 0) {
      if (p.ordering == 0) llcStoreRelaxedSys(theirs, i); else llcStoreReleaseSys(theirs, i);
    }
    LlcSpin spin;
    while ((p.ordering == 0 ? llcLoadRelaxedSys(mine) : llcLoadAcquireSys(mine)) != i) {
      if (!waiter.keepWaiting(spin, side ^ 1u, LLCOMM_WAIT_PINGPONG, i)) break;
    }
    if (waiter.aborted) break;
    if (side == 1) {
      if (p.ordering == 0) llcStoreRelaxedSys(theirs, i); else llcStoreReleaseSys(theirs, i);
    }
    done = i;
  }
  const llc_u64 t1 = llcGlobalTimerNs();
  if (side == 0) {
    llc_u64* result = reinterpret_cast<llc_u64*>(p.result);
    result[0] = t1 - t0;
    result[1] = done;
  }
}

extern "C" __global__ void llcomm_sol_empty(const __grid_constant__ LlcommSolEmptyParams) {}

extern "C" __global__ void __launch_bounds__(LLCOMM_THREADS) llcomm_sol_copy(const __grid_constant__ LlcommSolCopyParams p) {
  const char* src = reinterpret_cast<const char*>(p.src);
  char* dst = reinterpret_cast<char*>(p.dst);
  const llc_u64 vectors = p.bytes / 16u;
  const llc_u64 stride = static_cast<llc_u64>(gridDim.x) * blockDim.x;
  llc_u64 i = static_cast<llc_u64>(blockIdx.x) * blockDim.x + threadIdx.x;
  // Four independent 16-byte loads in flight per thread before the first store.
  for (; i + 3 * stride < vectors; i += 4 * stride) {
    LlcWords4 a = llcLoadWeakV4(src + 16 * i), b = llcLoadWeakV4(src + 16 * (i + stride));
    LlcWords4 c = llcLoadWeakV4(src + 16 * (i + 2 * stride)), d = llcLoadWeakV4(src + 16 * (i + 3 * stride));
    llcStoreWeakV4(dst + 16 * i, a);
    llcStoreWeakV4(dst + 16 * (i + stride), b);
    llcStoreWeakV4(dst + 16 * (i + 2 * stride), c);
    llcStoreWeakV4(dst + 16 * (i + 3 * stride), d);
  }
  for (; i < vectors; i += stride) llcStoreWeakV4(dst + 16 * i, llcLoadWeakV4(src + 16 * i));
}
