// The call signature (issue 18 item 1; CPU: src/protocol/cpu/signature.ts; encoding: src/algorithms/
// signature.ts). Every all-reduce kernel, right after it knows its channel's epoch and before its first data
// store, stores its signature {word 0 = this launch's count, word 1 = algorithm | dtype << 4 | op << 6 |
// protocol << 8 | the host's chunk bits} into every peer's scratch, and checks every peer's signature of the same
// channel and epoch. The slot is at the same place for every algorithm (scratch, LLCOMM_SCRATCH_SIGNATURE_OFFSET),
// so a peer running another algorithm, dtype, count or chunk is caught too. A differing signature records
// LLCOMM_ERR_MISMATCH in the error word (first writer wins, as a timeout): every other waiter of every block and
// launch sees code != 0 at its next deadline check and stops waiting, and the host reports MISMATCH for the call
// (never its output: the output of a failed launch is unspecified, as after a TIMEOUT).
//
// Packet: LL16-style, {word 0 | epoch << 32, word 1 | epoch << 32} in one st.relaxed.sys.v2.u64. Each 8-byte element
// is single-copy atomic and carries the epoch, so a reader that sees the epoch in both elements has both words of
// this epoch's signature (no release/acquire needed; the same argument as an LL16 data packet, packets.cuh). The
// zero fill never matches (epochs start at 1), and a packet of epoch e - 2 in the same half never matches epoch e,
// so the slots are never re-armed.
//
// Overwrite safety (sender A writes half h of receiver B's slot at epoch e): A's epoch e - 1 kernel on this channel
// completed only after its checker saw B's epoch e - 1 signature, which B stores at the start of its epoch e - 1
// kernel, after its epoch e - 2 kernel (which read A's epoch e - 2 packet of half h) has completed: B's read is
// causally before A's store (kernel boundaries order each rank's kernels). The exchange alone gives this; it does not
// lean on the algorithm's own completion invariant.
//
// Who does it (cost): publishing (blockPublish) is one 16-byte store per peer, by threads 0.. of the block (k-th peer:
// thread k), before their first data store. Checking (blockCheck) is one bounded poll loop per peer by the threads from
// the top of the block (k-th peer: thread blockDim.x - 1 - k), placed after the block's sends and before its first
// receive: at small messages those threads hold no data, so the check runs beside the data path instead of in front
// of it, and the peer stores its signature before its data, so the packet is there by the time its data is. The
// block's last __syncthreads (blockAdvanceEpoch) waits for the checkers, so no kernel ends without its check, and the
// host reads the error word before it reports the call.
// The one-shot kernels' peer-parallel path (blockRecvReduceSpread) is at the 128-register cap in the 16-bit sentinel
// kernels, and any poll loop ahead of it made them spill: there the threads that poll nothing take one look (peek)
// before the pollers' first __syncthreads, and the bounded check follows the polls, before any output store. The
// one case this leaves as a TIMEOUT instead of a MISMATCH: both sides on that path (>= 8 ranks, a few slots) with
// waits the other never satisfies (oneshot-ll against oneshot-sentinel) and the peek taken before the peer published.
#pragma once
#include "llcomm/abi.cuh"
#include "llcomm/channel.cuh"
#include "llcomm/ptx.cuh"
#include "llcomm/wait.cuh"

#if LLC_HAS_DEVICE

LLC_DEVICE void* llcSignatureSlot(llc_u64 scratchOfRank, llc_u32 channel, llc_u32 half, llc_u32 sender) {
  return reinterpret_cast<char*>(scratchOfRank + LLCOMM_SCRATCH_SIGNATURE_OFFSET) +
         (static_cast<llc_u64>(channel * 2u + half) * LLCOMM_MAX_RANKS + sender) * 16u;
}

// First writer wins, as recordTimeout (wait.cuh): the detail stores are relaxed, read by the host after the kernel.
LLC_DEVICE void llcRecordMismatch(LlcWaiter& waiter, llc_u32 peer, llc_u32 mine0, llc_u32 mine1, llc_u32 theirs0,
                                  llc_u32 theirs1) {
  LlcommErrorWord* e = waiter.error;
  if (llcCasRelaxedSys(&e->code, LLCOMM_ERR_NONE, LLCOMM_ERR_MISMATCH) == LLCOMM_ERR_NONE) {
    llcStoreRelaxedSys(&e->rank, waiter.rank);
    llcStoreRelaxedSys(&e->peer, peer);
    llcStoreRelaxedSys(&e->epoch, waiter.epoch);
    llcStoreRelaxedSys(&e->what, mine1);
    llcStoreRelaxedSys(&e->slot, theirs1);
    llcStoreRelaxedSys(&e->channel, mine0);
    llcStoreRelaxedSys(&e->reserved, theirs0);
  }
  waiter.aborted = true; // this check waits no more; every data waiter stops at its next check of the error word
}

// This block's signature words (word 0 = this launch's count; word 1 = compile-time kind | host chunk bits).
template <llc_u32 kAlg, llc_u32 kProtocol, int DT>
LLC_DEVICE llc_u32 llcSignatureWord1(const LlcommAllReduceParams& p) {
  return kAlg | (static_cast<llc_u32>(DT) << 4) | (LLCOMM_SIG_OP_SUM << 6) | (kProtocol << 8) |
         (p.signatureChunk & ~LLCOMM_SIG_KIND_MASK);
}

// Block-wide (every thread calls it): store this block's signature into every peer's slot, threads 0.. one peer
// each. Call after the channel's epoch is known and before the block's first data store.
template <llc_u32 kAlg, llc_u32 kProtocol, int DT>
LLC_DEVICE void llcBlockPublishSignature(const LlcommAllReduceParams& p, llc_u32 me, const LlcChannel& ch) {
  const llc_u32 n = p.nranks;
  const llc_u64 flag = static_cast<llc_u64>(ch.epoch) << 32;
  for (llc_u32 k = threadIdx.x; k + 1 < n; k += blockDim.x) {
    const llc_u32 peer = me + 1 + k < n ? me + 1 + k : me + 1 + k - n;
    llcStoreRelaxedSysV2u64(llcSignatureSlot(p.scratch[peer], ch.index, ch.half(), me),
                            flag | static_cast<llc_u32>(p.count), flag | llcSignatureWord1<kAlg, kProtocol, DT>(p));
  }
}

// Block-wide: threads from the top of the block (one peer each) wait (bounded) for every peer's signature of this
// channel and epoch and record MISMATCH when it differs. Call before the block's first data receive (after its
// sends, where the kernel's data registers are dead: the 16-bit sentinel kernels sit at the 128-register cap, and a
// check placed where the preloaded input is live made them spill). No barrier inside.
template <llc_u32 kAlg, llc_u32 kProtocol, int DT>
LLC_DEVICE void llcBlockCheckSignature(const LlcommAllReduceParams& p, llc_u32 me, const LlcChannel& ch) {
  // A waiter of its own, not the kernel's: the kernel's waiter keeps aborted == false as the compiler sees it (folded
  // into its data waits), and this one's fields come from the parameters (no registers held for it). A check that
  // gives up or records the mismatch reaches the data waiters through the error word.
  LlcWaiter waiter(p.errorWord, p.timeoutNs, me, ch.epoch, ch.index);
  const llc_u32 n = p.nranks;
#pragma unroll 1
  for (llc_u32 k = blockDim.x - 1 - threadIdx.x; k + 1 < n; k += blockDim.x) {
    const llc_u32 peer = me + 1 + k < n ? me + 1 + k : me + 1 + k - n;
    const void* slot = llcSignatureSlot(p.scratch[me], ch.index, ch.half(), peer);
    llc_u64 a, b;
    LlcSpin spin;
    // Ends with this epoch's packet, or with waiter.aborted set (keepWaiting returns false only then).
    do {
      llcLoadRelaxedSysV2u64(slot, a, b);
    } while ((static_cast<llc_u32>(a >> 32) != ch.epoch || static_cast<llc_u32>(b >> 32) != ch.epoch) &&
             waiter.keepWaiting(spin, peer, LLCOMM_WAIT_SIGNATURE, 0));
    if (waiter.aborted) continue;
    const llc_u32 w0 = static_cast<llc_u32>(p.count), w1 = llcSignatureWord1<kAlg, kProtocol, DT>(p);
    if ((static_cast<llc_u32>(a) ^ w0) | (static_cast<llc_u32>(b) ^ w1))
      llcRecordMismatch(waiter, peer, w0, w1, static_cast<llc_u32>(a), static_cast<llc_u32>(b));
  }
}

// One look, no wait (for the threads of a block-wide receive that poll nothing): records MISMATCH when the peer's
// packet of this epoch is there and differs. The full check (llcBlockCheckSignature) still follows.
template <llc_u32 kAlg, llc_u32 kProtocol, int DT>
LLC_DEVICE void llcPeekSignature(const LlcommAllReduceParams& p, llc_u32 me, const LlcChannel& ch) {
  const llc_u32 n = p.nranks;
  const llc_u32 k = blockDim.x - 1 - threadIdx.x;
  if (k + 1 >= n) return;
  const llc_u32 peer = me + 1 + k < n ? me + 1 + k : me + 1 + k - n;
  llc_u64 a, b;
  llcLoadRelaxedSysV2u64(llcSignatureSlot(p.scratch[me], ch.index, ch.half(), peer), a, b);
  if (static_cast<llc_u32>(a >> 32) != ch.epoch || static_cast<llc_u32>(b >> 32) != ch.epoch) return;
  const llc_u32 w0 = static_cast<llc_u32>(p.count), w1 = llcSignatureWord1<kAlg, kProtocol, DT>(p);
  if ((static_cast<llc_u32>(a) ^ w0) | (static_cast<llc_u32>(b) ^ w1)) {
    LlcWaiter waiter(p.errorWord, p.timeoutNs, me, ch.epoch, ch.index);
    llcRecordMismatch(waiter, peer, w0, w1, static_cast<llc_u32>(a), static_cast<llc_u32>(b));
  }
}

// The three steps of one kernel's signature, named once per kernel (`using Sig = LlcCallSignature<...>`).
template <llc_u32 kAlg, llc_u32 kProtocol, int DT>
struct LlcCallSignature {
  LLC_DEVICE static void blockPublish(const LlcommAllReduceParams& p, llc_u32 me, const LlcChannel& ch) {
    llcBlockPublishSignature<kAlg, kProtocol, DT>(p, me, ch);
  }
  LLC_DEVICE static void blockCheck(const LlcommAllReduceParams& p, llc_u32 me, const LlcChannel& ch) {
    llcBlockCheckSignature<kAlg, kProtocol, DT>(p, me, ch);
  }
  LLC_DEVICE static void peek(const LlcommAllReduceParams& p, llc_u32 me, const LlcChannel& ch) {
    llcPeekSignature<kAlg, kProtocol, DT>(p, me, ch);
  }
};

#endif // LLC_HAS_DEVICE
