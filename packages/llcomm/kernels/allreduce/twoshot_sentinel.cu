// twoshot-sentinel: reduce-scatter then all-gather over sentinel slots. The channel's elements are split in nranks
// parts; part o is owned by rank o. Every rank sends part o of its input to owner o (RS lanes); the owner reduces
// all lanes in rank order once, writes its output and broadcasts the result (AG lanes); every rank writes the
// owners' results. Reduce once at the owner, so all ranks hold the same bits. Double buffered by epoch parity.
#include "llcomm/allreduce_common.cuh"
#include "llcomm/signature.cuh"
#include "llcomm/ll_buffer.cuh"

template <int DT>
__device__ __forceinline__ void twoshotSentinelAllReduce(const LlcommAllReduceParams& p) {
  using Fmt = LlcSentinel<DT>;
  using Value = typename LlBuffer<Fmt>::Value;
  constexpr llc_u32 eb = LlcDtype<DT>::kElemBytes;
  const LlcCall call = llcBeginCall<DT>(p);
  if (call.bytes == 0) return; // empty channel: no exchange and no epoch step, identically on every rank
  const llc_u32 me = call.role.rank, n = p.nranks;
  LlcChannel ch(p.scratch[me], call.role.channel);
  LlcWaiter waiter(p.errorWord, p.timeoutNs, me, ch.epoch, ch.index);
  // Call signature (signature.cuh): published and checked by the threads at the top of the block (no data at small
  // messages): the load issued before the receives, inspected after them.
  using Sig = LlcCallSignature<LLCOMM_SIG_ALG_TWOSHOT_SENTINEL, LLCOMM_SIG_PROTOCOL_NONE, DT>;
  Sig::blockPublish(p, me, ch);
  // The channel-half of the sentinel region holds 2 * nranks lanes: RS lanes first, then AG lanes.
  const llc_u64 laneBytes = llcDivCount(p.sentinel.channelHalfBytes, 2u * n) / 16u * 16u;
  const llc_u64 base = ch.regionOffset(p.sentinel);
  const LlBuffer<Fmt> rs = llcMakeBuffer<Fmt>(p.recvBuf, base, laneBytes, me, n, ch, &waiter);
  const LlBuffer<Fmt> ag = llcMakeBuffer<Fmt>(p.recvBuf, base + n * laneBytes, laneBytes, me, n, ch, &waiter);
  const llc_u64 chanElems = call.range.size();
  const llc_u64 partElems = llcPieceElems(chanElems, n, LLCOMM_ALIGN_BYTES / eb);
  const llc_u32 slotsPerPart = static_cast<llc_u32>(llcCeilDiv(partElems * eb, 16u));
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
  const LlcRange mine = llcPieceAt(chanElems, partElems, me);
  const llc_u64 mineBytes = mine.size() * eb;
  // The signature: a checker thread with nothing to reduce (small messages) checks now, beside the data path (the
  // bounded check also ends the data waits of the 16-bit kernels, which are not armed in the reduce-scatter, when a
  // peer never sends); one with slots to reduce loads the packet now and inspects it after the receives.
  // Default (Sig::kTail): nothing here; threads 0..n-2 check at the tail, after their stores, and every data wait is
  // armed. LLCOMM_SIG_R2 (round 2's placement):
  LlcSigPacket sig;
  const bool sigNow = !Sig::kTail && 16ull * threadIdx.x >= mineBytes;
  if constexpr (!Sig::kTail) {
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
  else if (!sigNow)
    Sig::finish(p, me, ch, sig);
  ch.blockAdvanceEpoch();
}

#define LLCOMM_VARIANT_twoshot_sentinel(protocol, dtype, op)                                                        \
  extern "C" __global__ void __launch_bounds__(LLCOMM_THREADS, LLCOMM_MIN_BLOCKS_PER_SM)                           \
      LLCOMM_KERNEL_NAME(twoshot_sentinel, protocol, dtype, op)(const __grid_constant__ LlcommAllReduceParams p) {  \
    twoshotSentinelAllReduce<LLC_DT_##dtype>(p);                                                                    \
  }
#include "instantiations.def"
