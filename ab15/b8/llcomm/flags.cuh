// Flag signalling for the baselines: the global barrier of oneshot-barrier and the per-step flags of ring. Flags
// live in each rank's scratch and take the channel epoch as value, so they never need resetting (each flag is
// written once per call by one writer, epochs only grow).
#pragma once
#include "llcomm/abi.cuh"
#include "llcomm/ptx.cuh"
#include "llcomm/wait.cuh"

#if LLC_HAS_DEVICE

LLC_DEVICE llc_u32* llcBarrierFlag(llc_u64 scratchOfRank, llc_u32 channel, llc_u32 which, llc_u32 sender) {
  return reinterpret_cast<llc_u32*>(scratchOfRank + LLCOMM_SCRATCH_BARRIER_OFFSET) +
         ((channel * 2u + which) * LLCOMM_MAX_RANKS + sender);
}
LLC_DEVICE llc_u32* llcRingFlag(llc_u64 scratchOfRank, llc_u32 channel, llc_u32 step) {
  return reinterpret_cast<llc_u32*>(scratchOfRank + LLCOMM_SCRATCH_RING_OFFSET) +
         (channel * LLCOMM_SCRATCH_RING_STRIDE + step);
}

// Block-wide global barrier among the blocks of channel `channel` of all ranks (`which` = 0 or 1: two barriers per
// call use different flags). Call from every thread of the block.
LLC_DEVICE void llcBlockGlobalBarrier(const llc_u64* scratch, llc_u32 me, llc_u32 nranks, llc_u32 channel,
                                      llc_u32 which, llc_u32 epoch, LlcWaiter& waiter) {
  // bar.sync: every thread's earlier writes are ordered before thread t's release store below (the release is
  // cumulative over what bar.sync made visible to t), so a peer that acquires the flag sees all of this block's data.
  __syncthreads();
  const llc_u32 t = threadIdx.x;
  if (t < nranks && t != me) {
    llcStoreReleaseSys(llcBarrierFlag(scratch[t], channel, which, me), epoch);
    // Acquire: everything peer t wrote before its release is visible to this thread, and through the bar.sync
    // below to every thread of the block. Equality is exact: peer t cannot write epoch + 1 here before this rank
    // has passed the second barrier of this call, which needs this wait to finish first.
    const llc_u32* mine = llcBarrierFlag(scratch[me], channel, which, t);
    LlcSpin spin;
    while (llcLoadAcquireSys(mine) != epoch) {
      if (!waiter.keepWaiting(spin, t, LLCOMM_WAIT_BARRIER, which)) break;
    }
  }
  __syncthreads();
}

// Block-wide: publish step `step` of the ring to `next` (after this block's data stores for the step).
LLC_DEVICE void llcBlockRingSignal(const llc_u64* scratch, llc_u32 next, llc_u32 channel, llc_u32 step, llc_u32 epoch) {
  // bar.sync then a release store by thread 0: cumulative over every thread's data stores of this step.
  __syncthreads();
  if (threadIdx.x == 0) llcStoreReleaseSys(llcRingFlag(scratch[next], channel, step), epoch);
}

// Block-wide: wait until `prev` has published step `step` into my flags.
LLC_DEVICE void llcBlockRingWait(const llc_u64* scratch, llc_u32 me, llc_u32 prev, llc_u32 channel, llc_u32 step,
                                 llc_u32 epoch, LlcWaiter& waiter) {
  if (threadIdx.x == 0) {
    // Acquire by thread 0, then bar.sync: the step's data is visible to every thread of the block.
    const llc_u32* f = llcRingFlag(scratch[me], channel, step);
    LlcSpin spin;
    while (llcLoadAcquireSys(f) != epoch) {
      if (!waiter.keepWaiting(spin, prev, LLCOMM_WAIT_RING_FLAG, step)) break;
    }
  }
  __syncthreads();
}

#endif // LLC_HAS_DEVICE
