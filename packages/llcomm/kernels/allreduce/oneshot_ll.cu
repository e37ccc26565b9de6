// oneshot-ll: every rank broadcasts its input as LL packets (LL16 or LL8) into every peer's lane, then every rank
// receives all lanes and reduces them in rank order. Barrier-free: the flag in each packet carries the epoch, and
// the buffer half alternates with the epoch's parity (double buffering with bidirectional acknowledgement).
#include "llcomm/allreduce_common.cuh"
#include "llcomm/signature.cuh"
#include "llcomm/ll_buffer.cuh"

template <class Fmt, int DT>
__device__ __forceinline__ void oneshotLlAllReduce(const LlcommAllReduceParams& p) {
  const LlcCall call = llcBeginCall<DT, LLCOMM_SIG_ALG_ONESHOT_LL, (Fmt::kSlotBytes == 16 ? LLCOMM_SIG_PROTOCOL_LL16 : LLCOMM_SIG_PROTOCOL_LL8)>(p);
  if (call.bytes == 0) return; // empty channel: no exchange and no epoch step, identically on every rank
  constexpr int W = Fmt::kWords;
  const llc_u32 slots = static_cast<llc_u32>(llcCeilDiv(call.bytes, 4u * W));
  // This thread's first slot of input is loaded before the channel's epoch, so the two loads are in flight together.
  // Loaded after it, the input load waited behind the epoch's first use (the compiler puts epoch + 1 right after the
  // load): a second round trip before the first send, 0.08-0.1 us at 2 ranks, 8 B-2 KB (research/notes/NOTES.md, fifth
  // session). Ordering: like every input read, it comes after llcBeginCall's wait for the prior grid (PDL); a weak
  // load is enough, since the input is stable for the whole kernel (in place, a slot's output is stored only after
  // that slot's input was read by the same thread).
  typename LlBuffer<Fmt>::Value next{};
  if (threadIdx.x < slots) llcLoadPayload<DT, W>(call.input, 4ull * W * threadIdx.x, call.bytes, next.w);
  LlcChannel ch(p.scratch[call.role.rank], call.role.channel);
  LlcWaiter waiter(p.errorWord, p.timeoutNs, call.role.rank, ch.epoch, ch.index);
  // Call signature (signature.cuh): published and checked by the threads at the top of the block (no data at small
  // messages); the data waits look at their peer's signature in their slow path.
  constexpr llc_u32 kSigProtocol = Fmt::kSlotBytes == 16 ? LLCOMM_SIG_PROTOCOL_LL16 : LLCOMM_SIG_PROTOCOL_LL8;
  using Sig = LlcCallSignature<LLCOMM_SIG_ALG_ONESHOT_LL, kSigProtocol, DT>;
  // LLCOMM_SIG_DEFERRED: the checkers' loads of the previous epoch's packets, compared after the sends (deferCheck).
  LlcSigPrev sigPrev;
  Sig::deferLoad(p, call.role.rank, ch, sigPrev);
  Sig::blockPublish(p, call.role.rank, ch);
  const llc_u64 laneBytes = llcDivCount(p.ll.channelHalfBytes, p.nranks) / 16u * 16u;
  const LlBuffer<Fmt> buf =
      llcMakeBuffer<Fmt>(p.recvBuf, ch.regionOffset(p.ll), laneBytes, call.role.rank, p.nranks, ch, &waiter);
  typename LlBuffer<Fmt>::Value v{};
  const llc_u32 groups = buf.spreadGroups(slots); // uniform over the block
  if (groups > 1) {
    // Small message: (slot, peer) pairs spread over the block's threads (ll_buffer.cuh, blockRecvReduceSpread).
    LLC_SHARED_WORDS(stage, LLCOMM_PEER_STAGE_WORDS);
    buf.blockBcastSpread(slots, groups, [&](llc_u32 s, typename LlBuffer<Fmt>::Value& x) {
      if (s == threadIdx.x)
        x = next; // loaded before the epoch
      else
        llcLoadPayload<DT, W>(call.input, 4ull * W * s, call.bytes, x.w);
    });
    Sig::deferCheck(p, call.role.rank, ch, sigPrev);
    const llc_u32 s = threadIdx.x;
    if (s < slots) v = next; // own contribution, loaded before the epoch
    // The signature: a checker thread that polls nothing looks for its peer's packet beside the polls (a bounded
    // number of looks, no loop state: signature.cuh, tryCheck); one that polls, or found nothing yet, checks in full
    // after the polls.
    bool sigChecked = false;
    const typename LlBuffer<Fmt>::Value sum = buf.template blockRecvReduceSpread<DT>(
        slots, groups, v, stage,
        [&] { sigChecked = Sig::template tryCheck<LLCOMM_SIG_TRY_LOOKS>(p, call.role.rank, ch); },
        [&] {
          if constexpr (!Sig::kDeferred)
            if (!sigChecked) Sig::blockCheck(p, call.role.rank, ch);
        });
    if (s < slots) llcStorePayload<DT, W>(call.output, 4ull * W * s, call.bytes, sum.w);
    ch.blockAdvanceEpoch();
    return;
  }
  // Serial path: the data waits look at their peer's signature in their slow path (signature.cuh, arm); a peer that
  // never sends what they wait for ends them with MISMATCH, although the exact check comes after the receives.
  Sig::arm(waiter, ch);
  for (llc_u32 s = threadIdx.x; s < slots; s += blockDim.x) {
    v = next; // loaded one iteration ahead (the first before the epoch), so the load overlaps the sends
    if (s + blockDim.x < slots) llcLoadPayload<DT, W>(call.input, 4ull * W * (s + blockDim.x), call.bytes, next.w);
    buf.bcast(s, v);
  }
  Sig::deferCheck(p, call.role.rank, ch, sigPrev);
  LlcSigPacket sig;
  if constexpr (!Sig::kTail) Sig::prefetch(p, call.role.rank, ch, sig); // LLCOMM_SIG_R2: overlaps the receives
  for (llc_u32 s = threadIdx.x; s < slots; s += blockDim.x) {
    llcLoadPayload<DT, W>(call.input, 4ull * W * s, call.bytes, v.w); // own contribution (same thread as above)
    const typename LlBuffer<Fmt>::Value sum = buf.template recvReduce<DT>(s, v);
    llcStorePayload<DT, W>(call.output, 4ull * W * s, call.bytes, sum.w);
  }
  // Every peer makes this call, else MISMATCH: the tail check (threads 0..n-2, after their stores; signature.cuh),
  // or with LLCOMM_SIG_R2 the checker threads' finish of the prefetched load.
  if constexpr (Sig::kTail)
    Sig::tail(p, call.role.rank, ch);
  else
    Sig::finish(p, call.role.rank, ch, sig);
  ch.blockAdvanceEpoch();
}

#define LLC_FMT_ll16 LlcLL16
#define LLC_FMT_ll8 LlcLL8
#define LLCOMM_VARIANT_oneshot_ll(protocol, dtype, op)                                                              \
  extern "C" __global__ void __launch_bounds__(LLCOMM_THREADS, LLCOMM_MIN_BLOCKS_PER_SM)                           \
      LLCOMM_KERNEL_NAME(oneshot_ll, protocol, dtype, op)(const __grid_constant__ LlcommAllReduceParams p) {        \
    oneshotLlAllReduce<LLC_FMT_##protocol, LLC_DT_##dtype>(p);                                                      \
  }
#include "instantiations.def"
