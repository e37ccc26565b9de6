// twoshot-sentinel: reduce-scatter then all-gather over sentinel slots. The channel's elements are split in nranks
// parts; part o is owned by rank o. Every rank sends part o of its input to owner o (RS lanes); the owner reduces
// all lanes in rank order once, writes its output and shares the result; every rank writes the owners' results.
// Reduce once at the owner, so all ranks hold the same bits. Double buffered by epoch parity.
// Two kernels per dtype (kPull below; the host picks one per launch: kernel-table.ts twoshotAllGather): the push
// kernel (llcomm_twoshot_sentinel_*), where the owner broadcasts its result into every peer's AG lane, and the pull
// kernel (llcomm_twoshot_sentinel_pull_*), whose serial path publishes it once in the owner's own plain region for
// every peer to pull after the owner's publish flag. The pull kernel has no spread path: the host picks it only for
// launches whose parts take the serial path (kernel-table.ts twoshotAllGather), and a short last channel of such a
// launch, whose parts would spread, takes the serial path too (correct at every shape; without the spread code the
// pull kernel's f32 build fits 128 registers, which it did not with the 32-bit spread arithmetic: ptxas, sm_90).
// Two paths, chosen uniformly per block: the spread path where the owner's reduce can be spread as the one-shots'
// (LlBuffer::spreadGroups of a part's slots > 1: from LLCOMM_SPREAD_MIN_RANKS ranks, at most blockDim.x /
// LLCOMM_SPREAD_MIN_GROUPS slots a part; small messages at many ranks), where every phase's (slot, peer) pairs are
// spread over the block; else the serial path, one thread per slot walking every peer.
#include "llcomm/allreduce_common.cuh"
#include "llcomm/signature.cuh"
#include "llcomm/ll_buffer.cuh"

// The spread path's batch: owners of one thread loaded before their sends, and peers of one poller polled together
// (pollBatch, blockRecvReduceSpreadWords). 4, not LLCOMM_RECV_BATCH (8): with 8 every dtype's kernel spills at the
// 128-register cap (ptxas -v, sm_90). A poller has ceil((n - 1) / groups) peers there, 1 to 4 at 8-64 KB and 16-64
// ranks, so its polls lose nothing. The serial path keeps 8. A constant of this kernel, not a macro: the emulator
// compiles every kernel in one translation unit.
constexpr int kTwoshotSpreadBatch = 4;
// The pull kernel's all-gather: owners whose published slots one thread loads back to back before storing them (as
// LLCOMM_RECV_BATCH: 8 ranks in one batch).
constexpr int kTwoshotPullBatch = 8;
// The spread path's shared words for the owner's sums (4 a slot of my part): at most blockDim.x, which the launch
// bounds cap at LLCOMM_THREADS (abi.cuh).
constexpr int kTwoshotSumWords = LLCOMM_THREADS;

// LLCOMM_PHASE_PROBE (an A/B knob for a research build, research/scripts/probe/phase-probe.sh; not part of the ABI,
// never set in the product): thread 0 of each block of the spread path reads %globaltimer and clock64 at the phase
// boundaries below and stores each pair at once (16 bytes, mark i at byte 16 i) at the start of this rank's plain
// region half of this channel and epoch, which the spread path never uses (the pull kernel's serial path publishes
// there, in other launches). Stored at once, not kept: 14 live registers pushed the f32 kernel into spills. Mark 0
// (before the epoch, so before the address is known) is kept in two registers and stored with mark 1.
#if defined(LLCOMM_PHASE_PROBE)
#define LLC_PHASE_MARK(i)                                                                                           \
  do {                                                                                                              \
    if (threadIdx.x == 0) {                                                                                         \
      phaseOut[2 * (i)] = llcGlobalTimerNs();                                                                       \
      phaseOut[2 * (i) + 1] = static_cast<llc_u64>(clock64());                                                      \
    }                                                                                                               \
  } while (0)
// The prologue's marks (timer only, kept in registers until the address is known; stored with mark 1): 7 the
// kernel's entry (before llcBeginCall's parameter loads), 8 the epoch word arrived, 9 thread 0's first input word
// arrived, 10 the scratch pointer (a parameter) arrived, 11 the epoch word reloaded, 12 the element split and thread
// roles computed, 13 the first batch's input loads issued. "Arrived": LLC_PHASE_AFTER branches on the value (a branch never taken, on a value no call has), so the
// timer read after it waits for the load; without it a mark says when a load was issued, not when it returned.
#if defined(LLCOMM_HOST_EMULATION)
#define LLC_PHASE_AFTER(v) ((void)(v))
#else
#define LLC_PHASE_AFTER(v)                                                                                          \
  do {                                                                                                              \
    if ((v) == 0x9E3779B9u) asm volatile("membar.cta;" ::: "memory");                                               \
  } while (0)
#endif
#else
#define LLC_PHASE_MARK(i) \
  do {                    \
  } while (0)
#endif

// The pull kernel's publish flag of one rank: channel `channel`, buffer half `half`, in that rank's scratch, written by
// that rank's block of the channel only (release, value = the channel's epoch), read by every peer's block of the
// channel (acquire). Where: the ring's flag row of the channel (LLCOMM_SCRATCH_RING_STRIDE = 128 u32 flags a channel)
// has two words past the ring's steps (ring.cu signals steps 0 .. 2 (n - 1) - 1 <= LLCOMM_MAX_RING_STEPS - 1 = 125),
// which no other kernel writes: llcRingFlag's only other user is ring.cu (flags.cuh llcBlockRingSignal / Wait), so
// words 126 and 127 hold only what the pull kernel stored there. Scratch, not the receive buffer, so no algorithm's
// user data can land on the flag (a data word equal to a later epoch would publish nothing as something). Zero-filled
// at creation (and by recover()) and epochs are never 0 (channel.cuh), so a never-written flag matches no call. No
// re-arm: the value is the epoch, and the half's flag is written only at the epochs of the pull kernel's calls of this
// channel and half (the push kernel and every other algorithm leave it alone): e, then e + 2 or later (same parity,
// growing), so the wait's equality test sees this call's store or an older one, never a later one before it has read
// this one (overwrite argument at the wait). Not an ABI change: the scratch size and its offsets stay abi.cuh's /
// abi.ts's.
static_assert(LLCOMM_MAX_RING_STEPS + 2 <= LLCOMM_SCRATCH_RING_STRIDE,
              "the pull kernel's flags need two free ring words");
LLC_DEVICE llc_u32* llcPullagFlag(llc_u64 scratchOfRank, llc_u32 channel, llc_u32 half) {
  return llcRingFlag(scratchOfRank, channel, LLCOMM_MAX_RING_STEPS + half);
}

// kPull = false: the push kernel (the product's code; its PTX has no trace of the pull). kPull = true: the pull
// kernel; it differs only in the serial path's owner store and all-gather (if constexpr below).
template <int DT, bool kPull>
__device__ __forceinline__ void twoshotSentinelAllReduce(const LlcommAllReduceParams& p) {
  using Fmt = LlcSentinel<DT>;
  using Value = typename LlBuffer<Fmt>::Value;
  constexpr llc_u32 eb = LlcDtype<DT>::kElemBytes;
#if defined(LLCOMM_PHASE_PROBE)
  const llc_u64 phaseEntryTimer = llcGlobalTimerNs(); // mark 7
#endif
  const LlcCall call = llcBeginCall<DT, LLCOMM_SIG_ALG_TWOSHOT_SENTINEL, LLCOMM_SIG_PROTOCOL_NONE>(p);
  if (call.bytes == 0) return; // empty channel: no exchange and no epoch step, identically on every rank
#if defined(LLCOMM_PHASE_PROBE)
  // Mark 0, the call's start (after llcBeginCall: the rank, PDL's wait), kept until the address is known.
  const llc_u64 phaseStartTimer = llcGlobalTimerNs(), phaseStartClock = static_cast<llc_u64>(clock64());
#endif
  const llc_u32 me = call.role.rank, n = p.nranks;
  // The element split and the path need no epoch: computed before the epoch load, so that the spread path's first
  // input loads are in flight together with it (below).
  // In 32 bits (LlcParts: a launch's bytes are < 2^31), the owners' part ranges recomputed in every phase cost a few
  // instructions each: the whole block runs this arithmetic before its first send, 16 warps on 4 schedulers, so its
  // instruction count is the prologue's time (Nsight Compute, research/notes/scale-2026-12-01.md, session 10).
  const LlcParts parts(static_cast<llc_u32>(call.range.size()), n, LLCOMM_ALIGN_BYTES / eb);
  const llc_u32 slotsPerPart = (parts.per * eb + 15u) / 16u;
  const llc_u32 mineBegin = parts.begin(me), mineBytes = parts.size(me) * eb;
  const llc_u32 mineSlots = (mineBytes + 15u) / 16u;
  // Spread path: thread t serves slot t % slotsPerPart of every part for the peers k = 1 + t / slotsPerPart +
  // j * groups (k-th owner after me when sending, k-th owner after me when receiving). spreadGroups > 1 implies
  // n >= 4 and at least 4 threads a slot, so groups >= 3, and that the owner's word-spread reduce has a thread per
  // word (4 * slots <= blockDim.x; tested too, for a smaller LLCOMM_SPREAD_MIN_GROUPS). Parts of more slots take the
  // serial path. In-place safety no longer rests on one thread per slot: the output word of part o != me, slot s is
  // written after this rank receives owner o's all-gather value for it, which owner o sends only after receiving
  // this rank's reduce-scatter value for it, which was loaded from the input before it was sent: the write is
  // causally after the read, whichever threads do them; part me's output word is written by the thread that loaded
  // its input word (program order), and no other thread reads part me of the input.
  // spread == (llcSpreadGroups(n, slotsPerPart, 4) > 1 && 4 * slotsPerPart <= blockDim.x), with the one division
  // (blockDim.x / slotsPerPart) that it and `groups` share; 4 * slotsPerPart <= blockDim.x implies spreadGroups'
  // slots < blockDim.x. Uniform over the block.
  bool spread = false;
  llc_u32 groups = 1u, reduceGroups = 1u; // reduceGroups: spreadGroups(slotsPerPart), the owner reduce's for a full part
  if (!kPull && n >= LLCOMM_SPREAD_MIN_RANKS && slotsPerPart != 0 && 4u * slotsPerPart <= blockDim.x &&
      4u * slotsPerPart <= LLCOMM_PEER_STAGE_WORDS) {
    const llc_u32 g = blockDim.x / slotsPerPart;
    reduceGroups = g < n ? g : n;
    spread = reduceGroups >= LLCOMM_SPREAD_MIN_GROUPS && reduceGroups > 1;
    groups = g < n - 1 ? g : n - 1;
  }
  const llc_u32 t = threadIdx.x;
  const bool sender = spread && t < groups * slotsPerPart;
  llc_u32 s = 0u, first = n; // slot t % slotsPerPart, first owner 1 + t / slotsPerPart: one division for both
  if (sender) {
    const llc_u32 q = t / slotsPerPart;
    s = t - q * slotsPerPart;
    first = 1u + q;
  }
  const auto ownerOf = [&](llc_u32 k) { return me + k < n ? me + k : me + k - n; };
  // The serial path's 64-bit split (llcPieceAt), computed here, before the epoch load, as before the spread path's
  // 32-bit one existed (after it, at 2 ranks, +0.1-0.24 us). Assigned in the uniform !spread branch only, so the
  // spread path neither computes nor keeps it. Not LlcParts: walked in 32 bits, the serial path spilled 16-36 bytes in
  // the push kernels and 84 in the pull f32 kernel at the 128-register cap (ptxas, sm_90).
  llc_u64 chanElems = 0, partElems = 0, mineBytesSerial = 0;
  LlcRange mine{0, 0};
  if (!spread) {
    chanElems = call.range.size();
    partElems = llcPieceElems(chanElems, n, LLCOMM_ALIGN_BYTES / eb);
    mine = llcPieceAt(chanElems, partElems, me);
    mineBytesSerial = mine.size() * eb;
  }
#if defined(LLCOMM_PHASE_PROBE)
  // Mark 12: the element split and the spread path's thread roles computed (integer arithmetic on the parameters,
  // divisions by run-time values among it); the branch on them makes the timer wait for the arithmetic.
  LLC_PHASE_AFTER(first + groups + s + slotsPerPart + static_cast<llc_u32>(mineBytes) + static_cast<llc_u32>(spread));
  const llc_u64 phaseSetupTimer = llcGlobalTimerNs(); // mark 12
#endif
  // Reduce-scatter, send side: the input loads of kTwoshotSpreadBatch owners issued before their sends (a send is
  // an asm store with a memory clobber: a load after it would wait for it).
  Value x[kTwoshotSpreadBatch];
  const auto loadBatch = [&](llc_u32 k0) {
#pragma unroll
    for (int j = 0; j < kTwoshotSpreadBatch; ++j) {
      const llc_u32 k = k0 + j * groups;
      if (k >= n) break; // k grows with j: no owner after this one (and no arithmetic for it)
      const llc_u32 o = ownerOf(k), bytes = parts.size(o) * eb;
      if (16u * s < bytes) llcLoadPayload32<DT, 4>(call.input + parts.begin(o) * eb, 16u * s, bytes, x[j].w);
    }
  };
  // The owner's word-spread reduce (LlBuffer::blockRecvReduceSpreadWords): thread t holds word t % 4 of slot t / 4
  // of my part.
  const llc_u32 ownSlot = t / 4u, ownWord = t % 4u;
  const llc_u32 ownOffset = 16u * ownSlot + 4u * ownWord;
  llc_u32 own = 0; // words past the end of my part are 0, as llcLoadPayload's tail gives them
  // Issued before the epoch load (LlcChannel's constructor): the first batch of the reduce-scatter's input and my
  // own input word. They depend on the call only (pointers, element split), not on the epoch, so the input round trip
  // and the epoch word's overlap instead of following each other (the epoch gives every send's address). Ordering:
  // the input is the caller's, written before this kernel (stream order); reading it earlier within the kernel
  // reads the same bytes. In place, the output words that alias it are written only after the exchanges (above).
  if (spread) {
    loadBatch(first);
    if (ownOffset < mineBytes) llcLoadPayload32<DT, 1>(call.input + mineBegin * eb, ownOffset, mineBytes, &own);
  }
#if defined(LLCOMM_PHASE_PROBE)
  const llc_u64 phaseIssuedTimer = llcGlobalTimerNs(); // mark 13: the first batch's input loads issued
  // Mark 10: this rank's scratch pointer (a kernel parameter read with a run-time index) arrived; waiting for it here
  // splits the epoch's time into the parameter read and the epoch word's own load.
  LLC_PHASE_AFTER(static_cast<llc_u32>(p.scratch[me]));
  const llc_u64 phaseScratchTimer = llcGlobalTimerNs(); // mark 10
#endif
  LlcChannel ch(p.scratch[me], call.role.channel);
#if defined(LLCOMM_PHASE_PROBE)
  LLC_PHASE_AFTER(ch.epoch);
  const llc_u64 phaseEpochTimer = llcGlobalTimerNs(); // mark 8
  // Mark 11: the same epoch word loaded again (its line now in L2 for this SM): one round trip of a warm line.
  LLC_PHASE_AFTER(llcLoadRelaxedSys(ch.epochWord));
  const llc_u64 phaseReloadTimer = llcGlobalTimerNs(); // mark 11
  LLC_PHASE_AFTER(spread ? x[0].w[0] : 0u);
  const llc_u64 phaseInputTimer = llcGlobalTimerNs(); // mark 9
#endif
  LlcWaiter waiter(p.errorWord, p.timeoutNs, me, ch.epoch, ch.index);
  // Call signature (signature.cuh): published and checked by the threads at the top of the block (no data at small
  // messages); where and how it is checked differs by path (below).
  using Sig = LlcCallSignature<LLCOMM_SIG_ALG_TWOSHOT_SENTINEL, LLCOMM_SIG_PROTOCOL_NONE, DT>;
  // LLCOMM_SIG_DEFERRED: the checkers' loads of the previous epoch's packets, compared (deferCheck) where the
  // default build checks: the spread path after the owner's broadcast; the serial path after the reduce-scatter
  // sends for a checker with nothing to reduce, at the end for one with slots (with the packets compared after the
  // sends instead, the f32 kernel spilled 16-24 bytes; ptxas, sm_90).
  LlcSigPrev sigPrev;
  Sig::deferLoad(p, me, ch, sigPrev);
  Sig::blockPublish(p, me, ch);
  // The channel-half of the sentinel region holds 2 * nranks lanes: RS lanes first, then AG lanes.
  const llc_u64 laneBytes = llcDivCount(p.sentinel.channelHalfBytes, 2u * n) / 16u * 16u;
  const llc_u64 base = ch.regionOffset(p.sentinel);
  const LlBuffer<Fmt> rs = llcMakeBuffer<Fmt>(p.recvBuf, base, laneBytes, me, n, ch, &waiter);
  const LlBuffer<Fmt> ag = llcMakeBuffer<Fmt>(p.recvBuf, base + n * laneBytes, laneBytes, me, n, ch, &waiter);
  if (spread) {
    // The reduce's stage, then the owner's canonicalized sums (4 words a slot of my part, at most blockDim.x words:
    // the spread path has 4 * slotsPerPart <= blockDim.x) for the block-wide broadcast below. One array: the
    // emulator gives a block one shared buffer.
    LLC_SHARED_WORDS(stage, LLCOMM_PEER_STAGE_WORDS + kTwoshotSumWords);
    llc_u32* const sums = stage + LLCOMM_PEER_STAGE_WORDS;
    for (llc_u32 k0 = first; k0 < n; k0 += kTwoshotSpreadBatch * groups) {
      if (k0 != first) loadBatch(k0); // the first batch was loaded before the epoch
#pragma unroll
      for (int j = 0; j < kTwoshotSpreadBatch; ++j) {
        const llc_u32 k = k0 + j * groups;
        if (k >= n) break;
        const llc_u32 o = ownerOf(k);
        if (16u * s < parts.size(o) * eb) rs.send(o, s, x[j]);
      }
    }
#if defined(LLCOMM_PHASE_PROBE)
    llc_u64* const phaseOut =
        reinterpret_cast<llc_u64*>(reinterpret_cast<char*>(p.recvBuf[me]) + ch.regionOffset(p.plain));
    if (threadIdx.x == 0) {
      phaseOut[0] = phaseStartTimer;
      phaseOut[1] = phaseStartClock;
      phaseOut[14] = phaseEntryTimer;
      phaseOut[16] = phaseEpochTimer;
      phaseOut[18] = phaseInputTimer;
      phaseOut[20] = phaseScratchTimer;
      phaseOut[22] = phaseReloadTimer;
      phaseOut[24] = phaseSetupTimer;
      phaseOut[26] = phaseIssuedTimer;
    }
#endif
    LLC_PHASE_MARK(1); // thread 0's reduce-scatter sends issued (after the epoch load they needed)
    // The signature: every data wait from here on is armed (signature.cuh, arm: a peer whose call never sends what
    // a wait expects ends it with MISMATCH, not TIMEOUT), and the checker threads check every peer in full after
    // the owner's broadcast, before the all-gather's polls (below).
    Sig::arm(waiter, ch);
    // Owner: my part's words reduced block-wide (LlBuffer::blockRecvReduceSpreadWords: pollers re-arm what they
    // read; rank order 0..n-1 in f32 element by element, so the same bits as the serial path); each reducing thread
    // stores its output word and puts its canonicalized sum in `sums`, and after one __syncthreads the senders of
    // the reduce-scatter broadcast (thread t: slot s of my part to the owners k = first, first + groups, ...: every
    // (slot, peer) pair once), one v4 store (Fmt::write) a pair, so one store a thread wherever groups = n - 1.
    // Why not each reducing thread's own word to every peer: one warp's stores to n - 1 peers go one after another,
    // about 40 ns each (the phase probe: 0.64 us for 31 peers at 32 ranks 8 KB, research/notes/scale-2026-12-01.md,
    // session 7), and the all-gather's polls waited behind them.
    // Ordering: the sums reach the broadcasting threads through shared memory and the __syncthreads (block scope);
    // a peer receives the slot's four canonicalized words (the bits this rank stores as its output) in one v4 store
    // (Fmt::write), as the serial path broadcasts a slot: each element single-copy atomic and each checked on
    // acceptance (sentinel.cuh), so the all-gather's acceptance and re-arm arguments are the serial path's.
    if (mineSlots > 0) { // uniform; 0 < mineSlots <= slotsPerPart, so spreadGroups(mineSlots) > 1
      // spreadGroups(mineSlots): reduceGroups for a full part (no second division), else computed.
      const llc_u32 sum = rs.template blockRecvReduceSpreadWords<DT, kTwoshotSpreadBatch>(
          mineSlots, mineSlots == slotsPerPart ? reduceGroups : rs.spreadGroups(mineSlots), own, stage, [] {});
      LLC_PHASE_MARK(2); // the owner's reduce done (every peer's slots received: its __syncthreads)
      if (t < 4u * mineSlots) {
        const llc_u32 w = Fmt::canonicalize(sum); // my output = the bits peers receive
        sums[t] = w;
        if (ownOffset < mineBytes) llcStorePayload32<DT, 1>(call.output + mineBegin * eb, ownOffset, mineBytes, &w);
      }
      __syncthreads(); // uniform (mineSlots is): the sums are in `sums`
      if (sender && s < mineSlots) {
        Value v;
#pragma unroll
        for (int j = 0; j < 4; ++j) v.w[j] = sums[4u * s + j];
        for (llc_u32 k = first; k < n; k += groups) ag.send(ownerOf(k), s, v);
      }
    }
    // The checkers (top of the block) check every peer (every peer makes this call, else MISMATCH) after the
    // reduce-scatter's polls and their own broadcast words, so the packet load's round trip overlaps the all-gather
    // exchange instead of standing between the sums and the broadcast; an owner without data (the last parts of a
    // short channel) checks here all the same. A MISMATCH it records ends the armed all-gather waits at their next
    // look at the error word; the block's last __syncthreads (blockAdvanceEpoch) waits for it.
    LLC_PHASE_MARK(3); // thread 0's broadcast words and output word stored
    if constexpr (Sig::kDeferred)
      Sig::deferCheck(p, me, ch, sigPrev);
    else
      Sig::blockCheck(p, me, ch);
    LLC_PHASE_MARK(4); // the signature check (thread 0 checks only with blockDim.x + 1 peers or more: about none)
    // All-gather, receive side: kTwoshotSpreadBatch owners of this thread polled together (every load before any
    // inspection: LlBuffer::pollBatch). The threads that reduced nothing start these polls right after the owner's
    // last __syncthreads.
    for (llc_u32 k0 = first; k0 < n; k0 += kTwoshotSpreadBatch * groups) {
      llc_u32 want = 0;
#pragma unroll
      for (int j = 0; j < kTwoshotSpreadBatch; ++j) {
        const llc_u32 k = k0 + j * groups;
        if (k >= n) break;
        if (16u * s < parts.size(ownerOf(k)) * eb) want |= 1u << j;
      }
      const auto slotOf = [&](int j) { return ag.slotPtr(me, ownerOf(k0 + j * groups), s); };
      Value got[kTwoshotSpreadBatch]; // pollBatch fills the members whose bit is set
      llc_u32 pending = want;
      LlcSpin spin;
      while (pending != 0) {
        pending = ag.template pollBatch<kTwoshotSpreadBatch>(pending, slotOf, got);
        if (pending != 0 && !waiter.keepWaiting(spin, ownerOf(k0 + (__ffs(pending) - 1) * groups), Fmt::kWhat, s))
          break;
      }
#pragma unroll
      for (int j = 0; j < kTwoshotSpreadBatch; ++j) {
        if (!((want >> j) & 1u)) continue;
        const llc_u32 o = ownerOf(k0 + j * groups);
        llcStorePayload32<DT, 4>(call.output + parts.begin(o) * eb, 16u * s, parts.size(o) * eb, got[j].w);
        // The thread that read the slot re-arms it, after its read; ordering argument at Fmt::rearm() (sentinel.cuh).
        if (Fmt::kRearm) Fmt::rearm(slotOf(j));
      }
    }
    LLC_PHASE_MARK(5); // thread 0's all-gather polls done, its output stored
    ch.blockAdvanceEpoch();
    LLC_PHASE_MARK(6); // the block's last __syncthreads passed
    return;
  }
  Value v;
  // Reduce-scatter, send side: the same thread handles slot s of every part in every phase (in-place safe).
  for (llc_u32 s = threadIdx.x; s < slotsPerPart; s += blockDim.x) {
    for (llc_u32 k = 1; k < n; ++k) {
      const llc_u32 o = me + k < n ? me + k : me + k - n;
      const LlcRange part = llcPieceAt(chanElems, partElems, o);
      if (16ull * s >= part.size() * eb) continue;
      llcLoadPayload<DT, 4>(call.input + part.begin * eb, 16ull * s, part.size() * eb, v.w);
      rs.send(o, s, v);
    }
  }
  // The signature: a checker thread with nothing to reduce (small messages) checks now, beside the data path (the
  // bounded check also ends the data waits of the 16-bit kernels, which are not armed in the reduce-scatter, when a
  // peer never sends); one with slots to reduce loads the packet now and inspects it after the receives.
  // With LLCOMM_SIG_TAIL (Sig::kTail): nothing here; threads 0..n-2 check at the tail, after their stores, and every
  // data wait is armed. The default, LLCOMM_SIG_R2 (round 2's placement):
  LlcSigPacket sig;
  const bool sigNow = !Sig::kTail && 16ull * threadIdx.x >= mineBytesSerial;
  if constexpr (Sig::kDeferred) {
    if (sigNow) Sig::deferCheck(p, me, ch, sigPrev); // the others compare at the end
  }
  if constexpr (!Sig::kTail && !Sig::kDeferred) {
    if (sigNow)
      Sig::blockCheck(p, me, ch); // every peer makes this call, else MISMATCH
    else
      Sig::prefetch(p, me, ch, sig); // the load overlaps the receives
  }
  // The data waits look at their peer's signature in their slow path (signature.cuh, arm): the all-gather's in every
  // dtype; the reduce-scatter's in every dtype with the tail check (nothing else ends them when a peer never sends),
  // in f32 only with LLCOMM_SIG_R2 (armed there with the prefetched packet live, the 16-bit kernels spilled).
  if constexpr (eb == 4 || Sig::kTail) Sig::arm(waiter, ch);
  // Owner: reduce my part, write it, and broadcast it (push kernel) or publish it (pull kernel). The pull kernel's
  // publish area is this rank's own plain region, channel half of this epoch (ch.regionOffset(p.plain)), slot s at
  // 16 s: the reduced part once, for every peer to pull. Fits: a part is at most the sentinel lane (capacity rule:
  // chanBytes <= n * laneBytes, laneBytes a multiple of 16, so 16 * slotsPerPart <= laneBytes =
  // sentinel.channelHalfBytes / (2n)), and deviceBufferLayout gives the plain region the sentinel region's channel
  // half (both P, kernel-table.ts). The plain region needs no fill and no algorithm reads there what it did not write
  // in the same call (ring.cu: a step's slot after its flag; oneshot_barrier.cu: the copies after the barrier), so
  // data left there is harmless; the sentinel region stays all-sentinel (the pull kernel's serial path writes no
  // all-gather lane, so a later push call finds every lane armed: the push kernel re-arms each lane it reads; the
  // reduce-scatter lanes are re-armed as before, in both kernels).
  [[maybe_unused]] llc_u64 publishOffset = 0;
  if constexpr (kPull) publishOffset = ch.regionOffset(p.plain);
  for (llc_u32 s = threadIdx.x; 16ull * s < mineBytesSerial; s += blockDim.x) {
    llcLoadPayload<DT, 4>(call.input + mine.begin * eb, 16ull * s, mineBytesSerial, v.w);
    Value sum = rs.template recvReduce<DT>(s, v); // rank order 0..n-1; re-arms the RS slots it read
#pragma unroll
    for (int i = 0; i < 4; ++i) sum.w[i] = Fmt::canonicalize(sum.w[i]); // my output = the bits peers receive
    llcStorePayload<DT, 4>(call.output + mine.begin * eb, 16ull * s, mineBytesSerial, sum.w);
    if constexpr (!kPull) {
      ag.bcast(s, sum);
    } else {
      // Weak store, published by the flag's release below (bar.sync, then the release: cumulative), as
      // oneshot-barrier's copy. Words past the end of the part are the zero tail llcLoadPayload gave the sum: peers
      // store only the part's bytes (llcStorePayload).
      LlcWords4 c;
#pragma unroll
      for (int i = 0; i < 4; ++i) c.w[i] = sum.w[i];
      llcStoreWeakV4(reinterpret_cast<char*>(p.recvBuf[me]) + publishOffset + 16ull * s, c);
    }
  }
  if constexpr (kPull) {
    // The publish flag (llcPullagFlag): bar.sync, so every thread's publish stores are ordered before thread 0's
    // release store (the release is cumulative over what bar.sync made visible to thread 0: llcBlockRingSignal's
    // argument). Every owner stores it, with an empty part too (the last parts of a short channel): every peer waits
    // for every owner's flag (below), which the overwrite arguments need. Uniform: the whole launch runs this kernel,
    // so every thread of the block reaches this bar.sync.
    __syncthreads();
    if (threadIdx.x == 0) llcStoreReleaseSys(llcPullagFlag(p.scratch[me], ch.index, ch.half()), ch.epoch);
  }
  // All-gather, receive side (armed in both kernels).
  Sig::arm(waiter, ch);
  if constexpr (!kPull) {
    for (llc_u32 s = threadIdx.x; s < slotsPerPart; s += blockDim.x) {
      for (llc_u32 k = 1; k < n; ++k) {
        const llc_u32 o = me + k < n ? me + k : me + k - n;
        const LlcRange part = llcPieceAt(chanElems, partElems, o);
        if (16ull * s >= part.size() * eb) continue;
        const Value r = ag.recv(o, s); // re-arms the AG slot
        llcStorePayload<DT, 4>(call.output + part.begin * eb, 16ull * s, part.size() * eb, r.w);
      }
    }
  } else {
    // Pull: wait for every owner's flag, then pull the owners' parts.
    // Thread t < n - 1 (t += blockDim.x) waits for the (1 + t)-th owner after me, all owners at once (their acquire
    // loads in flight together, one thread each); then bar.sync. Acquire: everything owner o stored before its
    // release (its publish area) is visible to the waiting thread, and through the bar.sync below to every thread of
    // the block (llcBlockRingWait's argument). The wait is the data waiter's (deadline, error word, and armed: its
    // slow path looks at owner o's signature, so an owner that runs another call ends it with MISMATCH, not
    // TIMEOUT; a thread that gave up stops waiting and still reaches the bar.sync; what it then pulls is garbage, as
    // after any TIMEOUT, and the host reports the error, never the output). Reported as LLCOMM_WAIT_BARRIER (the
    // flag is a one-sided barrier; a kernel-only change adds no wait kind), slot = the flag's ring-row index.
    // Who publishes: every rank of a matched call runs this kernel for this launch (the host's choice is a function of
    // the call's count, nranks, bufferBytes and dtype, and of LLCOMM_TWOSHOT_ALLGATHER, which must be the same at
    // every rank). A rank running the push kernel against this one means another call (count or dtype: MISMATCH,
    // through the armed look here and Sig::arm on its side) or a different LLCOMM_TWOSHOT_ALLGATHER (the same
    // signature: both sides' waits end at their deadline, TIMEOUT); either way bounded, never a hang.
    // Equality is exact, and owner o's flag of this half is not overwritten before this read: o stores it next at
    // epoch + 2 or later (its next pull-kernel call of this channel and half; push-kernel calls and other algorithms
    // leave it alone), in a kernel after its epoch + 1 one, which ends only after it received this rank's epoch + 1
    // contribution (a pull-kernel call: this rank's epoch + 1 flag, as every peer waits for every owner; a push-kernel
    // call or another algorithm: an all-reduce's result at o needs every rank's input), sent after this kernel ended.
    // A stale flag (an older pull-kernel call's epoch) never equals this epoch: epochs of a channel only grow until
    // the u32 wrap, 2^32 - 2 calls of the channel away (channel.cuh), as for ring's flags.
    for (llc_u32 k = 1 + threadIdx.x; k < n; k += blockDim.x) {
      const llc_u32 o = me + k < n ? me + k : me + k - n;
      const llc_u32* flag = llcPullagFlag(p.scratch[o], ch.index, ch.half());
      LlcSpin spin;
      while (llcLoadAcquireSys(flag) != ch.epoch)
        if (!waiter.keepWaiting(spin, o, LLCOMM_WAIT_BARRIER, LLCOMM_MAX_RING_STEPS + ch.half())) break;
    }
    __syncthreads();
    // The pull: slot s of every owner's part by thread s (s += blockDim.x), kTwoshotPullBatch owners' loads in flight
    // before their stores. Strong loads (relaxed.sys, as oneshot-barrier's): ordered after the flag's acquire (thread
    // t + bar.sync), never served from a stale L1 line. Overwrite safety of owner o's publish area (half h, written at
    // epoch e; any algorithm that writes o's plain half h next does it at epoch e + 2 or later, from rank o itself or,
    // for ring, from o's predecessor j): j's epoch e + 2 kernel runs after its epoch e + 1 kernel ended, which needed
    // every rank's epoch e + 1 contribution (every algorithm and either twoshot kernel: an all-reduce's result at a
    // rank needs every rank's input; a pull-kernel call: the epoch e + 1 flag of every owner), and this rank
    // contributes to epoch e + 1 only in a later kernel than this one, after these loads have returned (kernel
    // boundaries order a rank's kernels; PDL: llcBeginCall's griddepcontrol.wait waits for the prior grid's completion
    // and memory flush, and no kernel triggers its dependents early; a graph replays the same kernels in the same
    // order, each reading its epoch anew). In place: part o's output bytes are written after owner o's flag, which o
    // released after receiving this rank's reduce-scatter value for them, loaded from the input before it was sent
    // (causally after the read).
    for (llc_u32 s = threadIdx.x; s < slotsPerPart; s += blockDim.x) {
      for (llc_u32 k0 = 1; k0 < n; k0 += kTwoshotPullBatch) {
        LlcWords4 got[kTwoshotPullBatch];
#pragma unroll
        for (int j = 0; j < kTwoshotPullBatch; ++j) {
          const llc_u32 k = k0 + j, o = me + k < n ? me + k : me + k - n;
          if (k < n && 16ull * s < llcPieceAt(chanElems, partElems, o).size() * eb)
            got[j] = llcLoadRelaxedSysV4(reinterpret_cast<const char*>(p.recvBuf[o] + publishOffset) + 16ull * s);
        }
#pragma unroll
        for (int j = 0; j < kTwoshotPullBatch; ++j) {
          const llc_u32 k = k0 + j, o = me + k < n ? me + k : me + k - n;
          const LlcRange part = llcPieceAt(chanElems, partElems, o);
          if (k < n && 16ull * s < part.size() * eb)
            llcStorePayload<DT, 4>(call.output + part.begin * eb, 16ull * s, part.size() * eb, got[j].w);
        }
      }
    }
  }
  // Every peer makes this call, else MISMATCH (tail check: signature.cuh).
  if constexpr (Sig::kTail)
    Sig::tail(p, me, ch);
  else if (!sigNow) {
    Sig::finish(p, me, ch, sig);
    Sig::deferCheck(p, me, ch, sigPrev);
  }
  ch.blockAdvanceEpoch();
}

#define LLCOMM_VARIANT_twoshot_sentinel(protocol, dtype, op)                                                        \
  extern "C" __global__ void __launch_bounds__(LLCOMM_THREADS, LLCOMM_MIN_BLOCKS_PER_SM)                           \
      LLCOMM_KERNEL_NAME(twoshot_sentinel, protocol, dtype, op)(const __grid_constant__ LlcommAllReduceParams p) {  \
    twoshotSentinelAllReduce<LLC_DT_##dtype, false>(p);                                                             \
  }
// The pull kernels: instantiations.def's LLCOMM_VARIANT(twoshot_sentinel_pull, ...) lines, the same algorithm
// (signature LLCOMM_SIG_ALG_TWOSHOT_SENTINEL) and source; kernel-table.ts lists them as allGather 'pull'.
#define LLCOMM_VARIANT_twoshot_sentinel_pull(protocol, dtype, op)                                                   \
  extern "C" __global__ void __launch_bounds__(LLCOMM_THREADS, LLCOMM_MIN_BLOCKS_PER_SM)                           \
      LLCOMM_KERNEL_NAME(twoshot_sentinel_pull, protocol, dtype, op)(                                               \
          const __grid_constant__ LlcommAllReduceParams p) {                                                        \
    twoshotSentinelAllReduce<LLC_DT_##dtype, true>(p);                                                              \
  }
#include "instantiations.def"
