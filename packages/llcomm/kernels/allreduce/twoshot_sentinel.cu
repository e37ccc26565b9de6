// twoshot-sentinel: reduce-scatter then all-gather over sentinel slots. The channel's elements are split in nranks
// parts; part o is owned by rank o. Every rank sends part o of its input to owner o (RS lanes); the owner reduces
// all lanes in rank order once, writes its output and broadcasts the result (AG lanes); every rank writes the
// owners' results. Reduce once at the owner, so all ranks hold the same bits. Double buffered by epoch parity.
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

template <int DT>
__device__ __forceinline__ void twoshotSentinelAllReduce(const LlcommAllReduceParams& p) {
  using Fmt = LlcSentinel<DT>;
  using Value = typename LlBuffer<Fmt>::Value;
  constexpr llc_u32 eb = LlcDtype<DT>::kElemBytes;
  const LlcCall call = llcBeginCall<DT>(p);
  if (call.bytes == 0) return; // empty channel: no exchange and no epoch step, identically on every rank
  const llc_u32 me = call.role.rank, n = p.nranks;
  // The element split and the path need no epoch: computed before the epoch load, so that the spread path's first
  // input loads are in flight together with it (below).
  const llc_u64 chanElems = call.range.size();
  const llc_u64 partElems = llcPieceElems(chanElems, n, LLCOMM_ALIGN_BYTES / eb);
  const llc_u32 slotsPerPart = static_cast<llc_u32>(llcCeilDiv(partElems * eb, 16u));
  const LlcRange mine = llcPieceAt(chanElems, partElems, me);
  const llc_u64 mineBytes = mine.size() * eb;
  const llc_u32 mineSlots = static_cast<llc_u32>(llcCeilDiv(mineBytes, 16u));
  // Spread path: thread t serves slot t % slotsPerPart of every part for the peers k = 1 + t / slotsPerPart +
  // j * groups (k-th owner after me when sending, k-th owner after me when receiving). spreadGroups > 1 implies
  // n >= 4 and at least 4 threads a slot, so groups >= 3, and that the owner's word-spread reduce has a thread per
  // word (4 * slots <= blockDim.x; tested too, for a smaller LLCOMM_SPREAD_MIN_GROUPS). Parts of more slots take the
  // serial path. In-place safety no longer rests on one thread per slot: the output word of part o != me, slot s is
  // written after this rank receives owner o's all-gather value for it, which owner o sends only after receiving
  // this rank's reduce-scatter value for it, which was loaded from the input before it was sent: the write is
  // causally after the read, whichever threads do them; part me's output word is written by the thread that loaded
  // its input word (program order), and no other thread reads part me of the input.
  const bool spread = llcSpreadGroups(n, slotsPerPart, 4u) > 1 && 4u * slotsPerPart <= blockDim.x; // uniform
  const llc_u32 groups = spread ? (blockDim.x / slotsPerPart < n - 1 ? blockDim.x / slotsPerPart : n - 1) : 1u;
  const llc_u32 t = threadIdx.x;
  const bool sender = spread && t < groups * slotsPerPart;
  const llc_u32 s = sender ? t % slotsPerPart : 0u, first = sender ? 1u + t / slotsPerPart : n;
  const auto ownerOf = [&](llc_u32 k) { return me + k < n ? me + k : me + k - n; };
  // Reduce-scatter, send side: the input loads of kTwoshotSpreadBatch owners issued before their sends (a send is
  // an asm store with a memory clobber: a load after it would wait for it).
  Value x[kTwoshotSpreadBatch];
  const auto loadBatch = [&](llc_u32 k0) {
#pragma unroll
    for (int j = 0; j < kTwoshotSpreadBatch; ++j) {
      const llc_u32 k = k0 + j * groups;
      const LlcRange part = llcPieceAt(chanElems, partElems, ownerOf(k));
      if (k < n && 16ull * s < part.size() * eb)
        llcLoadPayload<DT, 4>(call.input + part.begin * eb, 16ull * s, part.size() * eb, x[j].w);
    }
  };
  // The owner's word-spread reduce (LlBuffer::blockRecvReduceSpreadWords): thread t holds word t % 4 of slot t / 4
  // of my part.
  const llc_u32 ownSlot = t / 4u, ownWord = t % 4u;
  const llc_u64 ownOffset = 16ull * ownSlot + 4u * ownWord;
  llc_u32 own = 0; // words past the end of my part are 0, as llcLoadPayload's tail gives them
  // Issued before the epoch load (LlcChannel's constructor): the first batch of the reduce-scatter's input and my
  // own input word. They depend on the call only (pointers, element split), not on the epoch, so the input round trip
  // and the epoch word's overlap instead of following each other (the epoch gives every send's address). Ordering:
  // the input is the caller's, written before this kernel (stream order); reading it earlier within the kernel
  // reads the same bytes. In place, the output words that alias it are written only after the exchanges (above).
  if (spread) {
    loadBatch(first);
    if (ownOffset < mineBytes) llcLoadPayload<DT, 1>(call.input + mine.begin * eb, ownOffset, mineBytes, &own);
  }
  LlcChannel ch(p.scratch[me], call.role.channel);
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
    LLC_SHARED_WORDS(stage, LLCOMM_PEER_STAGE_WORDS);
    for (llc_u32 k0 = first; k0 < n; k0 += kTwoshotSpreadBatch * groups) {
      if (k0 != first) loadBatch(k0); // the first batch was loaded before the epoch
#pragma unroll
      for (int j = 0; j < kTwoshotSpreadBatch; ++j) {
        const llc_u32 k = k0 + j * groups;
        const LlcRange part = llcPieceAt(chanElems, partElems, ownerOf(k));
        if (k < n && 16ull * s < part.size() * eb) rs.send(ownerOf(k), s, x[j]);
      }
    }
    // The signature: every data wait from here on is armed (signature.cuh, arm: a peer whose call never sends what
    // a wait expects ends it with MISMATCH, not TIMEOUT), and the checker threads check every peer in full after
    // the owner's broadcast, before the all-gather's polls (below).
    Sig::arm(waiter, ch);
    // Owner: my part's words reduced block-wide (LlBuffer::blockRecvReduceSpreadWords: pollers re-arm what they
    // read; rank order 0..n-1 in f32 element by element, so the same bits as the serial path), and each reducing
    // thread broadcasts its own word at once: no __syncthreads between the sums and the broadcast (the slot-wide
    // broadcast needed two, to pass the sums through the stage), and the broadcast is the only thing between a
    // reducing thread's sum and the peers' all-gather polls. Each peer's slot is written by the 4 threads of its
    // words (LlBuffer::sendWord: why that is as safe as one v4 store).
    if (mineSlots > 0) { // uniform; 0 < mineSlots <= slotsPerPart, so spreadGroups(mineSlots) > 1
      const llc_u32 sum = rs.template blockRecvReduceSpreadWords<DT, kTwoshotSpreadBatch>(
          mineSlots, rs.spreadGroups(mineSlots), own, stage, [] {});
      if (t < 4u * mineSlots) {
        const llc_u32 w = Fmt::canonicalize(sum); // my output = the bits peers receive
        ag.bcastWord(ownSlot, ownWord, w);
        if (ownOffset < mineBytes) llcStorePayload<DT, 1>(call.output + mine.begin * eb, ownOffset, mineBytes, &w);
      }
    }
    // The checkers (top of the block) check every peer (every peer makes this call, else MISMATCH) after the
    // reduce-scatter's polls and their own broadcast words, so the packet load's round trip overlaps the all-gather
    // exchange instead of standing between the sums and the broadcast; an owner without data (the last parts of a
    // short channel) checks here all the same. A MISMATCH it records ends the armed all-gather waits at their next
    // look at the error word; the block's last __syncthreads (blockAdvanceEpoch) waits for it.
    if constexpr (Sig::kDeferred)
      Sig::deferCheck(p, me, ch, sigPrev);
    else
      Sig::blockCheck(p, me, ch);
    // All-gather, receive side: kTwoshotSpreadBatch owners of this thread polled together (every load before any
    // inspection: LlBuffer::pollBatch). The threads that reduced nothing start these polls right after the owner's
    // last __syncthreads.
    for (llc_u32 k0 = first; k0 < n; k0 += kTwoshotSpreadBatch * groups) {
      llc_u32 want = 0;
#pragma unroll
      for (int j = 0; j < kTwoshotSpreadBatch; ++j) {
        const llc_u32 k = k0 + j * groups;
        if (k < n && 16ull * s < llcPieceAt(chanElems, partElems, ownerOf(k)).size() * eb) want |= 1u << j;
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
        const LlcRange part = llcPieceAt(chanElems, partElems, ownerOf(k0 + j * groups));
        llcStorePayload<DT, 4>(call.output + part.begin * eb, 16ull * s, part.size() * eb, got[j].w);
        // The thread that read the slot re-arms it, after its read; ordering argument at Fmt::rearm() (sentinel.cuh).
        if (Fmt::kRearm) Fmt::rearm(slotOf(j));
      }
    }
    ch.blockAdvanceEpoch();
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
  const bool sigNow = !Sig::kTail && 16ull * threadIdx.x >= mineBytes;
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
  // Owner: reduce my part, write it, broadcast it.
  for (llc_u32 s = threadIdx.x; 16ull * s < mineBytes; s += blockDim.x) {
    llcLoadPayload<DT, 4>(call.input + mine.begin * eb, 16ull * s, mineBytes, v.w);
    Value sum = rs.template recvReduce<DT>(s, v); // rank order 0..n-1; re-arms the RS slots it read
#pragma unroll
    for (int i = 0; i < 4; ++i) sum.w[i] = Fmt::canonicalize(sum.w[i]); // my output = the bits peers receive
    llcStorePayload<DT, 4>(call.output + mine.begin * eb, 16ull * s, mineBytes, sum.w);
    ag.bcast(s, sum);
  }
  // All-gather, receive side.
  Sig::arm(waiter, ch);
  for (llc_u32 s = threadIdx.x; s < slotsPerPart; s += blockDim.x) {
    for (llc_u32 k = 1; k < n; ++k) {
      const llc_u32 o = me + k < n ? me + k : me + k - n;
      const LlcRange part = llcPieceAt(chanElems, partElems, o);
      if (16ull * s >= part.size() * eb) continue;
      const Value r = ag.recv(o, s); // re-arms the AG slot
      llcStorePayload<DT, 4>(call.output + part.begin * eb, 16ull * s, part.size() * eb, r.w);
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
    twoshotSentinelAllReduce<LLC_DT_##dtype>(p);                                                                    \
  }
#include "instantiations.def"
