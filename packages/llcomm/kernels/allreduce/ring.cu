// ring: the NCCL-style baseline. The channel's elements are split in nranks parts; 2(n-1) steps pass partial sums
// around the ring (reduce-scatter: step s sends part (me - s) to the next rank, which adds its own) and then the
// reduced parts (all-gather). Each step's data goes into its own slot of the next rank's plain buffer and is
// published by a per-step flag (release) that the receiver acquires. f16/bf16 partial sums travel in f32 (the
// reduce-scatter slots then hold f32 values) and are rounded once at the part's owner (LLCOMM_RING_F32_PARTIALS,
// abi.cuh, the default since issue 18 item 4), or, with LLCOMM_RING_F32_PARTIALS=0 (communicator option
// accumulation: 'dtype'), are rounded to the dtype at every hop (as NCCL does, which loses small terms next to large
// ones). Every part is reduced once, at its owner, and forwarded: all ranks hold the same bits. The order of the sum is the
// ring's (starting after the owner), not rank order: ring does not keep `deterministic` (determinism.ts).
#include "llcomm/allreduce_common.cuh"
#include "llcomm/signature.cuh"

// The 8 f32 partial sums of one 16-byte piece of 16-bit input, as two 16-byte accesses of a step slot.
LLC_DEVICE void llcStoreF32Partial(char* slot, const float* v) {
  LlcWords4 a, b;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    a.w[i] = __float_as_uint(v[i]);
    b.w[i] = __float_as_uint(v[4 + i]);
  }
  llcStoreWeakV4(slot, a);
  llcStoreWeakV4(slot + 16, b);
}
LLC_DEVICE void llcLoadF32Partial(const char* slot, float* v) {
  const LlcWords4 a = llcLoadRelaxedSysV4(slot), b = llcLoadRelaxedSysV4(slot + 16);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    v[i] = __uint_as_float(a.w[i]);
    v[4 + i] = __uint_as_float(b.w[i]);
  }
}
#include "llcomm/flags.cuh"
#include "llcomm/ll_buffer.cuh"

template <int DT>
__device__ __forceinline__ void ringAllReduce(const LlcommAllReduceParams& p) {
  constexpr llc_u32 eb = LlcDtype<DT>::kElemBytes;
  const LlcCall call = llcBeginCall<DT, LLCOMM_SIG_ALG_RING, LLCOMM_SIG_PROTOCOL_NONE>(p);
  if (call.bytes == 0) return; // empty channel: no exchange and no epoch step, identically on every rank
  const llc_u32 me = call.role.rank, n = p.nranks;
  LlcChannel ch(p.scratch[me], call.role.channel);
  LlcWaiter waiter(p.errorWord, p.timeoutNs, me, ch.epoch, ch.index);
  // Call signature (signature.cuh): published before the first data store, checked before the first receive.
  using Sig = LlcCallSignature<LLCOMM_SIG_ALG_RING, LLCOMM_SIG_PROTOCOL_NONE, DT>;
  Sig::blockPublish(p, me, ch);
  Sig::blockCheck(p, me, ch); // every peer makes this call, else MISMATCH
  llc_u32 w[4], x[4];
  if (n == 1) {
    for (llc_u32 s = threadIdx.x; 16ull * s < call.bytes; s += blockDim.x) {
      llcLoadPayload<DT, 4>(call.input, 16ull * s, call.bytes, w);
      llcStorePayload<DT, 4>(call.output, 16ull * s, call.bytes, w);
    }
    ch.blockAdvanceEpoch();
    return;
  }
  const llc_u32 next = me + 1 == n ? 0 : me + 1, prev = me == 0 ? n - 1 : me - 1;
  const llc_u64 chanElems = call.range.size();
  const llc_u64 slotBytes = llcDivCount(p.plain.channelHalfBytes, 2u * (n - 1)) / 16u * 16u; // one part per step
  const llc_u64 offset = ch.regionOffset(p.plain);
  const llc_u32 steps = 2u * (n - 1);
  // f16/bf16 with LLCOMM_RING_F32_PARTIALS: f32 partial sums between reduce-scatter hops (kernel-table.ts halves
  // the ring's capacity for them).
  constexpr bool kWidePartials = eb == 2 && LLCOMM_RING_F32_PARTIALS != 0;
  const llc_u64 partElems = llcPieceElems(chanElems, n, LLCOMM_ALIGN_BYTES / eb);
  for (llc_u32 t = 0; t < steps; ++t) {
    // Step t: receive (t > 0) what prev sent at step t - 1, combine, send to next as step t.
    // Reduce-scatter (t < n - 1) sends part (me - t); all-gather (t >= n - 1) sends part (me + 1 - (t - n + 1)).
    const bool reduceScatter = t < n - 1;
    const llc_u32 sendPart = (me + 2u * n - (reduceScatter ? t : t - n + 1) + (reduceScatter ? 0u : 1u)) % n;
    if (t > 0) llcBlockRingWait(p.scratch, me, prev, ch.index, t - 1, ch.epoch, waiter);
    const LlcRange part = llcPieceAt(chanElems, partElems, sendPart);
    const llc_u64 partBytes = part.size() * eb;
    const char* in = call.input + part.begin * eb;
    char* out = call.output + part.begin * eb;
    const char* recvSlot = reinterpret_cast<const char*>(p.recvBuf[me]) + offset + (t - 1) * slotBytes;
    char* sendSlot = reinterpret_cast<char*>(p.recvBuf[next]) + offset + t * slotBytes;
    for (llc_u32 s = threadIdx.x; 16ull * s < partBytes; s += blockDim.x) {
      if constexpr (kWidePartials) {
        // 16-bit dtypes: a reduce-scatter hop carries its partial sums as f32 (32 slot bytes per 16 input bytes),
        // so the sum is rounded to the dtype once, at the part's owner (issue 18 item 4). Same ordering as the
        // narrow path: weak stores published by llcBlockRingSignal's release, strong loads after the acquire.
        if (t < n) {
          llcLoadPayload<DT, 4>(in, 16ull * s, partBytes, x);
          LlcAcc<DT, 4> acc;
          if (t == 0) {
            acc.set(x);
          } else {
            llcLoadF32Partial(recvSlot + 32ull * s, acc.v);
            acc.add(x);
          }
          if (t < n - 1) {
            llcStoreF32Partial(sendSlot + 32ull * s, acc.v);
            continue;
          }
          acc.pack(w); // t == n - 1: the part is complete here, rounded once
        } else {
          const LlcWords4 r = llcLoadRelaxedSysV4(recvSlot + 16ull * s);
#pragma unroll
          for (int i = 0; i < 4; ++i) w[i] = r.w[i];
        }
        llcStorePayload<DT, 4>(out, 16ull * s, partBytes, w); // a reduced part: mine to keep
      } else if (t == 0) {
        llcLoadPayload<DT, 4>(in, 16ull * s, partBytes, w);
      } else {
        // Strong load: ordered after the step flag's acquire (thread 0 + bar.sync), never a stale L1 line.
        const LlcWords4 r = llcLoadRelaxedSysV4(recvSlot + 16ull * s);
#pragma unroll
        for (int i = 0; i < 4; ++i) w[i] = r.w[i];
        if (t < n) { // a reduce-scatter receive (t <= n - 1): add my own part (f32: the partial is f32 already)
          llcLoadPayload<DT, 4>(in, 16ull * s, partBytes, x);
          LlcAcc<DT, 4> acc;
          acc.set(w);
          acc.add(x);
          acc.pack(w);
        }
        if (t >= n - 1) llcStorePayload<DT, 4>(out, 16ull * s, partBytes, w); // a reduced part: mine to keep
      }
      LlcWords4 v;
#pragma unroll
      for (int i = 0; i < 4; ++i) v.w[i] = w[i];
      llcStoreWeakV4(sendSlot + 16ull * s, v); // published by llcBlockRingSignal's release
    }
    llcBlockRingSignal(p.scratch, next, ch.index, t, ch.epoch);
  }
  // Last receive: all-gather step 2n - 3 from prev, the part (me + 2) mod n.
  llcBlockRingWait(p.scratch, me, prev, ch.index, steps - 1, ch.epoch, waiter);
  {
    const LlcRange part = llcPieceAt(chanElems, partElems, (me + 2u) % n);
    const llc_u64 partBytes = part.size() * eb;
    const char* recvSlot = reinterpret_cast<const char*>(p.recvBuf[me]) + offset + (steps - 1) * slotBytes;
    for (llc_u32 s = threadIdx.x; 16ull * s < partBytes; s += blockDim.x) {
      const LlcWords4 r = llcLoadRelaxedSysV4(recvSlot + 16ull * s);
#pragma unroll
      for (int i = 0; i < 4; ++i) w[i] = r.w[i];
      llcStorePayload<DT, 4>(call.output + part.begin * eb, 16ull * s, partBytes, w);
    }
  }
  ch.blockAdvanceEpoch();
}

#define LLCOMM_VARIANT_ring(protocol, dtype, op)                                                                    \
  extern "C" __global__ void __launch_bounds__(LLCOMM_THREADS, LLCOMM_MIN_BLOCKS_PER_SM)                           \
      LLCOMM_KERNEL_NAME(ring, protocol, dtype, op)(const __grid_constant__ LlcommAllReduceParams p) {              \
    ringAllReduce<LLC_DT_##dtype>(p);                                                                               \
  }
#include "instantiations.def"
