// LL128-style atomic lines (docs/design.md §2): a 128-byte line = word 0 a counter + words 1..31 of data. Every rank adds
// its contribution into the owner's copy with NVLink reductions (red.add on peer memory), and once a warp has added
// to all its lines, one fence and a counter bump per line publish them; the owner's line is complete when the
// counter reaches nranks. One warp serves one line: lane i >= 1
// owns data word i, lane 0 the counter. Sums happen in memory in arrival order, so the owner reduces once and
// broadcasts (every rank then holds the owner's bits). f32 adds in L2 round to nearest and flush subnormals.
// f16/bf16 by default accumulate in f32 too (LLCOMM_ATOMIC_F32_LINES, abi.cuh; issue 18 item 4): a logical line is a
// pair of physical lines, 256 bytes, and each 32-bit input word's two elements are added as two red.add.f32, the low
// element into the first line's word, the high into the second's (same lane); the first line's word 0 counts, the
// second's stays zero. The owner rounds each f32 sum once to the dtype. Same 31 input words per logical line, so the
// word indexing of the kernel is unchanged; half the input bytes per line byte (kernel-table.ts sizes the ll128
// region for the pairs, so the capacity per launch stays the all-gather's). With LLCOMM_ATOMIC_F32_LINES=0 f16/bf16 add in packed 16-bit arithmetic (red.add.noftz.f16x2/bf16x2,
// one rounding to the dtype per add), the older and denser layout: see docs/kernels.md.
#pragma once
#include "llcomm/abi.cuh"
#include "llcomm/dtype.cuh"
#include "llcomm/ptx.cuh"
#include "llcomm/wait.cuh"

#if LLC_HAS_DEVICE

#define LLCOMM_LINE_BYTES 128
#define LLCOMM_LINE_DATA_WORDS 31

template <int DT>
struct LlcAtomicLines {
  // f16/bf16 on f32 lines: a logical line is two physical lines (low elements, then high elements).
  static constexpr bool kF32Lines = DT != LLCOMM_DTYPE_F32 && LLCOMM_ATOMIC_F32_LINES != 0;
  static constexpr llc_u32 kPhysicalLines = kF32Lines ? 2u : 1u;
  const llc_u64* recvBuf; // each rank's receive buffer, by global rank
  llc_u64 baseOffset;     // this channel-half of the ll128 region
  llc_u32 me;
  llc_u32 nranks;
  LlcWaiter* waiter;

  LLC_DEVICE llc_u32* line(llc_u32 rank, llc_u32 index) const {
    return reinterpret_cast<llc_u32*>(reinterpret_cast<char*>(recvBuf[rank]) + baseOffset +
                                      static_cast<llc_u64>(index) * (kPhysicalLines * LLCOMM_LINE_BYTES));
  }

  // Add this lane's word (lane >= 1 and hasWord) into `owner`'s line `index`. Not counted yet: a warp adds its
  // words to all the lines it serves first, then publishes them all with one fence (warpPublish()).
  LLC_DEVICE void add(llc_u32 owner, llc_u32 index, llc_u32 lane, bool hasWord, llc_u32 word) const {
    if (lane < 1 || !hasWord) return;
    llc_u32* l = line(owner, index);
    // Relaxed: the contributions need no order among themselves (the sum is taken once all have landed); the fence
    // in warpPublish() orders each of them before the counts that announce them.
    if constexpr (kF32Lines) {
      // Two f32 adds (the conversion to f32 is exact; each add rounds to nearest in f32, and red.add.f32 flushes
      // subnormals: a bf16 subnormal is an f32 subnormal, an f16 value never is). Relaxed, as above: the fence in
      // warpPublish() orders both before the one count of the pair.
      float lohi[2];
      LlcDtype<DT>::setWord(lohi, word);
      llcRedAddRelaxedSysF32(l + lane, __float_as_uint(lohi[0]));
      llcRedAddRelaxedSysF32(l + 32u + lane, __float_as_uint(lohi[1]));
    } else if (DT == LLCOMM_DTYPE_F32) {
      llcRedAddRelaxedSysF32(l + lane, word); // relaxed, ordered before the count by warpPublish()'s fence
    } else if (DT == LLCOMM_DTYPE_BF16) {
      // accumulation: 'dtype': packed 16-bit add; relaxed, ordered before the count by warpPublish()'s fence
      llcRedAddRelaxedSysBf16x2(l + lane, word);
    } else {
      // accumulation: 'dtype': packed 16-bit add; relaxed, ordered before the count by warpPublish()'s fence
      llcRedAddRelaxedSysF16x2(l + lane, word);
    }
  }

  // Warp-collective: count the warp's contributions, after add() for every one of them. `lineOf(i, owner, index)`
  // names the warp's i-th (owner, line) pair for i < pairs (false: nothing was added there, no count). One fence per
  // warp and batch instead of a release per line: a release at .sys scope waits until the thread's earlier writes
  // are performed, an NVLink round trip each when every line sends its own (measured: about 0.9 us per owner line,
  // research/notes/NOTES.md), while one fence covers them all.
  // Ordering: bar.warp.sync orders every lane's add()s before every lane's fence (memory ordering among the
  // participating threads); fence.acq_rel.sys followed by a relaxed red in the same thread is a release pattern,
  // and it is cumulative: the owner that acquires count == nranks (warpRecv()) sees every word of every lane of every
  // rank that counted. The counts are spread over the lanes, each after its own fence.
  template <class LineOf>
  LLC_DEVICE void warpPublish(llc_u32 pairs, llc_u32 lane, LineOf lineOf) const {
    __syncwarp();
    if (pairs == 0) return; // warp-uniform
    llcFenceAcqRelSys(); // the release half of the pattern above; every lane, so that each lane's count is a release
    for (llc_u32 i = lane; i < pairs; i += 32u) {
      llc_u32 owner, index;
      // Relaxed red after this lane's fence: the release pattern described above.
      if (lineOf(i, owner, index)) llcRedAddRelaxedSysU32(line(owner, index), 1u);
    }
  }

  // Warp-collective: wait until my line `index` holds all nranks contributions; lane >= 1 returns its data word.
  // Every lane polls the counter with an acquire of its own (one coalesced load), so its data load below is ordered
  // after the count without relying on the warp barrier. On f32 lines the one counter (first physical line) covers
  // both physical lines: each contributor's fence in warpPublish() orders its adds to both before its count, so the
  // acquire of count == nranks orders both data loads after all of them. The two f32 sums are rounded once here.
  LLC_DEVICE llc_u32 warpRecv(llc_u32 index, llc_u32 lane) const {
    llc_u32* l = line(me, index);
    LlcSpin spin;
    while (llcLoadAcquireSys(l) < nranks) {
      if (!waiter->keepWaiting(spin, 0xFFFFFFFFu, LLCOMM_WAIT_LL128_COUNTER, index)) break;
    }
    if (lane < 1) return 0u;
    if constexpr (kF32Lines) {
      const float lohi[2] = {__uint_as_float(llcLoadRelaxedSys(l + lane)),
                             __uint_as_float(llcLoadRelaxedSys(l + 32u + lane))};
      return LlcDtype<DT>::packWord(lohi); // round to nearest even, once
    } else {
      return llcLoadRelaxedSys(l + lane);
    }
  }

  // Warp-collective: zero my line `index` (data and counter) for its next use at epoch + 2. Ordering: every lane
  // has read its word (the warp barrier orders the reads before lane 0 clears the counter), and peers add into
  // this line again only at epoch + 2, after receiving this rank's epoch + 1 data, which is sent by a later kernel:
  // kernel completion performs these stores first (same argument as the sentinel re-arm). On f32 lines both physical
  // lines are zeroed (the second's word 0, never counted, is zero already and stays so).
  LLC_DEVICE void warpReset(llc_u32 index, llc_u32 lane) const {
    llc_u32* l = line(me, index);
    __syncwarp();
    llcStoreRelaxedSys(l + lane, 0u);
    if constexpr (kF32Lines) llcStoreRelaxedSys(l + 32u + lane, 0u);
  }
};

#endif // LLC_HAS_DEVICE
