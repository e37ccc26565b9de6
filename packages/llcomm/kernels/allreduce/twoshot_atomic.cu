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
  const LlcCall call = llcBeginCall<DT>(p);
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

  // Reduce-scatter: one warp per line; every rank (me included, into my own memory) adds its words to every line
  // the warp serves, then publishes them all with one fence (atomic_lines.cuh, warpPublish()).
  llc_u32 warpLines = 0; // lines of a part this warp serves: L = warp, warp + warps, ...
  for (llc_u32 L = warp; L < linesPerPart; L += warps, ++warpLines) {
    const llc_u32 w = L * LLCOMM_LINE_DATA_WORDS + lane - 1u; // this lane's word in the part (lane >= 1)
    for (llc_u32 k = 0; k < n; ++k) {
      const llc_u32 o = me + k < n ? me + k : me + k - n;
      const LlcRange part = llcPieceAt(chanElems, partElems, o);
      const llc_u64 partBytes = part.size() * eb;
      if (static_cast<llc_u64>(L) * LLCOMM_LINE_DATA_WORDS * 4u >= partBytes) continue; // warp-uniform
      const bool hasWord = lane >= 1 && 4ull * w < partBytes;
      llc_u32 word = 0;
      if (hasWord) llcLoadPayload<DT, 1>(call.input + part.begin * eb, 4ull * w, partBytes, &word);
      lines.add(o, L, lane, hasWord, word);
    }
  }
  // Pair i = (the warp's line i / n, owner me + i % n): counted where the loop above added to it.
  lines.warpPublish(warpLines * n, lane, [&](llc_u32 i, llc_u32& owner, llc_u32& index) {
    const llc_u32 k = i % n;
    owner = me + k < n ? me + k : me + k - n;
    index = warp + (i / n) * warps;
    const LlcRange part = llcPieceAt(chanElems, partElems, owner);
    return static_cast<llc_u64>(index) * LLCOMM_LINE_DATA_WORDS * 4u < part.size() * eb;
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
  // All-gather, receive side: word w of owner o's part, one LL8 packet each.
  for (llc_u32 w = threadIdx.x; w < wordsPerPart; w += blockDim.x) {
    for (llc_u32 k = 1; k < n; ++k) {
      const llc_u32 o = me + k < n ? me + k : me + k - n;
      const LlcRange part = llcPieceAt(chanElems, partElems, o);
      const llc_u64 partBytes = part.size() * eb;
      if (4ull * w >= partBytes) continue;
      const Value r = ag.recv(o, w);
      llcStorePayload<DT, 1>(call.output + part.begin * eb, 4ull * w, partBytes, r.w);
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
