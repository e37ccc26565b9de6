// oneshot-sentinel: like oneshot-ll, but slots hold plain data (full payload efficiency) in a buffer pre-filled
// with the sentinel pattern; the receiver polls until no element is the sentinel, then re-arms the slot. Senders
// canonicalize user values equal to the sentinel to the dtype's quiet NaN. Double buffered by epoch parity.
#include "llcomm/allreduce_common.cuh"
#include "llcomm/signature.cuh"
#include "llcomm/ll_buffer.cuh"

template <int DT>
__device__ __forceinline__ void oneshotSentinelAllReduce(const LlcommAllReduceParams& p) {
  // 16-bit arrival test: the OR of exact per-half sentinel bits (dtype.cuh; faster here, slower in twoshot-sentinel)
  using Fmt = LlcSentinel<DT, true>;
  const LlcCall call = llcBeginCall<DT, LLCOMM_SIG_ALG_ONESHOT_SENTINEL, LLCOMM_SIG_PROTOCOL_NONE>(p);
  if (call.bytes == 0) return; // empty channel: no exchange and no epoch step, identically on every rank
  const llc_u32 slots = static_cast<llc_u32>(llcCeilDiv(call.bytes, 16u));
  // This thread's first slot of input is loaded before the channel's epoch (as in oneshot_ll.cu).
  typename LlBuffer<Fmt>::Value next{};
  if (threadIdx.x < slots) llcLoadPayload<DT, 4>(call.input, 16ull * threadIdx.x, call.bytes, next.w);
  LlcChannel ch(p.scratch[call.role.rank], call.role.channel);
  LlcWaiter waiter(p.errorWord, p.timeoutNs, call.role.rank, ch.epoch, ch.index);
  // Call signature (signature.cuh): published and checked by the threads at the top of the block (no data at small
  // messages).
  using Sig = LlcCallSignature<LLCOMM_SIG_ALG_ONESHOT_SENTINEL, LLCOMM_SIG_PROTOCOL_NONE, DT>;
  // The peer-parallel path's looks at the signature: a poll loop for f32; 32 unrolled looks (straight-line code, 32
  // dependent round trips, meant to outlast a small message's data waits: not measured) for the 16-bit kernels, whose peer-parallel path is
  // at the 128-register cap (any loop there spilled).
  constexpr llc_u32 kSigLooks = LlcDtype<DT>::kElemBytes == 4 ? LLCOMM_SIG_TRY_LOOKS : 32u;
  // LLCOMM_SIG_DEFERRED: the checkers' loads of the previous epoch's packets, compared after the sends (deferCheck).
  LlcSigPrev sigPrev;
  Sig::deferLoad(p, call.role.rank, ch, sigPrev);
  Sig::blockPublish(p, call.role.rank, ch);
  const llc_u64 laneBytes = llcDivCount(p.sentinel.channelHalfBytes, p.nranks) / 16u * 16u;
  const LlBuffer<Fmt> buf =
      llcMakeBuffer<Fmt>(p.recvBuf, ch.regionOffset(p.sentinel), laneBytes, call.role.rank, p.nranks, ch, &waiter);
  typename LlBuffer<Fmt>::Value v{};
  const llc_u32 groups = buf.spreadGroups(slots); // uniform over the block
  if (groups > 1) {
    // Small message: (slot, peer) pairs spread over the block's threads (ll_buffer.cuh, blockRecvReduceSpread); each
    // slot is re-armed by the thread that read it, as in recvReduce.
    LLC_SHARED_WORDS(stage, LLCOMM_PEER_STAGE_WORDS);
    buf.blockBcastSpread(slots, groups, [&](llc_u32 s, typename LlBuffer<Fmt>::Value& x) {
      if (s == threadIdx.x)
        x = next; // loaded before the epoch
      else
        llcLoadPayload<DT, 4>(call.input, 16ull * s, call.bytes, x.w);
    });
    // The reduce is spread over words (LlBuffer::blockRecvReduceSpreadWords, as twoshot-sentinel's owner reduce):
    // thread t < 4 * slots sums word t % 4 of slot t / 4 over the ranks in rank order, 2 elements a rank for 16-bit
    // types instead of a thread a slot summing 8: the same f32 chain per element, so the same bits. Measured (one
    // H200, bf16, bench/results/cuda-h200-scale-ab-small-2026-12-02.txt): 8 B 3.80 -> 3.43 us at 8 ranks, 4.35 ->
    // 3.66 at 16, 5.40 -> 4.11 at 32, 7.05 -> 4.49 at 64 (one thread summed every rank before); 32 ranks 8 KB
    // 9.93 -> 8.96; 8 ranks 8 KB 4.26 -> 4.36 (the one loss). Its own word is loaded here, after the epoch (the
    // slot-sized `next` above still feeds this thread's first send).
    Sig::deferCheck(p, call.role.rank, ch, sigPrev);
    const llc_u32 t = threadIdx.x;
    const bool hasWord = t < 4u * slots && 4ull * t < call.bytes; // words past the message: never stored
    llc_u32 ownWord = 0;
    if (hasWord) llcLoadPayload<DT, 1>(call.input, 4ull * t, call.bytes, &ownWord);
    // The signature: a checker thread that polls nothing looks for its peer's packet beside the polls (a bounded
    // number of looks, no loop state: signature.cuh, tryCheck); one that polls, or found nothing yet, checks in full
    // after the polls.
    bool sigChecked = false;
    // Peers polled together: the default 8, but 4 for f32 (that kernel spilled 8 bytes with 8; ptxas, sm_90).
    const llc_u32 sum = buf.template blockRecvReduceSpreadWords<DT, (LlcDtype<DT>::kElemBytes == 4 ? 4 : LLCOMM_RECV_BATCH)>(
        slots, groups, ownWord, stage, [&] { sigChecked = Sig::template tryCheck<kSigLooks>(p, call.role.rank, ch); });
    if constexpr (!Sig::kDeferred)
      if (!sigChecked) Sig::blockCheck(p, call.role.rank, ch);
    if (hasWord) llcStorePayload<DT, 1>(call.output, 4ull * t, call.bytes, &sum);
    ch.blockAdvanceEpoch();
    return;
  }
  for (llc_u32 s = threadIdx.x; s < slots; s += blockDim.x) {
    v = next; // loaded one iteration ahead (the first before the epoch), so the load overlaps the sends
    if (s + blockDim.x < slots) llcLoadPayload<DT, 4>(call.input, 16ull * (s + blockDim.x), call.bytes, next.w);
    buf.bcast(s, v);
  }
  // The checker threads' bounded check before their receives (the serial path's data waits are not armed: arming
  // them spilled the 16-bit kernels). Measured: no cost at 64 KB (research/notes/signature-cost.md).
  if constexpr (Sig::kDeferred)
    Sig::deferCheck(p, call.role.rank, ch, sigPrev);
  else
    Sig::blockCheck(p, call.role.rank, ch); // every peer makes this call, else MISMATCH
  for (llc_u32 s = threadIdx.x; s < slots; s += blockDim.x) {
    llcLoadPayload<DT, 4>(call.input, 16ull * s, call.bytes, v.w); // own contribution (same thread as above)
    const typename LlBuffer<Fmt>::Value sum = buf.template recvReduce<DT>(s, v); // re-arms every slot it read
    llcStorePayload<DT, 4>(call.output, 16ull * s, call.bytes, sum.w);
  }
  ch.blockAdvanceEpoch();
}

#define LLCOMM_VARIANT_oneshot_sentinel(protocol, dtype, op)                                                        \
  extern "C" __global__ void __launch_bounds__(LLCOMM_THREADS, LLCOMM_MIN_BLOCKS_PER_SM)                           \
      LLCOMM_KERNEL_NAME(oneshot_sentinel, protocol, dtype, op)(const __grid_constant__ LlcommAllReduceParams p) {  \
    oneshotSentinelAllReduce<LLC_DT_##dtype>(p);                                                                    \
  }
#include "instantiations.def"
