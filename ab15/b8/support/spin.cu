// llcomm_spin_ns: arrival skew for tests and `llcomm bench --skew-us`. Launched on the stream right before a
// collective; every block of rank r waits min(delayNs[r], maxDelayNs) of %globaltimer before exiting, so rank r's
// collective starts that much later. Bounded by construction (the delay is the bound).
#include "llcomm/abi.cuh"
#include "llcomm/channel.cuh"
#include "llcomm/ptx.cuh"

extern "C" __global__ void llcomm_spin_ns(const __grid_constant__ LlcommSpinParams p) {
  if (threadIdx.x != 0) return;
  const llc_u32 rank = p.launchRanks[blockIdx.x / p.blocksPerRank];
  const llc_u64 requested = reinterpret_cast<const llc_u64*>(p.delayNs)[rank];
  const llc_u64 delay = requested < p.maxDelayNs ? requested : p.maxDelayNs;
  const llc_u64 start = llcGlobalTimerNs();
  while (llcGlobalTimerNs() - start < delay) {
  }
}
