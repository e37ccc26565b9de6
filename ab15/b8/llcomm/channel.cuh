// Launch model of the contract (docs/cuda-backend-contract.md): gridDim.x = ranksInLaunch * blocksPerRank, a
// block's rank is launchRanks[blockIdx.x / blocksPerRank], its channel blockIdx.x % blocksPerRank. One block owns
// one channel of one rank, so the channel's epoch word in that rank's scratch has exactly one writer.
#pragma once
#include "llcomm/abi.cuh"
#include "llcomm/ptx.cuh"
#include "llcomm/wait.cuh"

#if LLC_HAS_DEVICE

struct LlcBlockRole {
  llc_u32 rank;
  llc_u32 channel;
};

LLC_DEVICE llc_u64 llcCeilDiv(llc_u64 a, llc_u64 b) { return (a + b - 1) / b; }
LLC_DEVICE llc_u64 llcMin(llc_u64 a, llc_u64 b) { return a < b ? a : b; }

// a / n and ceil(a / n) for a run-time count n >= 1 (ranks, channels): a shift when n is a power of two (1, 2, 4, 8,
// ...: the common launches), else a division. Every call computes its element split, lane sizes and role from such
// divisions before its first send, and a division by a run-time value is a chain of some 20 dependent instructions
// (a 64-bit one more): taking them off the power-of-two launches made the kernels 0.07-0.18 us faster at 2 ranks,
// 8 B (research/notes/NOTES.md, fifth session). The branch is uniform over the launch.
LLC_DEVICE llc_u64 llcDivCount(llc_u64 a, llc_u32 n) { return (n & (n - 1)) == 0 ? a >> (__ffs(n) - 1) : a / n; }
LLC_DEVICE llc_u64 llcCeilDivCount(llc_u64 a, llc_u32 n) { return llcDivCount(a + n - 1, n); }

LLC_DEVICE LlcBlockRole llcBlockRole(llc_u32 blocksPerRank, const llc_u8* launchRanks) {
  LlcBlockRole r;
  const llc_u32 slot = (blocksPerRank & (blocksPerRank - 1)) == 0 ? blockIdx.x >> (__ffs(blocksPerRank) - 1)
                                                                 : blockIdx.x / blocksPerRank; // as llcDivCount, in 32 bits
  r.rank = launchRanks[slot];
  r.channel = blockIdx.x - slot * blocksPerRank;
  return r;
}

// The elements [begin, end) of a range of `count` split in `parts` pieces of equal size rounded up to a multiple of
// `alignElems` (the last pieces may be short or empty). kernel-table.ts's capacity rules mirror this formula.
struct LlcRange {
  llc_u64 begin;
  llc_u64 end;
  LLC_DEVICE llc_u64 size() const { return end - begin; }
};
LLC_DEVICE llc_u64 llcPieceElems(llc_u64 count, llc_u32 parts, llc_u32 alignElems) {
  return llcCeilDiv(llcCeilDivCount(count, parts), alignElems) * alignElems; // alignElems: a compile-time constant
}
// Piece `index` when every piece has `per` elements (per = llcPieceElems(...), computed once: the kernels that walk
// the pieces in loops call this, with no division per piece).
LLC_DEVICE LlcRange llcPieceAt(llc_u64 count, llc_u64 per, llc_u32 index) {
  LlcRange r;
  r.begin = llcMin(per * index, count);
  r.end = llcMin(r.begin + per, count);
  return r;
}
LLC_DEVICE LlcRange llcPiece(llc_u64 count, llc_u32 parts, llc_u32 index, llc_u32 alignElems) {
  return llcPieceAt(count, llcPieceElems(count, parts, alignElems), index);
}

// The same split in 32 bits, for the kernels that walk parts in their hot index arithmetic (twoshot-sentinel's
// spread path: a part's begin and size per (slot, owner) pair, in every phase). 32 bits hold it: a launch moves at
// most its receive buffer's bytes (the capacity rules, kernel-table.ts), and bufferBytes <= MAX_BUFFER_BYTES = 2^31
// (options.ts), so total * element bytes < 2^31, and per * index <= total + parts * alignElems (per <= ceil(total /
// parts) + alignElems, index < parts <= LLCOMM_MAX_RANKS) has no wrap either. The 64-bit split costs a 64-bit
// multiply and two 64-bit minimums a part (about 50 SASS instructions with the address arithmetic around them,
// Nsight Compute at 16 ranks 64 KB: research/notes/scale-2026-12-01.md, session 10); these are four 32-bit ones.
// Same formula, same boundaries.
LLC_DEVICE llc_u32 llcDivCount32(llc_u32 a, llc_u32 n) { return (n & (n - 1)) == 0 ? a >> (__ffs(n) - 1) : a / n; }
struct LlcParts {
  llc_u32 total; // elements split
  llc_u32 per;   // elements a part, llcPieceElems(total, parts, alignElems)
  LLC_DEVICE LlcParts(llc_u32 count, llc_u32 parts, llc_u32 alignElems)
      : total(count), per((llcDivCount32(count + parts - 1, parts) + alignElems - 1) / alignElems * alignElems) {}
  LLC_DEVICE llc_u32 begin(llc_u32 index) const {
    const llc_u32 b = per * index;
    return b < total ? b : total;
  }
  LLC_DEVICE llc_u32 size(llc_u32 index) const {
    const llc_u32 rest = total - begin(index);
    return rest < per ? rest : per;
  }
};

// The epoch of one channel of one rank. The word lives in the rank's scratch and is written only by this block,
// at the end of the call; the next call (a later kernel in stream/graph order) reads it. The kernel boundary orders
// that store before that load, so relaxed accesses suffice. Epoch 0 is the zero fill: calls use 1, 2, 3, ...
// and never 0 again: after 0xFFFFFFFF comes 2 (nextEpoch), so a never-written LL slot or scratch flag (zero) is never
// taken for the current epoch, and parity keeps alternating across the u32 wrap (0xFFFFFFFF odd, 2 even).
//
// LLCOMM_SIG_DEFERRED (signature.cuh: kernel e checks epoch e - 1's signatures): the wrap goes to 4 instead, so that
// epoch mod 4 (the signature slot) also continues across it (0xFFFFFFFF is slot 3, 4 slot 0), and the channel keeps
// the stored word: the previous epoch of this channel (`prev`, 0 for the first call), which e - 1 is not across the
// wrap.
struct LlcChannel {
  llc_u32* epochWord;
  llc_u32 epoch; // this call's epoch; its parity selects the buffer half
  llc_u32 index;
#if defined(LLCOMM_SIG_DEFERRED)
  llc_u32 prev; // the stored word: the channel's previous epoch (0: none since creation or recover())
  static LLC_DEVICE llc_u32 nextEpoch(llc_u32 stored) { return stored == 0xFFFFFFFFu ? 4u : stored + 1u; }

  LLC_DEVICE LlcChannel(llc_u64 scratchOfRank, llc_u32 channel)
      : epochWord(reinterpret_cast<llc_u32*>(scratchOfRank + LLCOMM_SCRATCH_EPOCHS_OFFSET) + channel),
        epoch(0), index(channel), prev(llcLoadRelaxedSys(epochWord)) {
    epoch = nextEpoch(prev);
  }
#else
  static LLC_DEVICE llc_u32 nextEpoch(llc_u32 stored) { return stored == 0xFFFFFFFFu ? 2u : stored + 1u; }

  LLC_DEVICE LlcChannel(llc_u64 scratchOfRank, llc_u32 channel)
      : epochWord(reinterpret_cast<llc_u32*>(scratchOfRank + LLCOMM_SCRATCH_EPOCHS_OFFSET) + channel),
        epoch(nextEpoch(llcLoadRelaxedSys(epochWord))), index(channel) {}
#endif

  LLC_DEVICE llc_u32 half() const { return epoch & 1u; }
  // This call's call-signature slot (abi.cuh, LLCOMM_SIG_EPOCH_MASK): the parity, or epoch mod 4 when deferred.
  LLC_DEVICE llc_u32 sigSlot() const { return epoch & LLCOMM_SIG_EPOCH_MASK; }

  // Byte offset of this channel's current half of `region` inside any rank's receive buffer.
  LLC_DEVICE llc_u64 regionOffset(const LlcommRegion& region) const {
    return region.offset + (static_cast<llc_u64>(index) * 2u + half()) * region.channelHalfBytes;
  }

  // End of the call for this channel: persist the epoch (block-wide; call from every thread of the block).
  LLC_DEVICE void blockAdvanceEpoch() {
    __syncthreads(); // every thread is done with this epoch's halves before the next call may start
    if (threadIdx.x == 0) llcStoreRelaxedSys(epochWord, epoch);
  }
};

#endif // LLC_HAS_DEVICE
