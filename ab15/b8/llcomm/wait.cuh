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

// Slot of sender `sender`'s call-signature packet in the scratch of a rank (signature.cuh), for channel `channel`
// and signature slot `slot` (epoch & LLCOMM_SIG_EPOCH_MASK: LlcChannel::sigSlot()).
LLC_DEVICE void* llcSignatureSlot(llc_u64 scratchOfRank, llc_u32 channel, llc_u32 slot, llc_u32 sender) {
  return reinterpret_cast<char*>(scratchOfRank + LLCOMM_SCRATCH_SIGNATURE_OFFSET) +
         (static_cast<llc_u64>(channel * LLCOMM_SIG_SLOTS + slot) * LLCOMM_MAX_RANKS + sender) * 16u;
}

struct LlcWaiter {
  LlcommErrorWord* error;
  llc_u64 timeoutNs;
  llc_u32 rank;
  llc_u32 epoch;
  llc_u32 channel;
  bool aborted;
  // The call signature (signature.cuh, LlcCallSignature::arm): when armed (sigEpochWord = this channel's epoch word,
  // which locates this rank's scratch), every slow-path check below also looks at the signature packet of the peer
  // this thread waits for and at this rank's own packet (its publish stores one into its own slot too), and records
  // MISMATCH when both carry this epoch and differ. A peer running another algorithm, count or chunk may never send
  // what this wait expects: the wait ends with MISMATCH, not TIMEOUT. The epoch word's pointer, not the words:
  // the kernel holds that pointer anyway (LlcChannel), so arming costs no register across the kernel's loops, for a
  // look that runs only after LLCOMM_SPIN_CHECK_MASK + 1 failed polls (the 16-bit sentinel kernels are at the cap).
  const llc_u32* sigEpochWord = nullptr;

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
    // The signature look: off the critical path (only after LLCOMM_SPIN_CHECK_MASK + 1 failed polls). The packet is
    // single-copy atomic per 8-byte element and each element carries the epoch (signature.cuh), so a relaxed load
    // that sees this epoch in both elements has both words of the peer's signature for this call.
    if (sigEpochWord != nullptr && what != LLCOMM_WAIT_SIGNATURE && peer < LLCOMM_MAX_RANKS && peer != rank) {
      const llc_u32* word = sigEpochWord;
      llc_u32 ch = channel, ep = epoch, me = rank;
#if !defined(LLCOMM_HOST_EMULATION) && !defined(LLCOMM_SIG_ARM_PLAIN)
      // The look's inputs pass through an empty volatile asm here, in the slow path, so the compiler cannot hoist
      // the look's address arithmetic (loop-invariant) out of the poll loops to before the first poll, where it
      // held registers across every wait: oneshot-ll 106-112 registers with it hoistable, 96-106 with this (96 =
      // the build without the signature, ll8), ptxas -v sm_90 (research/notes/signature-cost.md, round 2). The asm
      // is empty: it changes no value, only what the compiler may assume and move. LLCOMM_SIG_ARM_PLAIN (A/B knob,
      // not part of the ABI) builds round 1's form.
      asm volatile("" : "+l"(word), "+r"(ch), "+r"(ep), "+r"(me));
#endif
      const llc_u64 scratch = reinterpret_cast<llc_u64>(word - ch) - LLCOMM_SCRATCH_EPOCHS_OFFSET;
      llc_u64 a, b, ma, mb;
      llcLoadRelaxedSysV2u64(llcSignatureSlot(scratch, ch, ep & LLCOMM_SIG_EPOCH_MASK, peer), a, b);
      llcLoadRelaxedSysV2u64(llcSignatureSlot(scratch, ch, ep & LLCOMM_SIG_EPOCH_MASK, me), ma, mb);
      // This epoch in all four elements: both packets are this call's (the own one is a relaxed store by another
      // thread of this block; until it is seen, this look decides nothing and the wait goes on).
      if (static_cast<llc_u32>(a >> 32) == ep && static_cast<llc_u32>(b >> 32) == ep &&
          static_cast<llc_u32>(ma >> 32) == ep && static_cast<llc_u32>(mb >> 32) == ep && (a != ma || b != mb)) {
        recordMismatch(peer, static_cast<llc_u32>(ma), static_cast<llc_u32>(mb), static_cast<llc_u32>(a),
                       static_cast<llc_u32>(b));
        return false;
      }
    }
    if (now > s.deadlineNs) {
      recordTimeout(peer, what, slot);
      aborted = true;
      return false;
    }
    return true;
  }

  // A peer's signature {theirs0, theirs1} differs from this rank's {mine0, mine1}. First writer wins, as
  // recordTimeout: the detail stores are relaxed, read by the host after the kernel (abi.cuh: the error word's
  // fields for MISMATCH).
  LLC_DEVICE void recordMismatch(llc_u32 peer, llc_u32 mine0, llc_u32 mine1, llc_u32 theirs0, llc_u32 theirs1) {
    if (llcCasRelaxedSys(&error->code, LLCOMM_ERR_NONE, LLCOMM_ERR_MISMATCH) == LLCOMM_ERR_NONE) {
      llcStoreRelaxedSys(&error->rank, rank);
      llcStoreRelaxedSys(&error->peer, peer);
      llcStoreRelaxedSys(&error->epoch, epoch);
      llcStoreRelaxedSys(&error->what, mine1);
      llcStoreRelaxedSys(&error->slot, theirs1);
      llcStoreRelaxedSys(&error->channel, mine0);
      llcStoreRelaxedSys(&error->reserved, theirs0);
    }
    aborted = true; // this thread waits no more; every other waiter stops at its next check of the error word
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
