// llcomm_stress_ll16: is a 16-byte packet ever observed torn? docs/design.md §2: auto may choose LL16 only after this shows
// no torn packet on the machine. Writer blocks rewrite every packet `iters` times; the packet written at iteration
// i carries flag i and data words derived from (i, packet index). Reader blocks poll the packets and check every
// packet whose flags say complete. layout 0 (llcomm's LL16): {d0, i, d1, i} as two 8-byte elements of one v2.u64
// store; "complete" = both flags equal. layout 1 (8 B data then 8 B flag, as in seed 000): {d0, d1, i, i} in one
// v4.u32 store; "complete" = both flag words equal — only 16-byte single-copy atomicity makes the data match.
#include "llcomm/abi.cuh"
#include "llcomm/ptx.cuh"

__device__ __forceinline__ llc_u32 llcStressWord(llc_u32 iter, llc_u32 packet, llc_u32 which) {
  llc_u32 h = iter * 0x9E3779B1u ^ (packet + 1u) * 0x85EBCA77u ^ which * 0xC2B2AE3Du;
  h ^= h >> 15;
  return h * 0x2C1B3C6Du;
}

extern "C" __global__ void __launch_bounds__(LLCOMM_THREADS) llcomm_stress_ll16(const __grid_constant__ LlcommStressParams p) {
  const llc_u32 rank = p.launchRanks[blockIdx.x / p.blocksPerRank];
  const llc_u32 block = blockIdx.x % p.blocksPerRank;
  const llc_u32 stride = p.blocksPerRank * blockDim.x;
  char* packets = reinterpret_cast<char*>(p.packets);
  llc_u64* counters = reinterpret_cast<llc_u64*>(p.counters);
  if (rank == p.writerRank) {
    for (llc_u32 it = 1; it <= p.iters; ++it) {
      for (llc_u32 k = block * blockDim.x + threadIdx.x; k < p.numPackets; k += stride) {
        const llc_u32 d0 = llcStressWord(it, k, 0), d1 = llcStressWord(it, k, 1);
        if (p.layout == 0) {
          llcStoreRelaxedSysV2u64(packets + 16ull * k, (static_cast<llc_u64>(it) << 32) | d0,
                                  (static_cast<llc_u64>(it) << 32) | d1);
        } else {
          LlcWords4 v;
          v.w[0] = d0;
          v.w[1] = d1;
          v.w[2] = it;
          v.w[3] = it;
          llcStoreRelaxedSysV4(packets + 16ull * k, v);
        }
      }
    }
    return;
  }
  if (rank != p.readerRank) return;
  llc_u64 torn = 0, halfNew = 0, checked = 0;
  const llc_u64 deadline = llcGlobalTimerNs() + p.timeoutNs;
  bool finished = false;
  // Bounded: stops when every packet of this thread has shown the last iteration, or at the deadline.
  for (llc_u32 spins = 0; !finished; ++spins) {
    finished = true;
    for (llc_u32 k = block * blockDim.x + threadIdx.x; k < p.numPackets; k += stride) {
      const LlcWords4 v = llcLoadRelaxedSysV4(packets + 16ull * k);
      const llc_u32 d0 = v.w[0], f0 = p.layout == 0 ? v.w[1] : v.w[2];
      const llc_u32 d1 = p.layout == 0 ? v.w[2] : v.w[1], f1 = v.w[3];
      if (f0 != f1) {
        ++halfNew;
        finished = false;
        continue;
      }
      if (f0 == 0) {
        finished = false;
        continue;
      }
      ++checked;
      if (d0 != llcStressWord(f0, k, 0) || d1 != llcStressWord(f0, k, 1)) ++torn;
      if (f0 != p.iters) finished = false;
    }
    if ((spins & 63u) == 0 && llcGlobalTimerNs() > deadline) break;
  }
  if (torn) atomicAdd(counters + 0, torn);
  if (halfNew) atomicAdd(counters + 1, halfNew);
  atomicAdd(counters + 2, checked);
  if (finished) atomicAdd(counters + 3, 1ull);
}
