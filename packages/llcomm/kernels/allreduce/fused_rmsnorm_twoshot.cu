// fused_rmsnorm_twoshot: AllReduce + residual add + RMSNorm in one barrier-free launch, on the two-shot sentinel
// protocol (as twoshot_sentinel.cu). Each block (channel) owns whole rows of the [rows][hidden] tensor, one
// contiguous message, split in nranks parts; part o is owned by rank o. Reduce-scatter: every rank sends part o of
// its x to owner o; the owner reduces each slot in rank order in f32 once, rounds to the dtype, adds it to its own
// residual and broadcasts the reduced x (not the residual) to every rank (all-gather lanes); every rank adds the
// owners' reduced x to its own residual. The sum of squares of a row: after the all-gather every rank holds the whole
// reduced row, so each rank computes it over its own complete residual row (redundantly, locally: no extra packet),
// in the order of llcomm/rmsnorm.cuh, so the result is bit-identical to AllReduce + llcomm_rmsnorm_*. The owners
// reduce once, so all ranks hold the same reduced bits; with equal residuals (the tensor-parallel invariant) every
// rank's residual and output are bitwise equal. A block's message must fit nranks parts of one lane each.
#include "llcomm/allreduce_common.cuh"
#include "llcomm/ll_buffer.cuh"
#include "llcomm/rmsnorm.cuh"
#include "llcomm/fused_signature.cuh"

// Owners of one thread loaded before their sends and polled together in the spread path (twoshot_sentinel.cu's
// kTwoshotSpreadBatch, for the same register reason).
constexpr int kFusedTwoshotSpreadBatch = 4;
// Where the spread path's row cache starts in its stage: above the norm's floats, rounded up to 4 words (its accesses
// are single words, so nothing depends on the rounding).
constexpr llc_u32 kFusedTwoshotCacheOffset = (LLCOMM_NORM_SHARED_FLOATS + 3u) / 4u * 4u;

// The spread path of the fused two-shot: twoshot_sentinel.cu's spread path with the owner's output store and the
// all-gather's output stores replaced by residual adds, then the block's norm pass. Thread t serves slot s = t %
// slotsPerPart of every part for the owners k = first, first + groups, ... after me (first = 1 + t / slotsPerPart),
// t < groups * slotsPerPart; the owner's reduce is spread over 4-byte words (LlBuffer::blockRecvReduceSpreadWords:
// rank order 0..n-1 in f32 element by element, the bits of the serial path's recvReduce). The sums go through shared
// memory (one __syncthreads) to the senders, which broadcast slot s of my part to their peers; the senders of group 0
// (first == 1: one a slot) add it to my residual. The residual's elements are disjoint between the owner's adds and
// the all-gather's (my part against the other parts), each element added by one thread; the norm pass reads them
// after the block's __syncthreads (llcFusedNormRows, as the serial path). x is read only, before any exchange that
// could depend on it being unchanged; out is written only by the norm pass.
template <int DT>
__device__ __forceinline__ void fusedTwoshotSpread(const LlcommFusedNormParams& p, const LlcFusedRows& f, llc_u32 me,
                                                   llc_u32 channel, const char* input, char* residual,
                                                   llc_u32 groups) {
  using Fmt = LlcSentinel<DT>;
  using Value = typename LlBuffer<Fmt>::Value;
  constexpr llc_u32 eb = LlcDtype<DT>::kElemBytes;
  constexpr llc_u32 E = 16u / eb;
  constexpr int kB = kFusedTwoshotSpreadBatch;
  const llc_u32 n = p.nranks;
  LlcChannel ch(p.scratch[me], channel);
  LlcWaiter waiter(p.errorWord, p.timeoutNs, me, ch.epoch, ch.index);
  // The channel-half of the sentinel region holds 2 * nranks lanes: RS lanes first, then AG lanes (as the serial
  // path's).
  const llc_u64 laneBytes = llcDivCount(p.sentinel.channelHalfBytes, 2u * n) / 16u * 16u;
  const llc_u64 base = ch.regionOffset(p.sentinel);
  const LlBuffer<Fmt> rs = llcMakeBuffer<Fmt>(p.recvBuf, base, laneBytes, me, n, ch, &waiter);
  const LlBuffer<Fmt> ag = llcMakeBuffer<Fmt>(p.recvBuf, base + n * laneBytes, laneBytes, me, n, ch, &waiter);
  // 32 bits: a block's message fits its 2n sentinel lanes (fused-launcher.ts fusedRowsPerBlock), far below 2^31.
  const LlcParts parts(static_cast<llc_u32>(f.bytes / eb), n, E);
  const llc_u32 slotsPerPart = (parts.per * eb + 15u) / 16u;
  const llc_u32 mineBegin = parts.begin(me), mineBytes = parts.size(me) * eb; // a multiple of 16 (rows are)
  const llc_u32 mineSlots = mineBytes / 16u;
  const llc_u32 t = threadIdx.x;
  const bool sender = t < groups * slotsPerPart;
  llc_u32 s = 0u, first = n; // one division for both (t % slotsPerPart, 1 + t / slotsPerPart)
  if (sender) {
    const llc_u32 q = t / slotsPerPart;
    s = t - q * slotsPerPart;
    first = 1u + q;
  }
  const auto ownerOf = [&](llc_u32 k) { return me + k < n ? me + k : me + k - n; };
  // Reduce-scatter, send side: kB owners' input slots loaded before their sends (a send is an asm store with a
  // memory clobber: a load after it would wait for it).
  for (llc_u32 k0 = first; k0 < n; k0 += kB * groups) {
    Value x[kB];
#pragma unroll
    for (int j = 0; j < kB; ++j) {
      const llc_u32 k = k0 + j * groups;
      if (k >= n) break;
      const llc_u32 o = ownerOf(k), bytes = parts.size(o) * eb;
      if (16u * s < bytes) llcLoadPayload32<DT, 4>(input + parts.begin(o) * eb, 16u * s, bytes, x[j].w);
    }
#pragma unroll
    for (int j = 0; j < kB; ++j) {
      const llc_u32 k = k0 + j * groups;
      if (k >= n) break;
      const llc_u32 o = ownerOf(k);
      if (16u * s < parts.size(o) * eb) rs.send(o, s, x[j]);
    }
  }
  // The reduce's stage, then the owner's canonicalized sums (4 words a slot of my part, at most blockDim.x words),
  // then (after the exchange) the norm's floats: one array, as the emulator gives a block one shared buffer.
  LLC_SHARED_WORDS(stage, LLCOMM_PEER_STAGE_WORDS + LLCOMM_THREADS);
  llc_u32* const sums = stage + LLCOMM_PEER_STAGE_WORDS;
  static_assert(LLCOMM_NORM_SHARED_FLOATS <= LLCOMM_PEER_STAGE_WORDS, "the norm's floats reuse the stage");
  // The row cache (rmsnorm.cuh llcCacheStoreSlot) above the norm's floats, in the stage: written only after the
  // owner's reduce has finished with the stage (the __syncthreads after it, or no reduce at all), read by the norm
  // pass after the last __syncthreads. `cached` (uniform): the block's residual rows fit.
  llc_u32* const cache = stage + kFusedTwoshotCacheOffset;
  const bool f32res = (p.flags & LLCOMM_FUSED_RESIDUAL_F32) != 0u;
  const bool cached =
      llcCacheWords(f.rows.size(), p.hidden, f32res, eb) <= LLCOMM_PEER_STAGE_WORDS - kFusedTwoshotCacheOffset;
  if (mineSlots > 0) { // uniform
    const llc_u32 ownOffset = 16u * (t / 4u) + 4u * (t % 4u);
    llc_u32 own = 0;
    if (ownOffset < mineBytes) llcLoadPayload32<DT, 1>(input + mineBegin * eb, ownOffset, mineBytes, &own);
    const llc_u32 sum = rs.template blockRecvReduceSpreadWords<DT, kB>(mineSlots, rs.spreadGroups(mineSlots), own,
                                                                      stage, [] {});
    if (t < 4u * mineSlots) sums[t] = Fmt::canonicalize(sum); // my sum = the bits peers receive
    __syncthreads(); // uniform (mineSlots is): the sums are in `sums`
    if (sender && s < mineSlots) {
      Value v;
#pragma unroll
      for (int j = 0; j < 4; ++j) v.w[j] = sums[4u * s + j];
      for (llc_u32 k = first; k < n; k += groups) ag.send(ownerOf(k), s, v);
      // after the sends (the residual's load before them spilled the 16-bit kernels at the 128-register cap)
      if (first == 1u) {
        const llc_u64 elem0 = mineBegin + s * E;
        const LlcSlotFloats<DT> stored = llcResidualAfterStored<DT>(
            residual, elem0, p.flags, llcResidualBefore<DT>(residual, elem0, p.flags), v.w);
        if (cached) llcCacheStoreSlot<DT>(cache, elem0, f32res, stored);
      }
    }
  }
  // All-gather, receive side: kB owners of this thread polled together (every load before any inspection), each
  // received slot added to my residual; the thread that read a slot re-arms it (Fmt::rearm's ordering argument).
  for (llc_u32 k0 = first; k0 < n; k0 += kB * groups) {
    llc_u32 want = 0;
#pragma unroll
    for (int j = 0; j < kB; ++j) {
      const llc_u32 k = k0 + j * groups;
      if (k >= n) break;
      if (16u * s < parts.size(ownerOf(k)) * eb) want |= 1u << j;
    }
    const auto slotOf = [&](int j) { return ag.slotPtr(me, ownerOf(k0 + j * groups), s); };
    // The first member's residual slot loaded before the poll, so that its load overlaps the wait (at 8 and 16
    // ranks a thread serves one owner: the only member); the others after it (4 members' slots do not fit the
    // registers at the 128 cap).
    const llc_u64 firstElem = parts.begin(ownerOf(k0)) + s * E;
    const LlcSlotFloats<DT> r0 = (want & 1u) ? llcResidualBefore<DT>(residual, firstElem, p.flags) : LlcSlotFloats<DT>{};
    Value got[kB];
    llc_u32 pending = want;
    LlcSpin spin;
    while (pending != 0) {
      pending = ag.template pollBatch<kB>(pending, slotOf, got);
      if (pending != 0 && !waiter.keepWaiting(spin, ownerOf(k0 + (__ffs(pending) - 1) * groups), Fmt::kWhat, s))
        break;
    }
#pragma unroll
    for (int j = 0; j < kB; ++j) {
      if (!((want >> j) & 1u)) continue;
      const llc_u64 elem0 = parts.begin(ownerOf(k0 + j * groups)) + s * E;
      const LlcSlotFloats<DT> stored = llcResidualAfterStored<DT>(
          residual, elem0, p.flags, j == 0 ? r0 : llcResidualBefore<DT>(residual, elem0, p.flags), got[j].w);
      if (cached) llcCacheStoreSlot<DT>(cache, elem0, f32res, stored);
      // The thread that read the slot re-arms it, after its read; ordering argument at Fmt::rearm() (sentinel.cuh).
      if (Fmt::kRearm) Fmt::rearm(slotOf(j));
    }
  }
  __syncthreads(); // the block's residual rows are complete, in the cache and in global memory (visible block-wide)
  if (cached)
    llcFusedNormRows<DT, true>(p, me, f, reinterpret_cast<float*>(stage), cache);
  else
    llcFusedNormRows<DT>(p, me, f, reinterpret_cast<float*>(stage));
  ch.blockAdvanceEpoch(); // after every recv of this block (ll_buffer.cuh contract)
}

template <int DT>
__device__ __forceinline__ void fusedRmsNormTwoshot(const LlcommFusedNormParams& p) {
  using Fmt = LlcSentinel<DT>; // the arrival test of twoshot_sentinel.cu
  using Value = typename LlBuffer<Fmt>::Value;
  constexpr llc_u32 eb = LlcDtype<DT>::kElemBytes;
  constexpr llc_u32 E = 16u / eb;
  llcWaitForPriorGrid(); // before any read of the epoch word or the buffers (PDL launches)
  const LlcBlockRole role = llcBlockRole(p.blocksPerRank, p.launchRanks);
  const LlcFusedRows f = llcFusedRows<DT>(p, role.channel);
  if (f.bytes == 0) return; // a block without rows: no exchange and no epoch step, identically on every rank
  const llc_u32 me = role.rank, n = p.nranks;
  const char* input = reinterpret_cast<const char*>(p.input[me]) + f.rows.begin * f.rowBytes;
  char* residual = reinterpret_cast<char*>(p.residual[me]) + f.rows.begin * f.resRowBytes;
  const llc_u64 elems = f.bytes / eb;
  const llc_u64 partElems = llcPieceElems(elems, n, E); // parts start on slot boundaries
  const llc_u32 slotsPerPart = static_cast<llc_u32>(llcCeilDiv(partElems * eb, 16u));
  // The spread path (twoshot_sentinel.cu's, the same rule and roles): where the owner's reduce spreads as the
  // one-shots' (spreadGroups of a part's slots > 1, a thread per word of the part), every phase's (slot, peer) pairs
  // are spread over the block; else the serial path below, one thread per slot walking every peer. Uniform per block.
  // Decided before the channel and buffers, which each path makes for itself: with them made once and live into
  // both, the 16-bit kernels spilled 8 bytes at the 128-register cap (ptxas, sm_90).
  if (n >= LLCOMM_SPREAD_MIN_RANKS && 4u * slotsPerPart <= blockDim.x && 4u * slotsPerPart <= LLCOMM_PEER_STAGE_WORDS) {
    const llc_u32 g = blockDim.x / slotsPerPart;
    const llc_u32 reduceGroups = g < n ? g : n;
    if (reduceGroups >= LLCOMM_SPREAD_MIN_GROUPS && reduceGroups > 1) {
      fusedTwoshotSpread<DT>(p, f, me, role.channel, input, residual, g < n - 1 ? g : n - 1);
      return;
    }
  }
  LlcChannel ch(p.scratch[me], role.channel);
  LlcWaiter waiter(p.errorWord, p.timeoutNs, me, ch.epoch, ch.index);
  // The channel-half of the sentinel region holds 2 * nranks lanes: RS lanes first, then AG lanes.
  const llc_u64 laneBytes = llcDivCount(p.sentinel.channelHalfBytes, 2u * n) / 16u * 16u;
  const llc_u64 base = ch.regionOffset(p.sentinel);
  const LlBuffer<Fmt> rs = llcMakeBuffer<Fmt>(p.recvBuf, base, laneBytes, me, n, ch, &waiter);
  const LlBuffer<Fmt> ag = llcMakeBuffer<Fmt>(p.recvBuf, base + n * laneBytes, laneBytes, me, n, ch, &waiter);
  Value v;
  // Reduce-scatter, send side.
  for (llc_u32 s = threadIdx.x; s < slotsPerPart; s += blockDim.x) {
    for (llc_u32 k = 1; k < n; ++k) {
      const llc_u32 o = me + k < n ? me + k : me + k - n;
      const LlcRange part = llcPieceAt(elems, partElems, o);
      if (16ull * s >= part.size() * eb) continue;
      llcLoadPayload<DT, 4>(input + part.begin * eb, 16ull * s, part.size() * eb, v.w);
      rs.send(o, s, v);
    }
  }
  // Owner: reduce my part, add it to my residual, broadcast the reduced x.
  const LlcRange mine = llcPieceAt(elems, partElems, me);
  const llc_u64 mineBytes = mine.size() * eb;
  for (llc_u32 s = threadIdx.x; 16ull * s < mineBytes; s += blockDim.x) {
    llcLoadPayload<DT, 4>(input + mine.begin * eb, 16ull * s, mineBytes, v.w);
    // The slot's residual is loaded before the receive, so the load overlaps the wait.
    const LlcSlotFloats<DT> r = llcResidualBefore<DT>(residual, mine.begin + static_cast<llc_u64>(s) * E, p.flags);
    Value sum = rs.template recvReduce<DT>(s, v); // rank order 0..n-1; re-arms the RS slots it read
#pragma unroll
    for (int i = 0; i < 4; ++i) sum.w[i] = Fmt::canonicalize(sum.w[i]); // my sum = the bits peers receive
    ag.bcast(s, sum);
    llcResidualAfter<DT>(residual, mine.begin + static_cast<llc_u64>(s) * E, p.flags, r, sum.w);
  }
  // All-gather, receive side: the other owners' reduced x into my residual.
  for (llc_u32 s = threadIdx.x; s < slotsPerPart; s += blockDim.x) {
    for (llc_u32 k = 1; k < n; ++k) {
      const llc_u32 o = me + k < n ? me + k : me + k - n;
      const LlcRange part = llcPieceAt(elems, partElems, o);
      if (16ull * s >= part.size() * eb) continue;
      const Value r = ag.recv(o, s); // re-arms the AG slot
      llcResidualAddSlot<DT>(residual, part.begin + static_cast<llc_u64>(s) * E, p.flags, r.w);
    }
  }
  LLC_SHARED_WORDS(red, LLCOMM_NORM_SHARED_FLOATS);
  __syncthreads(); // the block's residual rows are complete (and visible to every thread of the block)
  llcFusedNormRows<DT>(p, me, f, reinterpret_cast<float*>(red));
  ch.blockAdvanceEpoch(); // after every recv of this block (ll_buffer.cuh contract)
}

#define LLCOMM_FUSED_VARIANT_fused_rmsnorm_twoshot(dtype)                                                           \
  extern "C" __global__ void __launch_bounds__(LLCOMM_THREADS, LLCOMM_MIN_BLOCKS_PER_SM)                           \
      llcomm_fused_rmsnorm_twoshot_##dtype(const __grid_constant__ LlcommFusedNormParams p) {                      \
    LLCOMM_FUSED_SIGNATURE_CLUSTER(p) /* per-process builds only: llcomm/fused_signature.cuh */                     \
    fusedRmsNormTwoshot<LLC_DT_##dtype>(p);                                                                         \
  }
#include "instantiations.def"
