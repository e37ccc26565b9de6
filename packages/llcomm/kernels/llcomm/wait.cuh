// Bounded waiting (STYLE habit 6): every spin checks a %globaltimer deadline and the communicator's error word.
// The first waiter whose deadline passes records {code, rank, peer, epoch, what, slot, channel} (first writer wins
// the CAS on `code`); every other waiter sees code != 0 at its next check and bails out too, so all blocks of all
// launches terminate. A thread that gave up keeps running to the end of the kernel without waiting again (its
// results are garbage, the host reports TIMEOUT), so every __syncthreads stays matched.
#pragma once
#include "llcomm/abi.cuh"
#include "llcomm/ptx.cuh"

#if LLC_HAS_DEVICE

// Check the clock and the error word every 1024th failed poll, not on the first: the error word may live on another
// GPU, and a remote load on the first miss would delay the poll that sees the data by an NVLink round trip. The
// deadline starts at the first check (1024 polls late: nothing next to a timeout of milliseconds or more).
#define LLCOMM_SPIN_CHECK_MASK 1023u

struct LlcSpin {
  llc_u64 deadlineNs = 0;
  llc_u32 spins = 0;
};

struct LlcWaiter {
  LlcommErrorWord* error;
  llc_u64 timeoutNs;
  llc_u32 rank;
  llc_u32 epoch;
  llc_u32 channel;
  bool aborted;

  LLC_DEVICE LlcWaiter(llc_u64 errorWord, llc_u64 timeoutNs_, llc_u32 rank_, llc_u32 epoch_, llc_u32 channel_)
      : error(reinterpret_cast<LlcommErrorWord*>(errorWord)), timeoutNs(timeoutNs_), rank(rank_), epoch(epoch_),
        channel(channel_), aborted(false) {}

  // Called after each unsuccessful poll. False: stop waiting (deadline passed here, or some waiter already failed).
  LLC_DEVICE bool keepWaiting(LlcSpin& s, llc_u32 peer, llc_u32 what, llc_u32 slot) {
    if (aborted) return false;
    llcSpinPause();
    if ((++s.spins & LLCOMM_SPIN_CHECK_MASK) != 0u) return true;
    const llc_u64 now = llcGlobalTimerNs();
    if (s.deadlineNs == 0) s.deadlineNs = now + timeoutNs;
    // Relaxed is enough: the error code is only a hint to stop; nothing read after it depends on its contents.
    if (llcLoadRelaxedSys(&error->code) != LLCOMM_ERR_NONE) {
      aborted = true;
      return false;
    }
    if (now > s.deadlineNs) {
      recordTimeout(peer, what, slot);
      aborted = true;
      return false;
    }
    return true;
  }

  LLC_DEVICE void recordTimeout(llc_u32 peer, llc_u32 what, llc_u32 slot) {
    // First writer wins. The detail fields are plain relaxed stores: the host reads them only after the kernel
    // has completed (stream order), which orders them after this thread's stores.
    if (llcCasRelaxedSys(&error->code, LLCOMM_ERR_NONE, LLCOMM_ERR_TIMEOUT) == LLCOMM_ERR_NONE) {
      llcStoreRelaxedSys(&error->rank, rank);
      llcStoreRelaxedSys(&error->peer, peer);
      llcStoreRelaxedSys(&error->epoch, epoch);
      llcStoreRelaxedSys(&error->what, what);
      llcStoreRelaxedSys(&error->slot, slot);
      llcStoreRelaxedSys(&error->channel, channel);
    }
  }
};

#endif // LLC_HAS_DEVICE
