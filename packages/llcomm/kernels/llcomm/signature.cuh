// Since round 11 of research/notes/signature-cost.md the default build (LLCOMM_SIG_BLOCK) checks the signature in a
// block of its own per launch (llcSignatureBlock, at the end of this file); what follows, up to it, is the in-block
// check that LLCOMM_SIG_IN_BLOCKS builds (the product before round 11, kept for the A/B and the deferred build).
// The call signature (issue 18 item 1; CPU: src/protocol/cpu/signature.ts; encoding: src/algorithms/
// signature.ts). Every all-reduce kernel, once it knows its channel's epoch, stores its signature {word 0 = this
// launch's count, word 1 = algorithm | dtype << 4 | op << 6 | protocol << 8 | the host's chunk bits} into every
// peer's scratch, and checks every peer's signature of the same channel and epoch before it ends (placements
// below). The slot is at the same place for every algorithm (scratch, LLCOMM_SCRATCH_SIGNATURE_OFFSET), so a peer
// running another algorithm, dtype, count or chunk is caught too. A differing signature records
// LLCOMM_ERR_MISMATCH in the error word (first writer wins, as a timeout): every other waiter of every block and
// launch sees code != 0 at its next deadline check and stops waiting, and the host reports MISMATCH for the call
// (never its output: the output of a failed launch is unspecified, as after a TIMEOUT).
//
// Packet: LL16-style, {word 0 | epoch << 32, word 1 | epoch << 32} in one st.relaxed.sys.v2.u64 (st.release in
// oneshot-barrier, where it is also the barrier's flag). Each 8-byte element is single-copy atomic and carries the
// epoch, so a reader that sees the epoch in both elements has both words of this epoch's signature (no
// release/acquire needed for that; the same argument as an LL16 data packet, packets.cuh). The zero fill never
// matches (epochs start at 1), and a packet of epoch e - 2 in the same half never matches epoch e, so the slots are
// never re-armed. Each rank also stores its packet into its own slot (sender = itself), which the armed waits
// compare with (wait.cuh).
//
// Overwrite safety (sender A writes half h of receiver B's slot at epoch e): A's epoch e - 1 kernel on this channel
// completed only after its checker saw B's epoch e - 1 signature, which B stores in its epoch e - 1 kernel, after
// its epoch e - 2 kernel (which read A's epoch e - 2 packet of half h) has completed: B's read is causally before
// A's store (kernel boundaries order each rank's kernels). The exchange alone gives this; it does not lean on the
// algorithm's own completion invariant, nor on where in the kernel the packet is stored or checked.
//
// Who does it, and where (cost: research/notes/signature-cost.md, with the reading of the code and the predictions).
// The k-th peer's packet is stored and checked by thread blockDim.x - 1 - k (the checker threads: the top of the block,
// which holds no data at small messages), never by the threads that send the first data, so the data path of a
// small message is the same instructions as without the signature (the tail check is the exception: the data threads
// run it after their stores). Five placements, each kernel picks:
//  * tail (round 3): threads 0..n-2 check one peer each after their own output stores, before the kernel's last
//    __syncthreads; used only where every data wait before it is armed (llcTailCheckSignature).
//  * blockCheck: a bounded poll, blocking: oneshot-sentinel's serial path, ring and twoshot-atomic before their
//    first receive; the one-shot kernels' peer-parallel path after the polls, for what tryCheck left;
//    twoshot-sentinel's spread path after the reduce-scatter's polls, before the all-gather.
//  * prefetch + finish (round 2's serial paths; LLCOMM_SIG_R2): the checker issues one load of the packet
//    (prefetch, no wait) before its receives and inspects it after them (finish: a bounded poll only if the packet
//    was not there yet). The load's round trip overlaps the receives; at small messages the checker has no
//    receives and finish is the poll beside the data path. No kernel ends without it: the block's last
//    __syncthreads (blockAdvanceEpoch) waits for the checkers, and the host reads the error word before it reports
//    the call.
//  * blockBarrier (oneshot-barrier): the packet is the first barrier's arrival flag (bar.sync, the packet's release
//    store; the wait's acquire loads, bar.sync: llcBlockGlobalBarrier's argument with a 16-byte flag), so the check
//    is the barrier's own wait: no exchange of its own.
//  * tryCheck (the one-shot kernels' peer-parallel path, threads that poll nothing): up to kLooks back-to-back looks
//    with no loop state but a count (no deadline inside; unrolled when kLooks <= 32), beside the pollers; what it
//    leaves, the full check does after the polls. A keepWaiting loop there made the 16-bit sentinel kernels (at the
//    128-register cap) spill, and so did a counted loop: they take 32 unrolled looks.
// Detection while waiting (arm): the data waits' slow path (wait.cuh, keepWaiting, every 1024th failed poll) looks
// at the signature of the peer it waits for, so a peer whose algorithm, count or chunk never sends what this rank
// waits for ends the wait with MISMATCH, not TIMEOUT, although the exact check comes after the receives. The look's
// inputs pass an empty asm inside the slow path (wait.cuh), so its address arithmetic stays there (hoisted before
// the poll loops, it held 6-12 registers across them in oneshot-ll: research/notes/signature-cost.md, round 2).
// Per kernel (what fits the register caps, ptxas -v; compile.test.ts):
//   oneshot-ll       serial: tail, waits armed; peer-parallel: tryCheck (1024 looks), full check after.
//   oneshot-sentinel serial: blockCheck before the receives (measured free at 64 KB), waits not armed (armed, the
//                    16-bit kernels spilled); peer-parallel: tryCheck (1024 looks in f32, 32 unrolled in 16-bit).
//   twoshot-sentinel serial: a checker with nothing to reduce: blockCheck before the receives; one with slots:
//                    prefetch + finish; reduce-scatter waits armed in f32 only (LLCOMM_SIG_TAIL: tail, every wait
//                    armed). Spread path (small parts from 8 ranks; either build): every wait armed (reduce-scatter
//                    and all-gather, every dtype), blockCheck after the reduce-scatter's polls.
//   oneshot-barrier  blockBarrier (its waits need every peer's packet).   ring, twoshot-atomic: blockCheck before
//                    the first receive.
// What the device leaves as a TIMEOUT instead of a MISMATCH: a rank whose checker cannot run beside its unarmed
// waits (the one-shot peer-parallel path when every thread polls, or after the 32 looks of 16-bit
// oneshot-sentinel; with LLCOMM_SIG_R2, the default, also 16-bit twoshot-sentinel's serial reduce-scatter when the
// checker has slots to reduce) waiting for a peer that never sends, when no other rank's check has recorded the MISMATCH
// first (the old placement had the first of these too). Where the ranks share an error word (one communicator's
// virtual ranks, the emulator) the other side's check ends these waits too: the mismatch tests
// (test/kernels/emulator.test.ts, test/gpu/signature.test.ts) see MISMATCH. Per process (an error word per rank) the
// host closes the gap after the kernel, at no cost here: before it reports a device TIMEOUT it reads the packets its
// peers stored into its own scratch and reports MISMATCH when the named peer (or another) published another
// signature for the failed launch's channel and epoch beside this rank's own packet (src/backends/cuda/
// timeout-signature.ts, with the ordering argument; tests: test/backends/cuda/timeout-signature.test.ts, the
// emulator's split-word gap cases, test/gpu/multiprocess-signature.test.ts). Still a TIMEOUT there: a peer whose
// packet for that epoch is not in this rank's scratch when the host reads it (it never called, or launched after
// this rank's whole deadline; the peer itself reports MISMATCH), a peer that has already stored epoch + 2 into that
// slot (two more launches of its own on the channel before the host read), and a rank whose own packet of
// that epoch is gone (two more launches of its own on the channel before the host read the error word: a call of
// three or more chunks, or several calls enqueued before checkDeviceError).
// LLCOMM_NO_SIGNATURE (a compile-time knob for the A/B measurement, research/scripts/probe/make-signature-trees.sh;
// not part of the ABI) builds the same kernels without the signature: every step empty, the barrier a plain one.
// LLCOMM_SIG_DEFERRED (the A/B tree ab/defer; LLCOMM_SIG_DEFERRED=1 in the host's environment builds it and turns on
// the host's half, src/backends/cuda/latest-signature.ts): oneshot-ll, oneshot-sentinel and twoshot-sentinel check
// the channel's PREVIOUS epoch instead of their own, with no wait on the critical path; slots by epoch mod 4; the
// last launch on each channel is checked by the host in checkDeviceError. Semantics: a mismatched call's MISMATCH is
// recorded during the next kernel on its channel (epoch = the mismatched call's), or found by the host at the next
// checkDeviceError; what the user sees is unchanged (the call's check reports MISMATCH, its output unspecified).
// "The deferred check" below has the placement, the overwrite bound and the cases not compared.
#pragma once
#include "llcomm/abi.cuh"
#include "llcomm/channel.cuh"
#include "llcomm/flags.cuh"
#include "llcomm/ptx.cuh"
#include "llcomm/wait.cuh"

#if LLC_HAS_DEVICE

// This block's signature words (word 0 = this launch's count; word 1 = compile-time kind | host chunk bits).
template <llc_u32 kAlg, llc_u32 kProtocol, int DT>
LLC_DEVICE llc_u32 llcSignatureWord1(const LlcommAllReduceParams& p) {
  return kAlg | (static_cast<llc_u32>(DT) << 4) | (LLCOMM_SIG_OP_SUM << 6) | (kProtocol << 8) |
         (p.signatureChunk & ~LLCOMM_SIG_KIND_MASK);
}

// The checker thread's peer: thread blockDim.x - 1 - k serves the k-th peer after me (k + 1 < nranks), k += blockDim.x.
LLC_DEVICE llc_u32 llcSignaturePeer(llc_u32 me, llc_u32 n, llc_u32 k) {
  return me + 1 + k < n ? me + 1 + k : me + 1 + k - n;
}

struct LlcSigPacket {
  llc_u64 a, b;
};

LLC_DEVICE bool llcSignatureArrived(const LlcSigPacket& x, llc_u32 epoch) {
  return static_cast<llc_u32>(x.a >> 32) == epoch && static_cast<llc_u32>(x.b >> 32) == epoch;
}

// Compare an arrived packet with this rank's words; MISMATCH in the error word when it differs.
template <llc_u32 kAlg, llc_u32 kProtocol, int DT>
LLC_DEVICE void llcSignatureCompare(const LlcommAllReduceParams& p, LlcWaiter& waiter, llc_u32 peer,
                                    const LlcSigPacket& x) {
  const llc_u32 mine0 = static_cast<llc_u32>(p.count), mine1 = llcSignatureWord1<kAlg, kProtocol, DT>(p);
  if ((static_cast<llc_u32>(x.a) ^ mine0) | (static_cast<llc_u32>(x.b) ^ mine1))
    waiter.recordMismatch(peer, mine0, mine1, static_cast<llc_u32>(x.a), static_cast<llc_u32>(x.b));
}

// A waiter for the signature steps: its own, not the kernel's (the kernel's keeps aborted == false as the compiler
// sees it, folded into its data waits). A check that gives up or records the mismatch reaches the data waiters
// through the error word.
LLC_DEVICE LlcWaiter llcSignatureWaiter(const LlcommAllReduceParams& p, llc_u32 me, const LlcChannel& ch) {
  return LlcWaiter(p.errorWord, p.timeoutNs, me, ch.epoch, ch.index);
}

// Bounded poll of `peer`'s packet until it carries this epoch, then the comparison (no-op once the waiter aborted).
template <llc_u32 kAlg, llc_u32 kProtocol, int DT>
LLC_DEVICE void llcSignatureAwait(const LlcommAllReduceParams& p, LlcWaiter& waiter, const void* slot, llc_u32 peer,
                                  LlcSigPacket& x) {
#if defined(LLCOMM_SIG_NOWAIT)
  // A/B knob (round 5, make-signature-trees.sh ab/nowait; unsafe, never a product build): one look, no poll, so a
  // packet that has not arrived goes unchecked. Measures what the checker's wait costs beside the data path.
  (void)slot;
  if (llcSignatureArrived(x, waiter.epoch)) llcSignatureCompare<kAlg, kProtocol, DT>(p, waiter, peer, x);
#else
  LlcSpin spin;
  // Ends with this epoch's packet, or with waiter.aborted set (keepWaiting returns false only then).
  while (!llcSignatureArrived(x, waiter.epoch) && waiter.keepWaiting(spin, peer, LLCOMM_WAIT_SIGNATURE, 0))
    llcLoadRelaxedSysV2u64(slot, x.a, x.b);
  if (!waiter.aborted) llcSignatureCompare<kAlg, kProtocol, DT>(p, waiter, peer, x);
#endif
}

// Block-wide (every thread calls it): the checker threads store this block's signature into their peer's slot,
// and thread blockDim.x - nranks (k = nranks - 1: the peer is me) into this rank's own slot, which the armed data
// waiters' slow-path look compares with (wait.cuh). Call after the channel's epoch is known and before the
// kernel's last __syncthreads. The packet carries the epoch in both 8-byte elements (single-copy atomic each), so it
// needs no release: a reader that sees the epoch in both has both words.
template <llc_u32 kAlg, llc_u32 kProtocol, int DT>
LLC_DEVICE void llcBlockPublishSignature(const LlcommAllReduceParams& p, llc_u32 me, const LlcChannel& ch) {
  const llc_u32 n = p.nranks;
  const llc_u64 flag = static_cast<llc_u64>(ch.epoch) << 32;
#if defined(LLCOMM_SIG_PUBLISH_LOW)
  for (llc_u32 k = threadIdx.x; k < n; k += blockDim.x) // A/B knob: round 0's publishers (the data threads)
#else
  for (llc_u32 k = blockDim.x - 1 - threadIdx.x; k < n; k += blockDim.x)
#endif
    llcStoreRelaxedSysV2u64(llcSignatureSlot(p.scratch[llcSignaturePeer(me, n, k)], ch.index, ch.sigSlot(), me),
                            flag | static_cast<llc_u32>(p.count), flag | llcSignatureWord1<kAlg, kProtocol, DT>(p));
}

// Block-wide: the checker threads wait (bounded) for their peer's signature of this channel and epoch and record
// MISMATCH when it differs. No barrier inside.
template <llc_u32 kAlg, llc_u32 kProtocol, int DT>
LLC_DEVICE void llcBlockCheckSignature(const LlcommAllReduceParams& p, llc_u32 me, const LlcChannel& ch) {
  LlcWaiter waiter = llcSignatureWaiter(p, me, ch);
  const llc_u32 n = p.nranks;
#pragma unroll 1
  for (llc_u32 k = blockDim.x - 1 - threadIdx.x; k + 1 < n; k += blockDim.x) {
    const llc_u32 peer = llcSignaturePeer(me, n, k);
    const void* slot = llcSignatureSlot(p.scratch[me], ch.index, ch.sigSlot(), peer);
    LlcSigPacket x;
    llcLoadRelaxedSysV2u64(slot, x.a, x.b);
    llcSignatureAwait<kAlg, kProtocol, DT>(p, waiter, slot, peer, x);
  }
}

// Tail check (every thread calls it; the default placement of the serial paths since round 3, LLCOMM_SIG_R2 builds
// round 2's): thread k checks the k-th peer after it (k + 1 < nranks, k += blockDim.x), i.e. the threads that hold
// the first data, each after its own receives and output stores and just before the kernel's last __syncthreads.
// By then the peer's packet, stored at the start of the peer's kernel, has normally arrived: one load and a compare,
// issued behind the thread's output stores (which the kernel's end waits for anyway), instead of a checker warp
// polling beside the data wait and holding the last __syncthreads until its own poll sees the packet. The bounded
// poll stays as the fallback (a packet not there yet, a peer that never calls: TIMEOUT naming the signature wait).
// The check no longer precedes anything: a mismatched call's output may hold what the data path computed from the
// peer's differently laid out data (allowed: the output of a failed call is unspecified and never returned,
// docs/protocols.md). A peer that never sends what a data wait expects is still caught while waiting where the waits
// are armed (wait.cuh); the kernels use the tail only where they are (oneshot-ll serial, twoshot-sentinel).
template <llc_u32 kAlg, llc_u32 kProtocol, int DT>
LLC_DEVICE void llcTailCheckSignature(const LlcommAllReduceParams& p, llc_u32 me, const LlcChannel& ch) {
  const llc_u32 n = p.nranks;
  if (threadIdx.x + 1 >= n) return;
  llc_u32 mine = me, index = ch.index, half = ch.sigSlot();
#if !defined(LLCOMM_HOST_EMULATION)
  // As the armed look (wait.cuh): the inputs pass an empty volatile asm here, so the slot arithmetic (loop-invariant
  // for the kernel's loops above) is not hoisted before them, where it held registers across the data path.
  asm volatile("" : "+r"(mine), "+r"(index), "+r"(half));
#endif
  LlcWaiter waiter = llcSignatureWaiter(p, mine, ch);
#pragma unroll 1
  for (llc_u32 k = threadIdx.x; k + 1 < n; k += blockDim.x) {
    const llc_u32 peer = llcSignaturePeer(mine, n, k);
    const void* slot = llcSignatureSlot(p.scratch[mine], index, half, peer);
    LlcSigPacket x;
    // Relaxed is enough: each 8-byte element carries the epoch (the packet's argument above); the data this thread
    // already received says nothing about the packet (another thread of the peer stored it), hence the poll after.
    llcLoadRelaxedSysV2u64(slot, x.a, x.b);
    llcSignatureAwait<kAlg, kProtocol, DT>(p, waiter, slot, peer, x);
  }
}

// Prefetch (every thread calls it; no wait): the checker thread of the first peer-round (k < blockDim.x) issues the
// load of its peer's packet into `x`; the load's latency overlaps whatever the thread does before finish.
template <llc_u32 kAlg, llc_u32 kProtocol, int DT>
LLC_DEVICE void llcPrefetchSignature(const LlcommAllReduceParams& p, llc_u32 me, const LlcChannel& ch,
                                     LlcSigPacket& x) {
  const llc_u32 k = blockDim.x - 1 - threadIdx.x;
  x.a = x.b = 0; // the zero fill: never this epoch (epochs start at 1)
  if (k + 1 < p.nranks)
    llcLoadRelaxedSysV2u64(llcSignatureSlot(p.scratch[me], ch.index, ch.sigSlot(), llcSignaturePeer(me, p.nranks, k)),
                           x.a, x.b);
}

// Finish (every thread calls it): the checker threads inspect the prefetched packet, poll (bounded) only if it was
// not there yet, and compare; the peer-rounds past the first (more than blockDim.x + 1 ranks) are checked in full.
template <llc_u32 kAlg, llc_u32 kProtocol, int DT>
LLC_DEVICE void llcFinishSignature(const LlcommAllReduceParams& p, llc_u32 me, const LlcChannel& ch, LlcSigPacket& x) {
  const llc_u32 n = p.nranks;
  llc_u32 k = blockDim.x - 1 - threadIdx.x;
  if (k + 1 >= n) return;
  LlcWaiter waiter = llcSignatureWaiter(p, me, ch);
#pragma unroll 1
  for (; k + 1 < n; k += blockDim.x) {
    const llc_u32 peer = llcSignaturePeer(me, n, k);
    const void* slot = llcSignatureSlot(p.scratch[me], ch.index, ch.sigSlot(), peer);
    if (k >= blockDim.x) llcLoadRelaxedSysV2u64(slot, x.a, x.b); // rounds past the first: not prefetched
    llcSignatureAwait<kAlg, kProtocol, DT>(p, waiter, slot, peer, x);
  }
}

// Try (every thread calls it; for the threads of a block-wide receive that poll nothing): the checker thread looks
// at its peer's packet up to kLooks times, back to back, and compares it once it carries this epoch. Returns true
// when this thread has nothing left to check (no peer, or its one peer's packet compared). No deadline and no
// error-word check inside (a count bound: kLooks dependent loads, one round trip each), so it keeps no state but the
// count: the 16-bit sentinel kernels' peer-parallel path is at the 128-register cap, and a keepWaiting loop there
// spilled. What it leaves (returns false) the full bounded check does after the polls.
#ifndef LLCOMM_SIG_TRY_LOOKS
#define LLCOMM_SIG_TRY_LOOKS 1024u
#endif
template <llc_u32 kAlg, llc_u32 kProtocol, int DT, llc_u32 kLooks>
LLC_DEVICE bool llcTryCheckSignature(const LlcommAllReduceParams& p, llc_u32 me, const LlcChannel& ch) {
  const llc_u32 n = p.nranks;
  const llc_u32 k = blockDim.x - 1 - threadIdx.x;
  if (k + 1 >= n) return true;
  if (k + blockDim.x + 1 < n) return false; // a second peer-round: left to the full check
  const llc_u32 peer = llcSignaturePeer(me, n, k);
  const void* slot = llcSignatureSlot(p.scratch[me], ch.index, ch.sigSlot(), peer);
  // One look: true when the packet carries this epoch (compared, MISMATCH recorded when it differs).
  auto look = [&]() -> bool {
    LlcSigPacket x;
    llcLoadRelaxedSysV2u64(slot, x.a, x.b);
    if (!llcSignatureArrived(x, ch.epoch)) return false;
    const llc_u32 mine0 = static_cast<llc_u32>(p.count), mine1 = llcSignatureWord1<kAlg, kProtocol, DT>(p);
    if ((static_cast<llc_u32>(x.a) ^ mine0) | (static_cast<llc_u32>(x.b) ^ mine1)) {
      LlcWaiter waiter = llcSignatureWaiter(p, me, ch);
      waiter.recordMismatch(peer, mine0, mine1, static_cast<llc_u32>(x.a), static_cast<llc_u32>(x.b));
    }
    return true;
  };
  if constexpr (kLooks <= 32) {
    // Straight-line looks (unrolled): no loop-carried state at all, for the kernels at the register cap.
#pragma unroll
    for (llc_u32 i = 0; i < kLooks; ++i)
      if (look()) return true;
  } else {
#pragma unroll 1
    for (llc_u32 i = 0; i < kLooks; ++i)
      if (look()) return true;
  }
  return false;
}

// The deferred check (LLCOMM_SIG_DEFERRED; the A/B tree ab/defer): kernel e on a channel checks the signatures of
// the channel's previous epoch (ch.prev, the stored epoch word; 0 = none) instead of its own. The checker thread
// of the k-th peer loads, at the kernel's start (deferLoad: no wait), that peer's packet of epoch prev from this
// rank's scratch and this rank's own packet of epoch prev (its own slot, stored by this rank's kernel prev, which
// has completed: kernel order), and compares them after its sends (deferCheck): by then both loads are back, and
// the peer's packet was stored at the start of the peer's kernel prev, whose data this rank's kernel prev received
// before it ended. The packet is normally there; the bounded poll (deferCheck's slow path) runs only when it is
// not: the packet store and the data stores of the peer's kernel prev are unordered (relaxed, other threads), so
// this rank may have received that data and ended kernel prev, and started this one, before the packet store
// became visible here (a reordering in the fabric that lasts a kernel launch: not seen), or the peer ran another
// kernel at epoch prev that publishes nothing (the fused kernels): a bounded poll, then TIMEOUT naming the
// signature wait, as the current-epoch check gives for a peer that never publishes. No own packet of epoch prev
// (the first call after creation or recover(), or kernel prev was one that does not store its own packet:
// oneshot-barrier, which checked itself exactly in its barrier, and the fused kernels, which publish nothing):
// nothing to compare with, nothing checked. Epoch prev may have been another algorithm, dtype or count: the two
// packets are compared word for word, each the signature of epoch prev (a signature never depends on the kernel
// that reads it). The last launch on each channel is checked by the host (checkDeviceError).
// Slots: epoch & 3 (abi.cuh LLCOMM_SIG_EPOCH_MASK; prev = e - 1 but across the wrap, which goes to 4 in this build
// so that epoch mod 4 continues: channel.cuh). Overwrite safety: while this rank runs kernel e, a peer has stored
// packets of at most epoch e + 2, and slot (e + 2) & 3 != (e - 1) & 3. From the exchange alone: a peer's kernel at epoch e + 3 (the first that would
// store into slot (e - 1) & 3) starts after its kernel e + 2 completed (kernel order: the packet is stored after
// llcBeginCall's wait for the prior grid), which in this build waits for this rank's packet of epoch e + 1 whenever
// the peer's own packet of e + 1 exists, and this rank stores that in its kernel e + 1, after this one; where the
// peer's own packet of e + 1 does not exist, its kernel e + 1 was oneshot-barrier (which waited for this rank's
// packet of e + 1 itself) or a kernel that publishes nothing (the fused kernels: then the data bound below). The
// data bound, for every algorithm in a matched call: a peer's kernel of epoch e + 1 does not complete before it
// received this rank's data of epoch e + 1 (an all-reduce's output needs every rank's input: one-shot lanes,
// two-shot owners' all-gathers that need this rank's reduce-scatter, the ring), sent in this rank's kernel e + 1,
// so while this rank runs kernel e a peer stores at most epoch e + 1's packets. The same arguments bound the
// current epoch's slot e & 3 (the armed looks read it): a peer stores into it again at e + 4.
struct LlcSigPrev {
  LlcSigPacket peer, own;
};
#if defined(LLCOMM_SIG_DEFERRED)

// Every thread calls it (no wait): the checker thread of the k-th peer (first peer-round: k < blockDim.x) issues the
// loads of the peer's packet and its own of epoch ch.prev. Relaxed: each 8-byte element carries the epoch (the
// packet's argument above).
LLC_DEVICE void llcDeferLoadSignature(const LlcommAllReduceParams& p, llc_u32 me, const LlcChannel& ch,
                                      LlcSigPrev& x) {
  const llc_u32 k = blockDim.x - 1 - threadIdx.x;
  x.peer.a = x.peer.b = x.own.a = x.own.b = 0; // the zero fill: never a call's epoch
#if defined(LLCOMM_SIG_DEFER_NOLOAD)
  // A/B knob (round 5, ab/dnoload; checks nothing): no loads; both packets made equal to a packet of epoch prev from
  // registers, passed through an empty asm so that the compiler cannot fold the comparison in deferCheck away. What
  // is left of the deferred check is its code (comparison, branch, slow path) without its memory traffic.
  if (k + 1 < p.nranks && ch.prev != 0) {
    x.own.a = (static_cast<llc_u64>(ch.prev) << 32) | static_cast<llc_u32>(p.count);
    x.own.b = (static_cast<llc_u64>(ch.prev) << 32) | p.signatureChunk;
    x.peer = x.own;
    asm volatile("" : "+l"(x.own.a), "+l"(x.own.b), "+l"(x.peer.a), "+l"(x.peer.b));
  }
  return;
#endif
  if (k + 1 < p.nranks && ch.prev != 0) {
    const llc_u32 slot = ch.prev & LLCOMM_SIG_EPOCH_MASK;
    llcLoadRelaxedSysV2u64(llcSignatureSlot(p.scratch[me], ch.index, slot, llcSignaturePeer(me, p.nranks, k)),
                           x.peer.a, x.peer.b);
    llcLoadRelaxedSysV2u64(llcSignatureSlot(p.scratch[me], ch.index, slot, me), x.own.a, x.own.b);
  }
}

// The slow path of the deferred check: the first round's peer packet not there yet, or differing, or peer-rounds
// past the first (more than blockDim.x + 1 ranks: the emulator's 32-thread blocks; never on the GPU, where
// blockDim.x = 512 >= LLCOMM_MAX_RANKS). Bounded polls, then the comparison.
LLC_DEVICE void llcDeferCheckSlow(const LlcommAllReduceParams& p, llc_u32 me, const LlcChannel& ch, LlcSigPrev& x) {
  // As the armed look (wait.cuh): the inputs pass an empty volatile asm, so this path's arithmetic is not hoisted
  // before the kernel's data path.
  llc_u32 mine = me, index = ch.index, prev = ch.prev, k = blockDim.x - 1 - threadIdx.x;
#if !defined(LLCOMM_HOST_EMULATION)
  asm volatile("" : "+r"(mine), "+r"(index), "+r"(prev), "+r"(k));
#endif
  const llc_u32 n = p.nranks;
  LlcWaiter waiter(p.errorWord, p.timeoutNs, mine, prev, index); // the error word names epoch prev's call
#pragma unroll 1
  for (llc_u32 kk = k; kk + 1 < n && !waiter.aborted; kk += blockDim.x) {
    const llc_u32 peer = llcSignaturePeer(mine, n, kk);
    const void* slot = llcSignatureSlot(p.scratch[mine], index, prev & LLCOMM_SIG_EPOCH_MASK, peer);
    if (kk != k) llcLoadRelaxedSysV2u64(slot, x.peer.a, x.peer.b); // rounds past the first: not loaded yet
    LlcSpin spin;
    while (!llcSignatureArrived(x.peer, prev) && waiter.keepWaiting(spin, peer, LLCOMM_WAIT_SIGNATURE, 0))
      llcLoadRelaxedSysV2u64(slot, x.peer.a, x.peer.b);
    if (!waiter.aborted && (x.peer.a != x.own.a || x.peer.b != x.own.b))
      waiter.recordMismatch(peer, static_cast<llc_u32>(x.own.a), static_cast<llc_u32>(x.own.b),
                            static_cast<llc_u32>(x.peer.a), static_cast<llc_u32>(x.peer.b));
  }
}

// Every thread calls it: the checker threads compare the loaded packets (equal: done, the common case, no wait:
// both loads were issued at the kernel's start); a peer's packet not there yet is polled (bounded); a differing
// one records MISMATCH of epoch prev (this rank's and the peer's signatures of that call; error word epoch = prev).
LLC_DEVICE void llcDeferCheckSignature(const LlcommAllReduceParams& p, llc_u32 me, const LlcChannel& ch,
                                       LlcSigPrev& x) {
  const llc_u32 k = blockDim.x - 1 - threadIdx.x;
#if defined(LLCOMM_SIG_DEFER_NOCOMPARE)
  // A/B knob (round 5, ab/dnocmp; checks nothing): the loads of deferLoad are issued as in the deferred build and
  // their difference consumed here by an empty asm (the thread waits for them here), with no branch or slow path:
  // the deferred check's memory traffic without its code. ptxas spills 20-36 bytes in twoshot-sentinel f32 (push and
  // pull) with this, as the deferred build did with its comparison after the sends: read those cases apart.
  (void)p, (void)me, (void)ch, (void)k;
  const llc_u64 differs = (x.own.a ^ x.peer.a) | (x.own.b ^ x.peer.b);
  asm volatile("" ::"l"(differs));
  return;
#endif
  // No own packet of epoch prev (none, or kernel prev stored none): nothing to compare with, for any peer-round.
  if (k + 1 >= p.nranks || ch.prev == 0 || !llcSignatureArrived(x.own, ch.prev)) return;
  // The same epoch and words, and no second peer-round: checked.
  if (x.peer.a == x.own.a && x.peer.b == x.own.b && k + blockDim.x + 1 >= p.nranks) return;
  llcDeferCheckSlow(p, me, ch, x);
}
#endif // LLCOMM_SIG_DEFERRED

// oneshot-barrier's first barrier, with the signature packet as its arrival flag (block-wide; replaces
// llcBlockGlobalBarrier(..., which = 0, ...)). Thread t < nranks, t != me, serves peer t.
template <llc_u32 kAlg, llc_u32 kProtocol, int DT>
LLC_DEVICE void llcBlockSignatureBarrier(const LlcommAllReduceParams& p, llc_u32 me, const LlcChannel& ch,
                                         LlcWaiter& dataWaiter) {
  // bar.sync: every thread's earlier writes (the block's copy into its plain buffer) are ordered before thread t's
  // release store of the packet below (the release is cumulative over what bar.sync made visible to t), so a peer
  // whose acquire load observes the packet sees the copy: the same argument as llcBlockGlobalBarrier's u32 flag.
  __syncthreads();
  const llc_u32 t = threadIdx.x, n = p.nranks;
  if (t < n && t != me) {
    const llc_u64 flag = static_cast<llc_u64>(ch.epoch) << 32;
    const llc_u32 w0 = static_cast<llc_u32>(p.count), w1 = llcSignatureWord1<kAlg, kProtocol, DT>(p);
    llcStoreReleaseSysV2u64(llcSignatureSlot(p.scratch[t], ch.index, ch.sigSlot(), me), flag | w0, flag | w1);
    // The wait: the data waiter's bounded poll (deadline, error word), comparing once the packet is there.
    // Equality is exact and the packet is not overwritten before this read: peer t stores its next packet into this
    // half at epoch + 2, in a kernel after its epoch + 1 one, which ends only after it saw this rank's epoch + 1
    // packet, stored after this kernel (the overwrite argument above).
    const void* slot = llcSignatureSlot(p.scratch[me], ch.index, ch.sigSlot(), t);
    LlcSigPacket x;
    LlcSpin spin;
    do {
      llcLoadAcquireSysV2u64(slot, x.a, x.b);
    } while (!llcSignatureArrived(x, ch.epoch) && dataWaiter.keepWaiting(spin, t, LLCOMM_WAIT_BARRIER, 0));
    // Acquire: the load that saw this epoch observed peer t's release store of that element, so everything peer t
    // wrote before it (its copy) is visible to this thread, and through the bar.sync below to the block.
    if (!dataWaiter.aborted && ((static_cast<llc_u32>(x.a) ^ w0) | (static_cast<llc_u32>(x.b) ^ w1)))
      dataWaiter.recordMismatch(t, w0, w1, static_cast<llc_u32>(x.a), static_cast<llc_u32>(x.b));
  }
  __syncthreads();
}

// Round-2 A/B knobs (research/notes/signature-cost.md, round 2; make-signature-trees.sh builds one tree per knob;
// not part of the ABI, none set in the product build):
//   LLCOMM_SIG_ARM_PLAIN   round 1's armed look (wait.cuh), whose address arithmetic the compiler may hoist before
//                          the poll loops (the product build passes the look's inputs through an empty asm instead).
//   LLCOMM_SIG_NO_ARM      arm() empty: the data waits never look at the signature (per-process mismatches whose
//                          waits never end are recorded as TIMEOUT, which the host's reading of the packets turns
//                          into MISMATCH in most cases: a measurement of what arming costs, not a product choice).
//   LLCOMM_SIG_PUBLISH_LOW threads 0..nranks-1 store the packets (round 0's publishers: the threads that send the
//                          first data), the checkers stay at the top (the same protocol: who stores does not matter).
//   LLCOMM_SIG_R2          round 2's placement in the serial paths (oneshot-ll: prefetch + finish by the checker
//                          threads; twoshot-sentinel: blockCheck before the receives when the checker has nothing
//                          to reduce, else prefetch + finish; its 16-bit reduce-scatter waits unarmed): the default
//                          (defined below unless LLCOMM_SIG_TAIL is).
//   LLCOMM_SIG_TAIL        round 3's tail check instead (every wait armed; measured slower, kept for the A/B).
//   LLCOMM_SIG_PUBLISH_ONLY only the packet stores (and oneshot-barrier's signature barrier): no check, no arm. A
//                          diagnostic that splits the cost into the publish and the rest; it checks nothing.
// Round-5 knobs (research/notes/signature-cost.md, round 5; GPU A/B only, each checks less than the product):
//   LLCOMM_SIG_NOWAIT         the current-epoch checks look once and never poll (llcSignatureAwait).
//   LLCOMM_SIG_DEFER_NOLOAD   with LLCOMM_SIG_DEFERRED: the deferred check's code without its loads.
//   LLCOMM_SIG_DEFER_NOCOMPARE with LLCOMM_SIG_DEFERRED: its loads, consumed by an empty asm, without its code.
#if defined(LLCOMM_HOST_EMULATION) && \
    (defined(LLCOMM_SIG_NOWAIT) || defined(LLCOMM_SIG_DEFER_NOLOAD) || defined(LLCOMM_SIG_DEFER_NOCOMPARE))
#error "the round-5 signature knobs are GPU A/B builds (inline asm), not for the host emulator"
#endif
#if (defined(LLCOMM_SIG_DEFER_NOLOAD) || defined(LLCOMM_SIG_DEFER_NOCOMPARE)) && !defined(LLCOMM_SIG_DEFERRED)
#error "LLCOMM_SIG_DEFER_NOLOAD / _NOCOMPARE modify the deferred build: define LLCOMM_SIG_DEFERRED too"
#endif
// The serial paths' check placement: round 2's (LLCOMM_SIG_R2: prefetch + finish) is the default; LLCOMM_SIG_TAIL
// builds round 3's tail check. Measured on one H200 (bench/results/cuda-h200-signature-ab-2026-12-01d.txt, 24
// cases, ratio to the kernels without the signature): round 2 median 1.057, max 1.105; the tail 1.074, max 1.189
// (oneshot-ll 2 ranks 8 B: 1.078 against 1.177). The tail arms every wait before it, round 2 leaves 16-bit
// twoshot-sentinel's reduce-scatter waits unarmed (per-process mode: there the device records TIMEOUT for a
// mismatched peer that never sends, and the host reports MISMATCH from the packets: the gap paragraph above).
#if !defined(LLCOMM_SIG_TAIL) && !defined(LLCOMM_SIG_R2)
#define LLCOMM_SIG_R2 1
#endif
// The steps of the deferred check where the build has none (every build but LLCOMM_SIG_DEFERRED): empty.
struct LlcSigNoDefer {
  static constexpr bool kDeferred = false;
  LLC_DEVICE static void deferLoad(const LlcommAllReduceParams&, llc_u32, const LlcChannel&, LlcSigPrev&) {}
  LLC_DEVICE static void deferCheck(const LlcommAllReduceParams&, llc_u32, const LlcChannel&, LlcSigPrev&) {}
};
// The packet stores and oneshot-barrier's signature barrier: the same in every build that has a signature.
template <llc_u32 kAlg, llc_u32 kProtocol, int DT>
struct LlcSigPublisher {
  LLC_DEVICE static void blockPublish(const LlcommAllReduceParams& p, llc_u32 me, const LlcChannel& ch) {
    llcBlockPublishSignature<kAlg, kProtocol, DT>(p, me, ch);
  }
  LLC_DEVICE static void blockBarrier(const LlcommAllReduceParams& p, llc_u32 me, const LlcChannel& ch, LlcWaiter& w) {
    llcBlockSignatureBarrier<kAlg, kProtocol, DT>(p, me, ch, w);
  }
};
// The one-shots' and twoshot-sentinel's current-epoch checks where a build has none of them (the deferred build,
// LLCOMM_SIG_PUBLISH_ONLY): tryCheck reports done, the rest is empty.
struct LlcSigNoCurrentCheck {
  static constexpr bool kTail = false;
  LLC_DEVICE static void tail(const LlcommAllReduceParams&, llc_u32, const LlcChannel&) {}
  template <llc_u32 kLooks>
  LLC_DEVICE static bool tryCheck(const LlcommAllReduceParams&, llc_u32, const LlcChannel&) { return true; }
  LLC_DEVICE static void prefetch(const LlcommAllReduceParams&, llc_u32, const LlcChannel&, LlcSigPacket&) {}
  LLC_DEVICE static void finish(const LlcommAllReduceParams&, llc_u32, const LlcChannel&, LlcSigPacket&) {}
};
#if defined(LLCOMM_SIG_DEFERRED) && !defined(LLCOMM_NO_SIGNATURE) && !defined(LLCOMM_SIG_PUBLISH_ONLY)
// The deferred check (llcDeferCheckSignature): oneshot-ll, oneshot-sentinel and twoshot-sentinel call deferLoad at
// their start and deferCheck after their sends, and none of their current-epoch checks (kDeferred: tryCheck true,
// prefetch / finish / tail empty, their blockCheck calls skipped); ring and twoshot-atomic keep their blockCheck of
// the current epoch (slot epoch & 3), oneshot-barrier its barrier; the data waits stay armed.
template <llc_u32 kAlg, llc_u32 kProtocol, int DT>
struct LlcCallSignature : LlcSigPublisher<kAlg, kProtocol, DT>, LlcSigNoCurrentCheck {
  static constexpr bool kDeferred = true;
  LLC_DEVICE static void arm(LlcWaiter& w, const LlcChannel& ch) { w.sigEpochWord = ch.epochWord; }
  LLC_DEVICE static void blockCheck(const LlcommAllReduceParams& p, llc_u32 me, const LlcChannel& ch) {
    llcBlockCheckSignature<kAlg, kProtocol, DT>(p, me, ch);
  }
  LLC_DEVICE static void deferLoad(const LlcommAllReduceParams& p, llc_u32 me, const LlcChannel& ch, LlcSigPrev& x) {
    llcDeferLoadSignature(p, me, ch, x);
  }
  LLC_DEVICE static void deferCheck(const LlcommAllReduceParams& p, llc_u32 me, const LlcChannel& ch, LlcSigPrev& x) {
    llcDeferCheckSignature(p, me, ch, x);
  }
};
#elif !defined(LLCOMM_NO_SIGNATURE) && defined(LLCOMM_SIG_PUBLISH_ONLY)
// The packet stores only (and oneshot-barrier's signature barrier): no check, no arm. An A/B diagnostic.
template <llc_u32 kAlg, llc_u32 kProtocol, int DT>
struct LlcCallSignature : LlcSigNoDefer, LlcSigPublisher<kAlg, kProtocol, DT>, LlcSigNoCurrentCheck {
  LLC_DEVICE static void arm(LlcWaiter&, const LlcChannel&) {}
  LLC_DEVICE static void blockCheck(const LlcommAllReduceParams&, llc_u32, const LlcChannel&) {}
};
#elif !defined(LLCOMM_NO_SIGNATURE) && !defined(LLCOMM_SIG_BLOCK) && !defined(LLCOMM_SIG_BLOCK_EMPTY)
// The steps of one kernel's signature, named once per kernel (`using Sig = LlcCallSignature<...>`): the in-block check
// (LLCOMM_SIG_IN_BLOCKS; the product before round 11).
template <llc_u32 kAlg, llc_u32 kProtocol, int DT>
struct LlcCallSignature : LlcSigNoDefer, LlcSigPublisher<kAlg, kProtocol, DT> {
#if defined(LLCOMM_SIG_NO_ARM)
  LLC_DEVICE static void arm(LlcWaiter&, const LlcChannel&) {}
#else
  LLC_DEVICE static void arm(LlcWaiter& w, const LlcChannel& ch) { w.sigEpochWord = ch.epochWord; }
#endif
#if defined(LLCOMM_SIG_R2)
  static constexpr bool kTail = false;
  LLC_DEVICE static void tail(const LlcommAllReduceParams&, llc_u32, const LlcChannel&) {}
#else
  // The serial paths check at the tail (llcTailCheckSignature); prefetch and finish are then not called.
  static constexpr bool kTail = true;
  LLC_DEVICE static void tail(const LlcommAllReduceParams& p, llc_u32 me, const LlcChannel& ch) {
    llcTailCheckSignature<kAlg, kProtocol, DT>(p, me, ch);
  }
#endif
  LLC_DEVICE static void blockCheck(const LlcommAllReduceParams& p, llc_u32 me, const LlcChannel& ch) {
    llcBlockCheckSignature<kAlg, kProtocol, DT>(p, me, ch);
  }
  template <llc_u32 kLooks>
  LLC_DEVICE static bool tryCheck(const LlcommAllReduceParams& p, llc_u32 me, const LlcChannel& ch) {
    return llcTryCheckSignature<kAlg, kProtocol, DT, kLooks>(p, me, ch);
  }
  LLC_DEVICE static void prefetch(const LlcommAllReduceParams& p, llc_u32 me, const LlcChannel& ch, LlcSigPacket& x) {
    llcPrefetchSignature<kAlg, kProtocol, DT>(p, me, ch, x);
  }
  LLC_DEVICE static void finish(const LlcommAllReduceParams& p, llc_u32 me, const LlcChannel& ch, LlcSigPacket& x) {
    llcFinishSignature<kAlg, kProtocol, DT>(p, me, ch, x);
  }
};
#else
// The data blocks of the signature-block build (llcSignatureBlock checks in a block of its own), and the A/B builds
// without any check: the same calls, empty; the barrier is the plain epoch-flag barrier.
template <llc_u32 kAlg, llc_u32 kProtocol, int DT>
struct LlcCallSignature : LlcSigNoDefer {
  static constexpr bool kTail = false;
  LLC_DEVICE static void tail(const LlcommAllReduceParams&, llc_u32, const LlcChannel&) {}
  LLC_DEVICE static void arm(LlcWaiter&, const LlcChannel&) {}
  LLC_DEVICE static void blockPublish(const LlcommAllReduceParams&, llc_u32, const LlcChannel&) {}
  LLC_DEVICE static void blockCheck(const LlcommAllReduceParams&, llc_u32, const LlcChannel&) {}
  template <llc_u32 kLooks>
  LLC_DEVICE static bool tryCheck(const LlcommAllReduceParams&, llc_u32, const LlcChannel&) { return true; }
  LLC_DEVICE static void prefetch(const LlcommAllReduceParams&, llc_u32, const LlcChannel&, LlcSigPacket&) {}
  LLC_DEVICE static void finish(const LlcommAllReduceParams&, llc_u32, const LlcChannel&, LlcSigPacket&) {}
  LLC_DEVICE static void blockBarrier(const LlcommAllReduceParams& p, llc_u32 me, const LlcChannel& ch, LlcWaiter& w) {
    llcBlockGlobalBarrier(p.scratch, me, p.nranks, ch.index, 0, ch.epoch, w);
  }
};
#endif


// The signature block (LLCOMM_SIG_BLOCK, round 11 of research/notes/signature-cost.md; the default build since
// 3a9cbf4, abi.cuh): the call's signature
// published and checked by one block of its own per launch, after the data blocks (the host adds it to every
// all-reduce grid when kernel-table.ts SIGNATURE_BLOCK is on, allreduce-launcher.ts; allreduce_common.cuh's
// llcBeginCall sends it here and ends it). The data blocks carry no signature code at all (rounds 5-10 found the in-block check's 3-5% in what its code
// did to the data path, not in its loads or waits). One block for all the launch's ranks (virtual ranks share a
// launch), so a launch of R ranks x B blocks takes R x B + 1 blocks: at most MAX_BLOCKS_PER_DEVICE (128) + 1 on
// 132 SMs whatever B the launch shape picked (kernel-table.ts), and the shapes are those without the signature.
// One packet per rank and launch, in channel 0's signature slots (the data blocks of this build use none), with an
// epoch word of its own per rank (scratch epoch word LLCOMM_SIG_BLOCK_EPOCH_WORD; the channels use words 0..15):
// every launch of a rank advances it once, whatever its algorithm or channel count, so a peer's extra or missing
// launch shows as a packet of another epoch (a bounded wait, then TIMEOUT naming the signature wait) and a differing
// one as MISMATCH. Pairs (launch rank i, peer k) are spread over the block's threads: the publish stores rank i's
// packet into peer k's scratch (k = nranks - 1: its own slot), the check polls peer k's packet in rank i's scratch.
// Overwrite safety, with this word's epochs: rank i's launch e does not complete before the block saw every peer's
// packet of e (or gave up, recording an error), stored by the peer's launch e, which began after the peer's launch
// e - 1 completed, whose signature block had read rank i's packet of e - 1 from the other slot; so rank i's store of
// e + 1 into that slot comes after the read. The data blocks' waits stop at a MISMATCH this block records through
// the error word (their keepWaiting reads it), in process and per process alike: every rank's own launch compares
// every peer's packet with its own, so in per-process mode each side's word records it, including the waits the
// in-block check left unarmed (its TIMEOUT "gap", above). A mismatched call's output is unspecified (the data blocks
// may have computed it from the peer's differently laid out data), as with every placement since round 3, and never
// returned: the host reads the error word before it reports the call.
#if defined(LLCOMM_SIG_BLOCK)
#define LLCOMM_SIG_BLOCK_EPOCH_WORD 32u
template <llc_u32 kAlg, llc_u32 kProtocol, int DT>
LLC_DEVICE void llcSignatureBlock(const LlcommAllReduceParams& p) {
  const llc_u32 n = p.nranks, launch = p.ranksInLaunch;
  const llc_u32 word0 = static_cast<llc_u32>(p.count), word1 = llcSignatureWord1<kAlg, kProtocol, DT>(p);
  // the channel view of rank i's signature epoch: epoch word 32, channel 0's slots
  const auto channelOf = [&](llc_u32 rank) {
    LlcChannel ch(p.scratch[rank], LLCOMM_SIG_BLOCK_EPOCH_WORD);
    ch.index = 0;
    return ch;
  };
  // Thread i < launch keeps rank i's epoch word and epoch for the store at the end (no second load of the word there,
  // at the block's tail, where a round trip would delay the kernel's completion).
  llc_u32* ownEpochWord = nullptr;
  llc_u32 ownEpoch = 0;
  if (threadIdx.x < launch) {
    const LlcChannel ch = channelOf(p.launchRanks[threadIdx.x]);
    ownEpochWord = ch.epochWord;
    ownEpoch = ch.epoch;
  }
  // Publish: the packet carries the epoch in both 8-byte elements (single-copy atomic each), so it needs no release.
#pragma unroll 1
  for (llc_u32 x = threadIdx.x; x < launch * n; x += blockDim.x) {
    const llc_u32 i = x / n, k = x - i * n, me = p.launchRanks[i];
    const LlcChannel ch = channelOf(me);
    const llc_u64 flag = static_cast<llc_u64>(ch.epoch) << 32;
    llcStoreRelaxedSysV2u64(llcSignatureSlot(p.scratch[llcSignaturePeer(me, n, k)], ch.index, ch.sigSlot(), me),
                            flag | word0, flag | word1);
  }
  // Check: a bounded poll of each peer's packet of this epoch, then the comparison (MISMATCH on a difference).
#pragma unroll 1
  for (llc_u32 x = threadIdx.x; x < launch * (n - 1u); x += blockDim.x) {
    const llc_u32 i = x / (n - 1u), k = x - i * (n - 1u), me = p.launchRanks[i];
    const LlcChannel ch = channelOf(me);
    LlcWaiter waiter = llcSignatureWaiter(p, me, ch);
    const llc_u32 peer = llcSignaturePeer(me, n, k);
    const void* slot = llcSignatureSlot(p.scratch[me], ch.index, ch.sigSlot(), peer);
    LlcSigPacket packet;
    llcLoadRelaxedSysV2u64(slot, packet.a, packet.b);
    llcSignatureAwait<kAlg, kProtocol, DT>(p, waiter, slot, peer, packet);
  }
  // Every check of this launch done before any rank's epoch moves on (the stores are relaxed: the next launch on this
  // rank reads the word after a kernel boundary, which orders them).
  __syncthreads();
  if (threadIdx.x < launch) llcStoreRelaxedSys(ownEpochWord, ownEpoch);
#pragma unroll 1
  for (llc_u32 i = threadIdx.x + blockDim.x; i < launch; i += blockDim.x) { // more ranks than threads (the emulator)
    const LlcChannel ch = channelOf(p.launchRanks[i]);
    llcStoreRelaxedSys(ch.epochWord, ch.epoch);
  }
}

// llcSignatureBlock's protocol with the two words given instead of made from an all-reduce's params: the fused
// kernels' signature cluster (llcomm/fused_signature.cuh, per process only), whose words the host encodes
// (src/protocol/call-signature.ts encodeFusedSignature: algorithm code LLCOMM_SIG_ALG_FUSED_RMSNORM, so a fused
// launch never matches an all-reduce launch). The same epoch word (LLCOMM_SIG_BLOCK_EPOCH_WORD) and channel 0's slots
// as the all-reduce signature block, so a rank's all-reduce and fused launches are one sequence of signature epochs:
// a peer that makes a fused call where this rank makes an all-reduce publishes another packet at the same epoch
// (MISMATCH). Every ordering argument of llcSignatureBlock above holds unchanged (it never used what the words
// mean): the packet is single-copy atomic per 8-byte element and carries the epoch in both, so it needs no release;
// the overwrite safety comes from the exchange (launch e does not complete before the block saw every peer's packet
// of e); the epoch stores are relaxed and read by the rank's next launch after a kernel boundary. Kept apart from
// llcSignatureBlock (not a refactor of it) so that the all-reduce kernels' code is untouched.
LLC_DEVICE void llcSignatureBlockWords(const llc_u64* scratch, llc_u64 errorWord, llc_u64 timeoutNs, llc_u32 n,
                                       llc_u32 launch, const llc_u8* launchRanks, llc_u32 word0, llc_u32 word1) {
  const auto channelOf = [&](llc_u32 rank) {
    LlcChannel ch(scratch[rank], LLCOMM_SIG_BLOCK_EPOCH_WORD);
    ch.index = 0;
    return ch;
  };
  // Publish (relaxed: the epoch in both elements, as above).
#pragma unroll 1
  for (llc_u32 x = threadIdx.x; x < launch * n; x += blockDim.x) {
    const llc_u32 i = x / n, k = x - i * n, me = launchRanks[i];
    const LlcChannel ch = channelOf(me);
    const llc_u64 flag = static_cast<llc_u64>(ch.epoch) << 32;
    llcStoreRelaxedSysV2u64(llcSignatureSlot(scratch[llcSignaturePeer(me, n, k)], ch.index, ch.sigSlot(), me),
                            flag | word0, flag | word1);
  }
  // Check: a bounded poll of each peer's packet of this epoch (keepWaiting: the deadline and the error word), then
  // the comparison; MISMATCH names this rank's and the peer's words (LlcWaiter::recordMismatch, first writer wins).
#pragma unroll 1
  for (llc_u32 x = threadIdx.x; x < launch * (n - 1u); x += blockDim.x) {
    const llc_u32 i = x / (n - 1u), k = x - i * (n - 1u), me = launchRanks[i];
    const LlcChannel ch = channelOf(me);
    LlcWaiter waiter(errorWord, timeoutNs, me, ch.epoch, ch.index);
    const llc_u32 peer = llcSignaturePeer(me, n, k);
    const void* slot = llcSignatureSlot(scratch[me], ch.index, ch.sigSlot(), peer);
    LlcSigPacket packet;
    llcLoadRelaxedSysV2u64(slot, packet.a, packet.b);
    LlcSpin spin;
    while (!llcSignatureArrived(packet, ch.epoch) && waiter.keepWaiting(spin, peer, LLCOMM_WAIT_SIGNATURE, 0))
      llcLoadRelaxedSysV2u64(slot, packet.a, packet.b);
    if (!waiter.aborted && ((static_cast<llc_u32>(packet.a) ^ word0) | (static_cast<llc_u32>(packet.b) ^ word1)))
      waiter.recordMismatch(peer, word0, word1, static_cast<llc_u32>(packet.a), static_cast<llc_u32>(packet.b));
  }
  // Every check of this launch done before any rank's epoch moves on (relaxed stores: the rank's next launch reads
  // the word after a kernel boundary, which orders them).
  __syncthreads();
#pragma unroll 1
  for (llc_u32 i = threadIdx.x; i < launch; i += blockDim.x) {
    const LlcChannel ch = channelOf(launchRanks[i]);
    llcStoreRelaxedSys(ch.epochWord, ch.epoch);
  }
}
#endif

#endif // LLC_HAS_DEVICE
