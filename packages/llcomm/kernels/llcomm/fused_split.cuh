// The split fused AllReduce + residual add + RMSNorm (kernels/allreduce/fused_rmsnorm_split*.cu): one-shot, like
// fused_rmsnorm_oneshot.cu, but a row is shared by the C blocks of one thread-block cluster (C = 1, 2, 4 or 8, the
// launch's cluster dimension), so a batch of one row still puts C blocks per rank on the wire, as the unfused
// AllReduce does. Clusters never straddle two ranks: C divides blocksPerRank, and a rank's blocks are consecutive
// (channel.cuh), so the C consecutive blocks of a cluster are channels gC .. gC + C - 1 of one rank.
//
// Work split. The rows of a launch are shared out over the G = blocksPerRank / C clusters of a rank (llcPiece);
// every block of cluster g carries all of g's rows. The reference RMSNorm (llcomm/rmsnorm.cuh) has 512 threads per
// row, thread t owning the row's 16-byte slots t, t + 512, t + 1024, ...; here those 512 "virtual threads" are split
// in C runs of V = 512 / C: block b of the cluster owns virtual threads bV .. bV + V - 1, i.e. the row slots
// j = k * 512 + bV + u (k = 0 .. K - 1 with K = ceil(slots per row / 512), u < V, j < slots per row). A unit is
// (row, u); the threads of the block take units in turn (up to 32 consecutive lanes per unit in the exchange, one
// thread per slot in the output pass); the block's message is its units' slots, data slot
// (row, k, u) at index (row * K + k) * V + u of its lanes (indices with j past the row are holes: never sent).
//
// Arithmetic: bit-identical to the reference kernel, so to AllReduce + llcomm_rmsnorm_* and to the other fused
// kernels. Each data slot is reduced in rank order in f32 (recvReduce), rounded to the dtype, added to the residual
// and rounded (llcResidualAfterStored); the unit's threads then form exactly the reference thread vt's fma chain q_vt
// (its slots in k order, elements in order; handed between lanes by shuffles when its slots are on several lanes)
// in a register and store it in their block's shared memory.
// After a cluster barrier every block computes, for each of its rows, a_l = q_l + q_{l+32} + ... + q_{l+480} (lane
// l of one warp, reading the q's of all C blocks through distributed shared memory, in that order), total = a_0 + ...
// + a_31 (one thread, in order) and inv = rsqrtf(total / hidden + eps): the reference's order exactly. Every block of
// the cluster computes the same inv redundantly (no second exchange). The output pass applies llcNormStoreSlot, as the
// reference does, to the residual as stored: kept in registers with the slot's weights when every thread has at most
// one slot, else reloaded (stored by this block's threads before the barriers).
//
// Protocols: Fmt = LlcSentinel (a data slot is one sentinel slot; region `sentinel`) or LlcLL16 (a data slot is two
// LL16 packets of 8 payload bytes; region `ll`). A block's lanes must hold R * K * V data slots (fused-launcher.ts
// checks, with the unit cap below).
#pragma once
#include "llcomm/allreduce_common.cuh"
#include "llcomm/cluster.cuh"
#include "llcomm/ll_buffer.cuh"
#include "llcomm/rmsnorm.cuh"

#if LLC_HAS_DEVICE

// Units (row, u) one block may own: the q's of its rows live in static shared memory (16 KB of floats).
// kVirtual (= llcNormThreads() = blockDim.x) must be a power of two >= 32 and C must divide it.
#define LLCOMM_SPLIT_MAX_UNITS 4096
// Rows one cluster may own: LLCOMM_SPLIT_MAX_UNITS / V with the smallest V (64, at C = 8).
#define LLCOMM_SPLIT_MAX_ROWS 64
// The word of the shared array where `push`'s mbarrier (8 bytes, 8-aligned) lives: after the q's, the level-1 sums
// and the inverse RMS.
#define LLC_SPLIT_MBAR_WORD (LLCOMM_SPLIT_MAX_UNITS + LLCOMM_THREADS + LLCOMM_SPLIT_MAX_ROWS)
// `two` (the split two-shot, kTwo): the owner's reduced slots of its part (4 words a slot, at most
// LLC_SPLIT_TWO_SUM_SLOTS slots), 16-byte aligned after the mbarrier.
#define LLC_SPLIT_TWO_SUM_WORD (LLC_SPLIT_MBAR_WORD + 4u)
#define LLC_SPLIT_TWO_SUM_SLOTS 512u

// Probe variants (kProbe, a bit set; 0 = the shipped kernel): cost decomposition for the bench only
// (kernels/allreduce/fused_rmsnorm_split_probe.cu, scripts/bench-fused.mjs --probes); never in the default path.
// XCHG_ONLY: stop after the exchange, storing each reduced data slot to out (an AllReduce in this kernel's shape: no
//   residual, no norm, no cluster barrier). NO_NORM: no level-1/total gather (inv = 1; barriers kept). NO_BARRIER:
//   no cluster barrier, the gather reads this block's own q's only (timing only: the output is wrong). C_FROM_FLAGS:
//   C = flags >> 8, b = channel % C instead of the cluster registers (with XCHG_ONLY: the same work launched without
//   the cluster attribute).
#define LLC_SPLIT_PROBE_XCHG_ONLY 1
#define LLC_SPLIT_PROBE_NO_NORM 2
#define LLC_SPLIT_PROBE_NO_BARRIER 4
#define LLC_SPLIT_PROBE_C_FROM_FLAGS 8
// A candidate (not a probe: same outputs, bit for bit): LATE_RESIDUAL: on the `keep` path (LL16, every thread at most
// one slot) the residual slot is stored after the cluster barriers, with the output, instead of before the first
// arrive, whose release at cluster scope would otherwise wait for that global store to be performed.
#define LLC_SPLIT_LATE_RESIDUAL 16
// A candidate (same outputs): SPREAD (only for the shapes it applies to, which the host checks; on any other the
// kernel writes nothing): LL16, a block whose units are whole one-slot row slices (S == blockDim.x, so K = 1 and no holes) with
// few packets: the exchange takes the AllReduce's peer-parallel path (ll_buffer.cuh
// blockBcastSpread / blockRecvReduceSpread: (packet, peer) pairs over all threads, staged in shared memory, reduced
// in rank order by thread = packet), instead of 2 threads per unit polling every peer. Packet index = thread index
// in both paths (unit w = t / 2, half h = t % 2), so everything after the receive is unchanged.
#define LLC_SPLIT_SPREAD 32
// Shared words before the spread stage (the q's of at most 64 units live below it; see `spread`), and where the
// residual and weights of the spread path's slots are copied (12 words per unit: 8 of residual (f32: two 16-byte
// vectors), 4 of weights), at the top of the q area.
#define LLC_SPLIT_SPREAD_STAGE_OFFSET 512u
#define LLC_SPLIT_SPREAD_KEEP_OFFSET (LLCOMM_SPLIT_MAX_UNITS - 12u * 64u)

// kTwo: peers the owner polls together in its serial reduce (recvReduce's kBatch). 4, so two poll rounds at 8
// ranks: with 8 (one round) ptxas spills 8-20 bytes at the 128-register cap. A compile-time knob for A/B runs.
#ifndef LLCOMM_SPLIT_TWO_BATCH
#define LLCOMM_SPLIT_TWO_BATCH 4
#endif
constexpr int kSplitTwoBatch = LLCOMM_SPLIT_TWO_BATCH;
// kTwo: the owner's reduce spread over the block (LlBuffer::blockRecvReduceSpread: (slot, peer) pairs over the
// threads, staged in shared memory, reduced in rank order: the same bits) where it applies: a part without holes
// (every slot of every row is real: S a multiple of kVirtual, and nranks divides M), every rank's part in one window
// of the stage (4 M words) and spreadGroups(P) > 1 (8 ranks or more). Else the serial reduce, a thread per slot
// (measured: spread -0.25..-0.47 us against it at 8 ranks, batch 1-8, one H100). A compile-time knob for A/B runs
// (0: always serial).
#ifndef LLCOMM_SPLIT_TWO_SPREAD
#define LLCOMM_SPLIT_TWO_SPREAD 1
#endif
// The spread reduce's stage: LLC_SPLIT_TWO_STAGE_WORDS words after the sums: a window of 8 ranks up to 64-slot parts
// (LLCOMM_PEER_STAGE_WORDS, 8,192, would take the kernel's static shared memory past 48 KB; with 2,048 it is 35 KB).
#define LLC_SPLIT_TWO_STAGE_WORD (LLC_SPLIT_TWO_SUM_WORD + 4u * LLC_SPLIT_TWO_SUM_SLOTS)
#define LLC_SPLIT_TWO_STAGE_WORDS 2048u
// kTwo (below): data slot i of a block's message -> its row (rowL) and its slot j of the row (j >= S: a hole).
struct LlcSplitTwoGeometry {
  llc_u32 K, V, vShift, kVirtual, b;
  LLC_DEVICE llc_u32 slotAt(llc_u32 i, llc_u32& rowL) const {
    const llc_u32 q = i >> vShift; // rowL * K + k
    rowL = q / K;
    return (q - rowL * K) * kVirtual + b * V + (i & (V - 1u));
  }
};
// kTwo: send item f = (kk - 1) * P + s of a block: slot s of the part of owner me + kk (mod nranks), kk = 1 ..
// nranks - 1. Returns the owner; sets s and i = owner * P + s (the data slot; i >= M past the message).
LLC_DEVICE llc_u32 llcSplitTwoSendItem(llc_u32 f, llc_u32 P, llc_u32 me, llc_u32 n, llc_u32& s, llc_u32& i) {
  const llc_u32 kk = 1u + f / P;
  s = f - (kk - 1u) * P;
  const llc_u32 o = me + kk < n ? me + kk : me + kk - n;
  i = o * P + s;
  return o;
}

// kPush: the `push` kernels (kernels/allreduce/fused_rmsnorm_split{,_ll}_push.cu), which exchange the q's without a
// release; the host launches them where C > 1 and a cluster's rows fit (fused-launcher.ts fusedSplitPushes).
//
// kTwo: the split two-shot (kernels/allreduce/fused_rmsnorm_split_twoshot.cu; a sentinel push kernel): the same
// slot ownership and everything after the receive, but the block's data slots are exchanged two-shot instead of
// one-shot. The block's message is its M = R * K * V data slots in index order i = (rowL * K + k) * V + u (holes,
// j >= S, included: they are never sent nor received, the same on every rank), cut into nranks parts of P =
// ceil(M / nranks) slots; part o is reduced by block b of rank o (the same cluster and block index on every rank:
// clusters are consecutive channels of a rank). Reduce-scatter: every rank sends its slot i of part o to rank o
// (its RS lane, slot i - oP); the owner reduces each slot of its part in rank order in f32 (recvReduce, its own
// contribution as `own`: the bits of the one-shot's recvReduce), canonicalizes it as a sent value (the bits every
// peer receives), keeps it in shared memory for its own units and broadcasts it (AG lanes); every rank then takes
// each of its slots from its owner (AG lane) or from that shared copy and carries on as the one-shot split does
// (residual add, q, push, norm). At 8 ranks a block sends and receives (n - 1) / n of its message twice instead of
// n - 1 times (research/notes/fused-probes.md: the design and its prediction). Lanes: the channel-half's 2 * nranks
// lanes of the two-shot (RS lanes first, then AG lanes; fused_rmsnorm_twoshot.cu), each holding P slots (the host
// checks: fusedSplitRowsPerCluster). Ordering, as in fused_rmsnorm_twoshot.cu: each slot's validity rides in its own
// words (sentinel.cuh), so no fence orders a send; every (receiver, lane, slot) is written once per call and re-armed
// by the thread that read it (recvReduce for the RS lanes, recv for the AG lanes; sentinel.cuh rearm(): the next
// write to it is two calls later), so the channel half is fully re-armed whatever layout the next call on it uses;
// the owner's shared copy is ordered before the unit threads' reads by the __syncthreads after the reduce.
template <class Fmt, int DT, int kProbe = 0, bool kPush = false, bool kTwo = false>
__device__ __forceinline__ void fusedRmsNormSplit(const LlcommFusedNormParams& p, const LlcommRegion& region) {
  using Value = typename LlBuffer<Fmt>::Value;
  constexpr llc_u32 eb = LlcDtype<DT>::kElemBytes;
  constexpr llc_u32 E = 16u / eb;                 // elements per 16-byte data slot
  constexpr int W = Fmt::kWords;                  // payload words per packet
  constexpr llc_u32 kPk = 4u / W;                 // packets per data slot (sentinel 1, LL16 2)
  static_assert(!kTwo || (kPush && kPk == 1u && kProbe == 0), "the split two-shot is a sentinel push kernel");
  // The reference kernel's threads per row (llcNormThreads: LLCOMM_THREADS on the GPU, a compile-time constant, so
  // the gather below loads its q's with no branch between the loads; the emulator test runs both kernels with its
  // own, smaller, power-of-two block), split over the cluster.
  // (The LATE_RESIDUAL probes keep the run-time blockDim.x, equal on the GPU: with the constant ptxas spills 12 bytes
  // in llcomm_fused_probe_ll_late, a bench-only candidate measured slower, research/notes/fused-probes.md.)
  const llc_u32 kVirtual = (kProbe & LLC_SPLIT_LATE_RESIDUAL) != 0 ? blockDim.x : llcNormThreads();
  llcWaitForPriorGrid(); // before any read of the epoch word or the buffers (PDL launches)
  const LlcBlockRole role = llcBlockRole(p.blocksPerRank, p.launchRanks);
  constexpr bool kFlagC = (kProbe & LLC_SPLIT_PROBE_C_FROM_FLAGS) != 0;
  constexpr bool kBarrier = (kProbe & LLC_SPLIT_PROBE_NO_BARRIER) == 0;
  // 1, 2, 4 or 8 (the host's cluster dimension)
  const llc_u32 C = kFlagC ? (p.flags >> 8) : llcClusterNumCtas();
  const llc_u32 cShift = static_cast<llc_u32>(__ffs(C) - 1);
  // = role.channel % C (clusters of consecutive blocks of one rank)
  const llc_u32 b = kFlagC ? (role.channel & (C - 1u)) : llcClusterCtaRank();
  const llc_u32 g = role.channel >> cShift;
  const LlcRange rows = llcPiece(p.rows, p.blocksPerRank >> cShift, g, 1);
  // A cluster without rows: the same for all its blocks (rows depend on g only), so no block of it reaches a cluster
  // barrier; no exchange and no epoch step, identically on every rank.
  if (rows.size() == 0) return;
  const llc_u32 me = role.rank;
  const llc_u32 R = static_cast<llc_u32>(rows.size());
  const llc_u32 V = kVirtual >> cShift;
  const llc_u32 vShift = static_cast<llc_u32>(__ffs(V) - 1);
  const llc_u32 S = static_cast<llc_u32>(static_cast<llc_u64>(p.hidden) * eb / 16u); // slots per row
  // ceil(S / kVirtual); a division, not a shift: with the shift ptxas spills 8 bytes in the f32 sentinel kernel
  const llc_u32 K = (S + kVirtual - 1u) / kVirtual;
  const llc_u32 units = R * V;
  const llc_u64 rowBytes = static_cast<llc_u64>(p.hidden) * eb;
  const bool f32res = (p.flags & LLCOMM_FUSED_RESIDUAL_F32) != 0u;
  const llc_u64 resRowBytes = static_cast<llc_u64>(p.hidden) * (f32res ? 4u : eb);
  const char* input = reinterpret_cast<const char*>(p.input[me]) + rows.begin * rowBytes;
  char* residual = reinterpret_cast<char*>(p.residual[me]) + rows.begin * resRowBytes;
  const llc_u32 t = threadIdx.x;

  // Threads per unit: T = kLanes * kPk, consecutive lanes of one warp. Thread h = li % kPk of the unit carries
  // packet h of its data slots (one LL16 packet per thread, as the unfused oneshot-ll; kPk = 1 for sentinel slots);
  // with kLanes = K (a power of two, T <= 32) thread li carries slot k = li / kPk, so all K slots of a unit are in
  // flight at once (one poll round trip, not K); otherwise (kLanes = 1) it walks k = 0 .. K - 1 in turn.
  const llc_u32 kLanes = (K & (K - 1u)) == 0u && K * kPk <= 32u ? K : 1u;
  const llc_u32 T = kLanes * kPk;
  const llc_u32 tShift = static_cast<llc_u32>(__ffs(T) - 1);
  const llc_u32 li = t & (T - 1u), h = li % kPk, kl = li / kPk;
  const llc_u32 unitStride = blockDim.x >> tShift;
  const llc_u32 lane = t & 31u;

  // One static shared array (the emulator gives a block one shared buffer): the q's, then per warp 32 level-1 sums,
  // then the rows' inverse RMS, then (`push` only) its mbarrier (8 bytes); with `spread`, the exchange's stage sits
  // above the q's in use.
  // (push: 16-byte aligned for the mbarrier; the barrier kernels keep their unaligned array: their code as before)
  llc_u32* sharedWords;
  if constexpr (kTwo) {
    LLC_SHARED_WORDS_ALIGNED(words,
                             LLC_SPLIT_TWO_STAGE_WORD + (LLCOMM_SPLIT_TWO_SPREAD ? LLC_SPLIT_TWO_STAGE_WORDS : 0u));
    sharedWords = words;
  } else if constexpr (kPush) {
    LLC_SHARED_WORDS_ALIGNED(words, LLC_SPLIT_MBAR_WORD + 2u);
    sharedWords = words;
  } else {
    LLC_SHARED_WORDS(words, LLC_SPLIT_MBAR_WORD);
    sharedWords = words;
  }

  // `push` (a kernel of its own, kPush; not a run-time branch: with one kernel for both paths, branching on the
  // cluster register, ptxas could not prove the branches around the barriers uniform and compute-sanitizer's
  // synccheck found a divergent warp at a barrier, f16, 8 ranks, 16 rows of 4096, 2026-12-07): the q's are exchanged
  // without a release (cluster.cuh: each barrier.cluster.arrive.release is a MEMBAR.ALL.GPU, which waited +0.73 and
  // +0.45 us for this thread's earlier global stores on an H100). Every block keeps all the cluster's q's, the q of
  // virtual thread vt = bV + u of row rowL at rowL * kVirtual + vt: the unit's thread st.async's its q from its
  // register into every block of the cluster, its own included, and each block's mbarrier counts them all: C * units
  // * 4 bytes (so no __syncthreads is needed before the gather). The cluster barrier is used once, relaxed, for the
  // mbarrier's init alone. The host launches it only where C > 1 and R * kVirtual q's fit the array (R <= 8 rows a
  // cluster); elsewhere (a host bug) the cluster returns here before any exchange: R and C are the same in every
  // block of the cluster and on every rank (as `rows.size() == 0` above), so no barrier is reached, no epoch steps,
  // nothing hangs, and the outputs are left unwritten (test/kernels/fused-emulator.test.ts checks it).
  static_assert(!kPush || kProbe == 0, "push is never a probe");
  if constexpr (kPush)
    if (C == 1u || R * kVirtual > LLCOMM_SPLIT_MAX_UNITS) return;
  // kTwo: the block's message and its parts (above); a part larger than the shared copy of the sums (a host bug:
  // fusedSplitRowsPerCluster never plans one) returns here as the push guard does, uniformly (M and P depend on R,
  // K, V and nranks only).
  // (computed in kTwo kernels only: the other kernels' code is as before, PTX byte for byte)
  llc_u32 M = 0u, P = 1u;
  if constexpr (kTwo) {
    M = units * K;
    P = (M + p.nranks - 1u) / p.nranks;
    if (P > LLC_SPLIT_TWO_SUM_SLOTS) return;
  }
  // kTwo: the row and row slot j of data slot i of the block's message (j >= S: a hole).
  const LlcSplitTwoGeometry geo{K, V, vShift, kVirtual, b};
  const llc_u32 mbar = llcSharedAddress(sharedWords + LLC_SPLIT_MBAR_WORD);
  constexpr bool kSpread = kPk == 2u && (kProbe & LLC_SPLIT_SPREAD) != 0; // see `spread` below

  // This thread's first slot (unit w0 = t / T, k = kl: the first iteration of the send loop below) and its input,
  // loaded before the channel's epoch, so that the input's round trip overlaps the epoch word's instead of following
  // it (docs/kernels.md, "What happens before the first send"; measured 2026-12-04: the first send 0.2 us earlier,
  // research/notes/fused-probes.md). Ordering: after llcWaitForPriorGrid (PDL), as every input read; a weak load is
  // enough, the input is stable for the whole kernel; ptx.cuh's loads are asm volatile, so the compiler keeps the
  // order. Not in the `spread` candidate (it loads its packets in blockBcastSpread) nor in the XCHG_ONLY probe (with
  // x0 there ptxas spills 8 bytes; the probe keeps the exchange as it was).
  const llc_u32 w0 = t >> tShift, rowL0 = w0 >> vShift, u0 = w0 & (V - 1u);
  const llc_u32 j0 = kl * kVirtual + b * V + u0;
  constexpr bool kEarlyInput = !kSpread && (kProbe & LLC_SPLIT_PROBE_XCHG_ONLY) == 0;
  // (kTwo: the slot of its first send item, f = t)
  LlcWords4 x0{};
  if constexpr (kTwo) {
    if (t < (p.nranks - 1u) * P) {
      llc_u32 s0, i0, row0 = 0;
      llcSplitTwoSendItem(t, P, me, p.nranks, s0, i0);
      const llc_u32 jt = i0 < M ? geo.slotAt(i0, row0) : S;
      if (jt < S) x0 = llcLoadWeakV4(input + row0 * rowBytes + 16ull * jt);
    }
  } else if (kEarlyInput && w0 < units && kl < K && j0 < S) {
    x0 = llcLoadWeakV4(input + rowL0 * rowBytes + 16ull * j0);
  }
  LlcChannel ch(p.scratch[me], role.channel);
  LlcWaiter waiter(p.errorWord, p.timeoutNs, me, ch.epoch, ch.index);
  // kTwo: 2 * nranks lanes: the reduce-scatter's (lanes 0 .. nranks - 1) and the all-gather's (lanes nranks ..
  // 2 nranks - 1). All-gather lane o, slot s is `buf`'s lane o, slot agSlot0 + s (slotPtr: lane * laneBytes + slot
  // * 16, and agSlot0 * 16 = nranks * laneBytes), so one buffer serves both (with a second LlBuffer for the
  // all-gather ptxas spilled 8 bytes at the 128-register cap).
  const llc_u64 laneBytes = llcDivCount(region.channelHalfBytes, (kTwo ? 2u : 1u) * p.nranks) / 16u * 16u;
  const LlBuffer<Fmt> buf = llcMakeBuffer<Fmt>(p.recvBuf, ch.regionOffset(region), laneBytes, me, p.nranks, ch, &waiter);
  const llc_u32 agSlot0 = kTwo ? static_cast<llc_u32>(p.nranks * (laneBytes / 16u)) : 0u;

  // `spread` (uniform; candidate LLC_SPLIT_SPREAD): 2 * units packets (K = 1: S == kVirtual, T = 2, so packet
  // t = 2w + h is thread t's, as below), few enough for >= LLCOMM_SPREAD_MIN_GROUPS thread groups (spreadGroups),
  // hence units <= blockDim / 8 <= 64: their q's (qs[0 .. units)) stay below the stage, which must fit the array.
  const llc_u32 spreadSlots = units * kPk;
  llc_u32 groups = 1;
  if constexpr (kSpread)
    if (S == kVirtual && units <= 64u &&
        LLC_SPLIT_SPREAD_STAGE_OFFSET + static_cast<llc_u64>(p.nranks) * spreadSlots * W <= LLC_SPLIT_SPREAD_KEEP_OFFSET)
      groups = buf.spreadGroups(spreadSlots);
  // kSpread kernels take this path only (with the other path too, ptxas spills 88 bytes); the host launches them
  // only where it applies (fused-launcher.ts fusedSplitSpreadApplies). Elsewhere (a host bug) the cluster does
  // nothing and returns: `groups` depends on the shape and this cluster's rows only, so every block of the cluster
  // and the matching cluster of every rank return alike (no barrier reached, no exchange, no epoch step, no hang);
  // the outputs are left unwritten, which the bench's bitwise check of the candidate reports.
  constexpr bool spread = kSpread;
  if constexpr (kSpread)
    if (groups <= 1u) return;
  llc_u32* const stage = sharedWords + LLC_SPLIT_SPREAD_STAGE_OFFSET;

  // Send: packet h of my slots of every unit of mine to every peer (the own contribution is reloaded at the receive).
  if constexpr (spread)
    buf.blockBcastSpread(spreadSlots, groups, [&](llc_u32 s, Value& v) {
      const llc_u32 w = s >> 1, hs = s & 1u, rowL = w >> vShift, j = b * V + (w & (V - 1u));
      llcLoadWeak2(input + rowL * rowBytes + 16ull * j + 4ull * W * hs, v.w);
    });
  // (w0, kl): its input is x0. If the loop breaks at that slot (a hole, j0 >= S), firstSlot stays set but no later
  // slot of this thread is real either: its units' u are w0 + i * unitStride mod V (both powers of two, w0 <
  // unitStride), so u >= u0, with the same b and k, hence j >= j0 >= S.
  if constexpr (kTwo) {
    // Reduce-scatter, send side: item f = t, t + blockDim, ... (first x0).
    bool first = true;
    for (llc_u32 f = t; f < (p.nranks - 1u) * P; f += blockDim.x) {
      llc_u32 s, i, rowL = 0;
      const llc_u32 o = llcSplitTwoSendItem(f, P, me, p.nranks, s, i);
      const llc_u32 j = i < M ? geo.slotAt(i, rowL) : S;
      if (j < S) {
        const LlcWords4 x = first ? x0 : llcLoadWeakV4(input + rowL * rowBytes + 16ull * j);
        Value v;
#pragma unroll
        for (int c = 0; c < W; ++c) v.w[c] = x.w[c];
        buf.send(o, s, v);
      }
      first = false;
    }
  }
  bool firstSlot = kEarlyInput;
  for (llc_u32 w = t >> tShift; !kTwo && !spread && w < units; w += unitStride) {
    const llc_u32 rowL = w >> vShift, u = w & (V - 1u);
    for (llc_u32 k = kl; k < K; k += kLanes) {
      const llc_u32 j = k * kVirtual + b * V + u;
      if (j >= S) break;
      const llc_u32 i = (rowL * K + k) * V + u;
      const LlcWords4 x = firstSlot ? x0 : llcLoadWeakV4(input + rowL * rowBytes + 16ull * j);
      firstSlot = false;
      Value v;
#pragma unroll
      for (int c = 0; c < W; ++c) v.w[c] = (h == 0 ? x.w[c] : x.w[(kPk - 1) * W + c]);
      buf.bcast(i * kPk + h, v);
    }
  }

  // `push`: the block's last thread (with a unit's work least often) initializes the mbarrier with one arrival,
  // which it makes at once with the expected bytes, and publishes the init (cluster.cuh: fence, then the arrive);
  // every thread then waits on the cluster barrier, so every mbarrier of the cluster is initialized before any of
  // its pushes. After the sends, so that the first send is not behind them (with the init and the arrive at the
  // kernel's start the sends went out 0.22 us later); the wait before the receive costs nothing measurable there
  // (the receive waits for the peers' data, ~1 us more), where waiting after the receive, as the first push kernel
  // did, kept a __syncthreads and a re-read of the q's before the pushes (this order: -0.09..-0.14 us at hidden 4096
  // on an H100, research/notes/fused-probes.md, 2026-12-07).
  if constexpr (kPush) {
    if (t == blockDim.x - 1u) {
      llcMbarInit(mbar, 1u);
      llcMbarArriveExpectTx(mbar, llcClusterNumCtas() * units * 4u); // every block's q's, its own too (C read again)
      llcFenceMbarrierInitCluster();
    }
    llcClusterArriveRelaxed(); // (not .aligned: a warp need not be converged here)
    llcClusterWaitAcquire(); // every mbarrier of the cluster initialized before this thread's first push
  }

  // kTwo, the owner: each slot s of my part reduced in rank order (my own contribution from x), canonicalized as a
  // sent value (Fmt::write canonicalizes what peers receive: every rank then adds the same bits), broadcast to every
  // peer's AG lane and kept for this block's units in shared memory; the __syncthreads makes the copies visible to
  // the unit threads below (it is uniform: every thread of the block reaches it).
  llc_u32* const twoSums = sharedWords + LLC_SPLIT_TWO_SUM_WORD;
  // the owner's reduced slot s of its part: canonicalized, broadcast and kept. (Sending it to this rank's own
  // all-gather lane instead, with no shared copy and no __syncthreads after the reduce, was 0.7-1.7 us slower at
  // hidden 8192: research/notes/fused-probes.md, session 17.)
  const auto publish = [&](llc_u32 s, Value sum) {
#pragma unroll
    for (int c = 0; c < W; ++c) sum.w[c] = Fmt::canonicalize(sum.w[c]);
    buf.bcast(agSlot0 + s, sum);
#pragma unroll
    for (int c = 0; c < W; ++c) twoSums[4u * s + c] = sum.w[c];
  };
  if constexpr (kTwo) {
    // the spread reduce (uniform: S, M, P and nranks are the same in every thread)
    // (and only where one window of the stage holds every rank: with two, 8 ranks x 128-slot parts at 8192 x 16,
    // the spread reduce was 0.46-0.58 us slower than the serial one; bench/results/cuda-h100-split-twoshot-ab-2026-12-07.txt)
    const llc_u32 ownerGroups = LLCOMM_SPLIT_TWO_SPREAD && S % kVirtual == 0u && P * p.nranks == M &&
                                        4u * M <= LLC_SPLIT_TWO_STAGE_WORDS
                                    ? buf.spreadGroups(P)
                                    : 1u;
    if (ownerGroups > 1u) {
      // P < blockDim.x here (spreadGroups), so thread t < P owns slot t of my part; no holes, so every one is real.
      // A window of ranks: LLC_SPLIT_TWO_STAGE_WORDS / (4 P), at least one (P * 4 < 2048: P < blockDim.x <= 512).
      Value own{};
      llc_u32 rowL = 0;
      if (t < P) {
        const llc_u32 j = geo.slotAt(me * P + t, rowL);
        const LlcWords4 x = llcLoadWeakV4(input + rowL * rowBytes + 16ull * j);
#pragma unroll
        for (int c = 0; c < W; ++c) own.w[c] = x.w[c];
      }
      // every thread of the block (it has __syncthreads); the sum of slot t in thread t < P, in rank order
      Value sum = buf.template blockRecvReduceSpread<DT, kSplitTwoBatch, LLC_SPLIT_TWO_STAGE_WORDS>(
          P, ownerGroups, own, sharedWords + LLC_SPLIT_TWO_STAGE_WORD, [] {}, [] {});
      if (t < P) publish(t, sum);
    }
    for (llc_u32 s = t; ownerGroups <= 1u && s < P; s += blockDim.x) {
      const llc_u32 i = me * P + s;
      if (i >= M) break;
      llc_u32 rowL;
      const llc_u32 j = geo.slotAt(i, rowL);
      if (j >= S) continue; // a hole: no rank sent it
      const LlcWords4 x = llcLoadWeakV4(input + rowL * rowBytes + 16ull * j);
      Value own;
#pragma unroll
      for (int c = 0; c < W; ++c) own.w[c] = x.w[c];
      publish(s, buf.template recvReduce<DT, kSplitTwoBatch>(s, own)); // rank order; re-arms the RS slots it read
    }
    __syncthreads();
  }

  if constexpr ((kProbe & LLC_SPLIT_PROBE_XCHG_ONLY) != 0) {
    // Probe: the exchange alone; each thread stores its packet's reduced words to out (as the AllReduce does).
    for (llc_u32 w = t >> tShift; w < units; w += unitStride) {
      const llc_u32 rowL = w >> vShift, u = w & (V - 1u);
      for (llc_u32 k = kl; k < K; k += kLanes) {
        const llc_u32 j = k * kVirtual + b * V + u;
        if (j >= S) break;
        const llc_u32 i = (rowL * K + k) * V + u;
        const LlcWords4 x = llcLoadWeakV4(input + rowL * rowBytes + 16ull * j);
        Value own;
#pragma unroll
        for (int c = 0; c < W; ++c) own.w[c] = (h == 0 ? x.w[c] : x.w[(kPk - 1) * W + c]);
        const Value part = buf.template recvReduce<DT>(i * kPk + h, own);
        llcStorePayload<DT, W>(reinterpret_cast<char*>(p.out[me]) + (rows.begin + rowL) * rowBytes,
                               16ull * j + 4ull * W * h, ~0ull, part.w);
      }
    }
    ch.blockAdvanceEpoch(); // after every recv of this block (ll_buffer.cuh contract)
    return;
  }


  // Receive, reduce, residual add; the unit's sum of squares in a register, then in shared memory. The threads of
  // a unit share its trip counts, so every one of them reaches each shuffle below (explicit masks of their lanes).
  float* qs = reinterpret_cast<float*>(sharedWords);
  float* level1 = qs + LLCOMM_SPLIT_MAX_UNITS; // [warp][32]
  float* invs = level1 + LLCOMM_THREADS;
  // `keep` (uniform): every thread has at most one slot (one unit, one k), so thread 0 of the slot keeps the stored
  // residual and the slot's weights (loaded before the receive, overlapping the wait) in registers for the output.
  // LL16 only: the sentinel kernel is at the 128-register cap already (its 4-word slots, 8 peers in flight) and
  // spills with them (ptxas: 110 bytes), so it reloads.
  // (kTwo too, whose registers allow it: -0.25..-0.35 us on an H100, 8 ranks, bf16, bench/results/
  // cuda-h100-split-twoshot-keep-ab-2026-12-07.txt)
  constexpr bool kKeepable = kPk > 1u || kTwo;
  constexpr bool kLate = kKeepable && (kProbe & LLC_SPLIT_LATE_RESIDUAL) != 0;
  const bool keep = kKeepable && kLanes == K && units <= unitStride;
  LlcSlotFloats<DT> keptR;
  LlcWords4 keptW;
  llc_u32 keptJ = 0, keptRow = 0;
  bool kept = false;
  // spread: thread t < 2 * units loads its packet's own contribution and (h = 0) copies the slot's residual and
  // weights into shared memory with cp.async before the block-wide receive (the copies overlap its wait and hold no
  // registers: with them in registers across the receive ptxas spills), then takes the loop below.
  Value spreadPart; // set (and read) only when `spread`
  if constexpr (kSpread) {
    llc_u32* const spreadKeep = sharedWords + LLC_SPLIT_SPREAD_KEEP_OFFSET + 12u * (t >> 1); // h = 0 threads
    const bool f32resPair = f32res && eb == 2u; // an f32 residual of a 16-bit dtype: two vectors per slot
    {
      Value own{};
      if (t < spreadSlots) {
        const llc_u32 w = t >> 1, rowL = w >> vShift, j = b * V + (w & (V - 1u));
        llcLoadWeak2(input + rowL * rowBytes + 16ull * j + 4ull * W * h, own.w);
        if (h == 0) {
          const char* resSlot = residual + rowL * resRowBytes + static_cast<llc_u64>(j) * E * (f32res ? 4u : eb);
          if ((p.flags & LLCOMM_FUSED_NO_RESIDUAL_IN) == 0u) {
            llcCpAsync16(spreadKeep, resSlot);
            if (f32resPair) llcCpAsync16(spreadKeep + 4, resSlot + 16);
          }
          llcCpAsync16(spreadKeep + 8, reinterpret_cast<const char*>(p.weight[me]) + 16ull * j);
        }
      }
      // Every thread of the block (it has __syncthreads); the sum of packet t in thread t < spreadSlots, in rank
      // order as recvReduce (ll_buffer.cuh: bitwise the same).
      spreadPart = buf.template blockRecvReduceSpread<DT>(spreadSlots, groups, own, stage, [] {}, [] {});
      llcCpAsyncWaitAll(); // my copies are in shared memory (read below by this thread only)
    }
  }
  for (llc_u32 w = t >> tShift; w < units; w += unitStride) {
    const llc_u32 rowL = w >> vShift, u = w & (V - 1u);
    float q = 0.0f;
    LlcSlotFloats<DT> mine; // kLanes > 1: the stored residual of my slot (valid when `have`)
    bool have = false;
    for (llc_u32 k = kl; k < K; k += kLanes) {
      const llc_u32 j = k * kVirtual + b * V + u;
      if (j >= S) break; // the same for both threads of a pair (same k)
      const llc_u32 i = (rowL * K + k) * V + u;
      char* resRow = residual + rowL * resRowBytes;
      LlcSlotFloats<DT> r;
      LlcWords4 wv{};
      Value part;
      if constexpr (spread) { // received above (same unit, packet and slot: w = t / 2, k = 0, j = b V + u)
        const llc_u32* const spreadKeep = sharedWords + LLC_SPLIT_SPREAD_KEEP_OFFSET + 12u * (t >> 1);
        const bool f32resPair = f32res && eb == 2u;
        if (h == 0) {
          if ((p.flags & LLCOMM_FUSED_NO_RESIDUAL_IN) != 0u) {
#pragma unroll
            for (int e = 0; e < LlcSlotFloats<DT>::kElems; ++e) r.v[e] = 0.0f;
          } else if (f32resPair) {
#pragma unroll
            for (int e = 0; e < LlcSlotFloats<DT>::kElems; ++e) r.v[e] = __uint_as_float(spreadKeep[e]);
          } else {
            r.unpack(spreadKeep);
          }
#pragma unroll
          for (int c = 0; c < 4; ++c) wv.w[c] = spreadKeep[8 + c];
        }
        part = spreadPart;
      } else if constexpr (kTwo) {
        // The slot's residual is loaded before the receive, so the load overlaps the wait; the reduced slot from its
        // owner's AG lane (recv re-arms it), or from this block's copy when the owner is me.
        r = llcResidualBefore<DT>(resRow, static_cast<llc_u64>(j) * E, p.flags);
        if constexpr (kKeepable)
          if (keep) wv = llcLoadWeakV4(reinterpret_cast<const char*>(p.weight[me]) + 16ull * j);
        const llc_u32 o = i / P, s = i - o * P;
        if (o == me) {
#pragma unroll
          for (int c = 0; c < W; ++c) part.w[c] = twoSums[4u * s + c];
        } else {
          part = buf.recv(o, agSlot0 + s);
        }
      } else {
        const LlcWords4 x = llcLoadWeakV4(input + rowL * rowBytes + 16ull * j); // own contribution
        // The slot's residual is loaded before the receive, so the load overlaps the wait.
        r = llcResidualBefore<DT>(resRow, static_cast<llc_u64>(j) * E, p.flags);
        if constexpr (kKeepable)
          if (keep && h == 0) wv = llcLoadWeakV4(reinterpret_cast<const char*>(p.weight[me]) + 16ull * j);
        Value own;
#pragma unroll
        for (int c = 0; c < W; ++c) own.w[c] = (h == 0 ? x.w[c] : x.w[(kPk - 1) * W + c]);
        // rank order; re-arms what it read. kFreshBound for 16-bit dtypes (ll_buffer.cuh; with it the f32 sentinel
        // kernel spills 12 bytes at the 128-register cap)
        part = buf.template recvReduce<DT, LLCOMM_RECV_BATCH, DT != LLCOMM_DTYPE_F32>(i * kPk + h, own);
      }
      llc_u32 sum[4]; // constant indices only (a run-time index would put it in local memory)
      if (kPk == 2) {
        // The pair (lanes 2m, 2m + 1: same unit, same k) swaps its halves; data from the partner's registers.
        const unsigned pairMask = 3u << (lane & ~1u);
#pragma unroll
        for (int c = 0; c < W; ++c) {
          const llc_u32 other = __shfl_xor_sync(pairMask, part.w[c], 1);
          sum[c] = h == 0 ? part.w[c] : other;
          sum[(kPk - 1) * W + c] = h == 0 ? other : part.w[c];
        }
      } else {
#pragma unroll
        for (int c = 0; c < W; ++c) sum[c] = part.w[c];
      }
      if (h == 0) {
        // kLate && keep: not stored yet (stored after the barriers from keptR; no other thread reads it here)
        const LlcSlotFloats<DT> stored =
            kLate && keep ? llcResidualAfterStored<DT, false>(resRow, static_cast<llc_u64>(j) * E, p.flags, r, sum)
                          : llcResidualAfterStored<DT>(resRow, static_cast<llc_u64>(j) * E, p.flags, r, sum);
        if (kLanes == 1u) {
#pragma unroll
          for (llc_u32 e = 0; e < E; ++e) q = __fmaf_rn(stored.v[e], stored.v[e], q); // the reference's chain
        } else {
          mine = stored;
          have = true;
        }
        if (keep) {
          keptR = stored;
          keptW = wv;
          keptJ = j;
          keptRow = rowL;
          kept = true;
        }
      }
    }
    if (kLanes > 1u) {
      // The reference's chain over k = 0 .. K - 1 in order, handed from slot lane to slot lane: after step kk every
      // thread of the unit holds q over slots 0 .. kk (a slot past the row adds nothing, as in the reference).
      const llc_u32 base = lane & ~(T - 1u);
      const unsigned groupMask = T == 32u ? 0xFFFFFFFFu : ((1u << T) - 1u) << base;
      for (llc_u32 kk = 0; kk < K; ++kk) {
        float next = q;
        if (have && kl == kk)
#pragma unroll
          for (llc_u32 e = 0; e < E; ++e) next = __fmaf_rn(mine.v[e], mine.v[e], next);
        q = __shfl_sync(groupMask, next, base + kk * kPk);
      }
    }
    // virtual thread bV + u of row rowL (0 when it owns no slot, as in the reference); `push`: at its place among
    // all the cluster's q's, from the register into every block of the cluster (this one included), counted by each
    // block's mbarrier (C and b read again from the cluster registers: push is never a probe, so they are the
    // cluster's; kept live across the receive loop they spilled in session 14's one-kernel version)
    if constexpr (kPush) {
      if (li == 0) {
        const llc_u32 nc = llcClusterNumCtas(), bc = llcClusterCtaRank();
        const llc_u32 at = llcSharedAddress(qs) + 4u * (rowL * kVirtual + bc * (kVirtual / nc) + u);
        for (llc_u32 d = 0; d < nc; ++d) {
          const llc_u32 dst = (bc + d) & (nc - 1u);
          llcStoreAsyncClusterF32(llcMapSharedCluster(at, dst), q, llcMapSharedCluster(mbar, dst));
        }
      }
    } else if (li == 0) {
      qs[w] = q;
    }
  }
  // Units past `units` are never read. Every q of the cluster is stored before any block reads it: `push`: every
  // block's, this one's included, by the mbarrier's phase (waited for by the warps that read them, below);
  // otherwise by the cluster barrier, each block reading the others' q's where they were stored.
  if constexpr (!kPush && kBarrier) {
    llcClusterArriveRelease();
    llcClusterWaitAcquire();
  }

  // Per row: the reference's level-1 and total sums over the cluster's q's, then inv; warp `wi` takes rows wi,
  // wi + 16, ... (each block computes every row of the cluster; all get the same bits).
  const llc_u32 warp = t >> 5;
  const llc_u32 qsBase = llcSharedAddress(qs);
  const float eps = __uint_as_float(p.epsBits);
  if (kPush && warp < R) { // a warp that reads q's: every push into this block completed (phase 0 of the mbarrier)
    LlcSpin spin;
    while (!llcMbarTryWaitParityCluster(mbar, 0u))
      if (!waiter.keepWaiting(spin, me, LLCOMM_WAIT_BARRIER, 0u)) break;
    __syncwarp(); // the warp whole again before the gather
  }
  for (llc_u32 rowL = warp; rowL < R; rowL += blockDim.x >> 5) {
    if constexpr ((kProbe & LLC_SPLIT_PROBE_NO_NORM) != 0) {
      if (lane == 0u) invs[rowL] = 1.0f; // probe: no gather, no total
      continue;
    }
    constexpr llc_u32 kMaxM = LLCOMM_THREADS / 32; // q's per level-1 sum (kVirtual / 32 of them are used)
    const llc_u32 mCount = kVirtual >> 5;
    float vals[kMaxM];
#pragma unroll
    for (llc_u32 m = 0; m < kMaxM; ++m) { // every load in flight before the first add
      if (m < mCount) {
        const llc_u32 vt = lane + 32u * m;
        const llc_u32 owner = kBarrier ? vt >> vShift : b, u = vt & (V - 1u); // probe NO_BARRIER: own q's
        vals[m] = kPush ? qs[rowL * kVirtual + vt]
                       : llcLoadSharedClusterF32(llcMapSharedCluster(qsBase + 4u * (rowL * V + u), owner));
      }
    }
    float a = vals[0];
#pragma unroll
    for (llc_u32 m = 1; m < kMaxM; ++m)
      if (m < mCount) a = __fadd_rn(a, vals[m]);
    level1[32u * warp + lane] = a;
    __syncwarp(); // the warp's level-1 sums are visible to its lane 0
    if (lane == 0u) {
      float total = level1[32u * warp];
      for (llc_u32 l = 1; l < 32u; ++l) total = __fadd_rn(total, level1[32u * warp + l]);
      invs[rowL] = rsqrtf(__fadd_rn(__fdiv_rn(total, static_cast<float>(p.hidden)), eps));
    }
    __syncwarp(); // level1[warp] is read before the warp's next row overwrites it
  }
  // My reads of the other blocks' q's are done (they may exit once every thread of the cluster arrived here).
  if constexpr (kBarrier && !kPush) llcClusterArriveRelease();
  __syncthreads(); // invs is visible to every thread of the block

  // Output: out = dtype((r * inv) * weight) for every slot of my units: from the kept registers (`keep`), else one
  // thread per slot reloading it. The residual slots were stored by threads of this block before the cluster barrier
  // and the __syncthreads above, which order those stores before these loads (llcLoadAfterBarrierV4: the load
  // cannot be hoisted above the barrier).
  const char* weight = reinterpret_cast<const char*>(p.weight[me]);
  const bool e4m3 = (p.flags & LLCOMM_FUSED_OUT_E4M3) != 0u;
  const float outScale = __uint_as_float(p.outScaleBits);
  const llc_u64 outRowBytes = e4m3 ? p.hidden : rowBytes;
  char* out = reinterpret_cast<char*>(p.out[me]) + rows.begin * outRowBytes;
  bool outDone = false;
  if constexpr (kKeepable) {
    if (keep) {
      if (kept) {
        // kLate: the residual slot as llcResidualAfterStored would have stored it (the same words). Only this thread
        // touches it in this kernel (the output comes from keptR), so no ordering is needed within the kernel.
        if constexpr (kLate)
          llcStoreResidualSlot<DT>(residual + keptRow * resRowBytes, static_cast<llc_u64>(keptJ) * E, f32res, keptR);
        llcNormStoreSlotWeights<DT>(keptR, keptW, out + keptRow * outRowBytes, keptJ, invs[keptRow], e4m3, outScale);
      }
      outDone = true;
    }
  }
  if (!outDone)
    for (llc_u32 x = t; x < units * K; x += blockDim.x) { // item x = slot k of unit w, units fastest (coalesced)
      const llc_u32 k = x / units, w = x - k * units;
      const llc_u32 rowL = w >> vShift, u = w & (V - 1u);
      const llc_u32 j = k * kVirtual + b * V + u;
      if (j >= S) continue;
      LlcSlotFloats<DT> r;
      llcLoadResidualSlot<DT>(residual + rowL * resRowBytes, static_cast<llc_u64>(j) * E, f32res, r);
      llcNormStoreSlot<DT>(r, weight, out + rowL * outRowBytes, j, invs[rowL], e4m3, outScale);
    }
  ch.blockAdvanceEpoch(); // after every recv of this block (ll_buffer.cuh contract)
  if constexpr (kBarrier && !kPush) // no block exits while another may still read its q's (`push`: none reads another's)
    llcClusterWaitAcquire();
}

#endif
