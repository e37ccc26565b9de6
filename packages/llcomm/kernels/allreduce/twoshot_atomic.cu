// twoshot-atomic: reduce-scatter by NVLink atomics into LL128-style lines, then all-gather with LL8 packets.
// The channel's elements are split in nranks parts; part o lives in owner o's lines (31 data words per 128-byte
// line, word 0 a counter). Every rank adds its part-o words into owner o's lines with red.add; each warp then
// publishes its lines with one fence and a counter bump per line. The owner waits for counter == nranks (acquire),
// reads the sums, zeroes the line for epoch + 2, writes its output and broadcasts the words as LL8 packets (epoch in
// the flag). No barrier anywhere: the counter is the synchronization. Reduced once at the owner: every rank holds the
// owner's bits. f16/bf16 accumulate in f32 by default: a line of the loops below is then a pair of physical lines,
// low and high elements of each input word (atomic_lines.cuh, LLCOMM_ATOMIC_F32_LINES); the word indexing here is
// the same in both builds.
#include "llcomm/allreduce_common.cuh"
#include "llcomm/signature.cuh"
#include "llcomm/atomic_lines.cuh"
#include "llcomm/ll_buffer.cuh"

template <int DT>
__device__ __forceinline__ void twoshotAtomicAllReduce(const LlcommAllReduceParams& p) {
  using Value = typename LlBuffer<LlcLL8>::Value;
  constexpr llc_u32 eb = LlcDtype<DT>::kElemBytes;
  const LlcCall call = llcBeginCall<DT, LLCOMM_SIG_ALG_TWOSHOT_ATOMIC, LLCOMM_SIG_PROTOCOL_NONE>(p);
  if (call.bytes == 0) return; // empty channel: no exchange and no epoch step, identically on every rank
  const llc_u32 me = call.role.rank, n = p.nranks;
  LlcChannel ch(p.scratch[me], call.role.channel);
  LlcWaiter waiter(p.errorWord, p.timeoutNs, me, ch.epoch, ch.index);
  // Call signature (signature.cuh): published before the first data store, checked before the first receive.
  using Sig = LlcCallSignature<LLCOMM_SIG_ALG_TWOSHOT_ATOMIC, LLCOMM_SIG_PROTOCOL_NONE, DT>;
  Sig::blockPublish(p, me, ch);
  LlcAtomicLines<DT> lines;
  lines.recvBuf = p.recvBuf;
  lines.baseOffset = ch.regionOffset(p.ll128);
  lines.me = me;
  lines.nranks = n;
  lines.waiter = &waiter;
  const llc_u64 agLaneBytes = llcDivCount(p.ll.channelHalfBytes, n) / 16u * 16u;
  const LlBuffer<LlcLL8> ag = llcMakeBuffer<LlcLL8>(p.recvBuf, ch.regionOffset(p.ll), agLaneBytes, me, n, ch, &waiter);

  const llc_u64 chanElems = call.range.size();
  const llc_u64 partElems = llcPieceElems(chanElems, n, LLCOMM_ALIGN_BYTES / eb);
  const llc_u32 wordsPerPart = static_cast<llc_u32>(partElems * eb / 4u); // partElems * eb is a multiple of 16
  const llc_u32 linesPerPart = static_cast<llc_u32>(llcCeilDiv(wordsPerPart, LLCOMM_LINE_DATA_WORDS));
  const llc_u32 lane = threadIdx.x & 31u, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  // The owners with data: parts 0 .. active - 1 (part o begins at o * partElems; those past the channel's end are
  // empty, and of the rest only the last can be short). The loops below visit only these, so a small call at many
  // ranks (8 B at 64 ranks: one owner) walks one owner, not nranks. 32 bits hold the element counts: a launch moves at
  // most 2^31 bytes a rank (MAX_BUFFER_BYTES, options.ts; the kernel-table test checks the largest launch).
  const llc_u32 active =
      (static_cast<llc_u32>(chanElems) + static_cast<llc_u32>(partElems) - 1u) / static_cast<llc_u32>(partElems);
  const llc_u64 fullBytes = partElems * eb;
  const llc_u64 lastBytes = (chanElems - static_cast<llc_u64>(active - 1u) * partElems) * eb;
  const auto partBytesOf = [&](llc_u32 o) { return o + 1u < active ? fullBytes : lastBytes; };
  // Each rank visits the owners from its own part on (start, start + 1, ... mod active), so the ranks' adds and
  // polls start on different owners. A rank without a part (me >= active) starts at me mod active.
  const llc_u32 start = me < active ? me : me % active;
  const auto ownerAt = [&](llc_u32 k) { // k < active
    const llc_u32 o = start + k;
    return o < active ? o : o - active;
  };
  constexpr int kBatch = LLCOMM_RECV_BATCH;

  // Reduce-scatter: one warp per line; every rank (me included, into my own memory) adds its words to every line
  // the warp serves, then publishes them all with one fence (atomic_lines.cuh, warpPublish()). The input words of
  // kBatch owners are loaded before their adds: an add is an asm statement that clobbers memory, so a load placed
  // after it is issued after it, and one load per add costs an input round trip per owner.
  llc_u32 warpLines = 0; // lines of a part this warp serves: L = warp, warp + warps, ...
  for (llc_u32 L = warp; L < linesPerPart; L += warps, ++warpLines) {
    const llc_u32 w = L * LLCOMM_LINE_DATA_WORDS + lane - 1u; // this lane's word in the part (lane >= 1)
    const llc_u64 lineByte = static_cast<llc_u64>(L) * LLCOMM_LINE_DATA_WORDS * 4u;
    for (llc_u32 k0 = 0; k0 < active; k0 += kBatch) {
      llc_u32 word[kBatch];
#pragma unroll
      for (int j = 0; j < kBatch; ++j) {
        if (k0 + j >= active) break;
        const llc_u32 o = ownerAt(k0 + j);
        const llc_u64 partBytes = partBytesOf(o);
        word[j] = 0;
        if (lane >= 1 && 4ull * w < partBytes)
          llcLoadPayload<DT, 1>(call.input + o * partElems * eb, 4ull * w, partBytes, &word[j]);
      }
#pragma unroll
      for (int j = 0; j < kBatch; ++j) {
        if (k0 + j >= active) break;
        const llc_u32 o = ownerAt(k0 + j);
        const llc_u64 partBytes = partBytesOf(o);
        if (lineByte >= partBytes) continue; // warp-uniform
        lines.add(o, L, lane, lane >= 1 && 4ull * w < partBytes, word[j]);
      }
    }
  }
  // Pair i = (the warp's line i / active, owner ownerAt(i % active)): counted where the loop above added to it.
  lines.warpPublish(warpLines * active, lane, [&](llc_u32 i, llc_u32& owner, llc_u32& index) {
    const llc_u32 q = i / active;
    owner = ownerAt(i - q * active);
    index = warp + q * warps;
    return static_cast<llc_u64>(index) * LLCOMM_LINE_DATA_WORDS * 4u < partBytesOf(owner);
  });
  Sig::blockCheck(p, me, ch); // every peer makes this call, else MISMATCH
  // Owner: wait for each of my lines, re-arm it, write and broadcast the sums.
  const LlcRange mine = llcPieceAt(chanElems, partElems, me);
  const llc_u64 mineBytes = mine.size() * eb;
  for (llc_u32 L = warp; static_cast<llc_u64>(L) * LLCOMM_LINE_DATA_WORDS * 4u < mineBytes; L += warps) {
    const llc_u32 w = L * LLCOMM_LINE_DATA_WORDS + lane - 1u;
    const bool hasWord = lane >= 1 && 4ull * w < mineBytes;
    Value sum;
    sum.w[0] = lines.warpRecv(L, lane);
    lines.warpReset(L, lane); // zero data and counter for epoch + 2 (ordering argument in warpReset())
    if (hasWord) {
      llcStorePayload<DT, 1>(call.output + mine.begin * eb, 4ull * w, mineBytes, sum.w);
      ag.bcast(w, sum);
    }
  }
  // All-gather, receive side: word w of every other owner's part, one LL8 packet each. kBatch owners are polled
  // together (LlBuffer::pollBatch: every load issued before any is inspected), one round trip a batch instead of one
  // an owner. LL8: the flag carries the epoch, no re-arm.
  const llc_u32 kFirst = me < active ? 1u : 0u; // ownerAt(0) is me when I own a part
  for (llc_u32 w = threadIdx.x; w < wordsPerPart; w += blockDim.x) {
    const bool inLast = 4ull * w < lastBytes; // every full part has word w (w < wordsPerPart); the last part may not
    for (llc_u32 k0 = kFirst; k0 < active; k0 += kBatch) {
      if (k0 + 1u == active) { // one owner left (every batch at 2 ranks, and small calls): no batch to overlap
        // (the 8-wide poll's address and predicate arithmetic cost 2 ranks 8 KB ~0.7 us, 951 -> 1,210 instructions a
        // warp: bench/results/cuda-h200-ab-twoshot-atomic-batch-2026-12-03.txt)
        const llc_u32 o = ownerAt(k0);
        if (o + 1u < active || inLast) {
          const Value r = ag.recv(o, w);
          llcStorePayload<DT, 1>(call.output + o * partElems * eb, 4ull * w, partBytesOf(o), r.w);
        }
        break;
      }
      llc_u32 want = 0;
#pragma unroll
      for (int j = 0; j < kBatch; ++j) {
        if (k0 + j >= active) break;
        if (ownerAt(k0 + j) + 1u < active || inLast) want |= 1u << j;
      }
      Value got[kBatch];
      llc_u32 pending = want;
      LlcSpin spin;
      while (pending != 0) {
        pending = ag.pollBatch<kBatch>(pending, [&](int j) { return ag.slotPtr(me, ownerAt(k0 + j), w); }, got);
        if (pending != 0 && !waiter.keepWaiting(spin, ownerAt(k0 + __ffs(pending) - 1), LlcLL8::kWhat, w)) break;
      }
#pragma unroll
      for (int j = 0; j < kBatch; ++j) {
        if (!((want >> j) & 1u)) continue;
        const llc_u32 o = ownerAt(k0 + j);
        llcStorePayload<DT, 1>(call.output + o * partElems * eb, 4ull * w, partBytesOf(o), got[j].w);
      }
    }
  }
  ch.blockAdvanceEpoch();
}

#define LLCOMM_VARIANT_twoshot_atomic(protocol, dtype, op)                                                          \
  extern "C" __global__ void __launch_bounds__(LLCOMM_THREADS, LLCOMM_MIN_BLOCKS_PER_SM)                           \
      LLCOMM_KERNEL_NAME(twoshot_atomic, protocol, dtype, op)(const __grid_constant__ LlcommAllReduceParams p) {    \
    twoshotAtomicAllReduce<LLC_DT_##dtype>(p);                                                                      \
  }
#include "instantiations.def"
