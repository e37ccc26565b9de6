// The LL buffer, device side: the thread-level API of docs/design.md §2 with the CPU backend's names (send, recv, recvReduce,
// bcast, reset, blockResetRange, blockAdvanceEpoch), as a plain handle over one rank's view of every rank's receive buffer
// for one channel and one epoch (MSCCL++'s DeviceHandle shape: built per block from the kernel parameters, valid
// for the kernel's lifetime).
//
// Layout of the view: `lanes` lanes of `laneBytes` each, at `baseOffset` inside every rank's receive buffer; lane s
// of rank r's buffer is where sender s writes for r. A slot index counts slots of the format inside a lane.
//
// Contract for callers (what the kernels guarantee):
//  * each (receiver, lane, slot) is written at most once per epoch and read by exactly one thread of the receiver;
//  * the same epoch sequence runs on every rank for this channel (blocksPerRank and the element split are pure
//    functions of the call), and the view's half is the epoch's parity (double buffering, docs/design.md §2);
//  * blockAdvanceEpoch() runs once at the end of the call, after every recv of this block.
#pragma once
#include "llcomm/channel.cuh"
#include "llcomm/dtype.cuh"
#include "llcomm/packets.cuh"
#include "llcomm/sentinel.cuh"
#include "llcomm/wait.cuh"

#if LLC_HAS_DEVICE

// Peers polled together by recvReduce and blockRecvReduceSpread (loads in flight; values kept in registers): the
// default of their kBatch template argument. A kernel at the register cap passes a smaller batch of its own
// (twoshot-sentinel: kTwoshotSpreadBatch), so every kernel of a translation unit keeps its own value.
#define LLCOMM_RECV_BATCH 8

// Peer-parallel path (a block with fewer slots than threads): received words are staged in static shared memory,
// [rank of the window][slot][word], so one thread per slot can reduce them in rank order. 32 KB: under the 48 KB
// static limit with room to spare, and enough for a window of >= 4 ranks at the largest slot count that takes
// this path (511 slots x 4 words). The emulator test compiles with a smaller value to exercise several windows.
#ifndef LLCOMM_PEER_STAGE_WORDS
#define LLCOMM_PEER_STAGE_WORDS 8192
#endif
// Fewest ranks at which the peer-parallel path is taken. Measured on an H200 with virtual ranks (bench/results/
// cuda-h200-bench-v*-2026-11-29b.json against the serial path's runs of the same day): at 8 B oneshot-ll went
// 2.57 -> 3.16 us at 2 ranks and 2.91 -> 3.28 at 4 (the serial path polls every peer in one batch there, so the
// staging and __syncthreads only add), 3.55 -> 3.34 at 8 and 16.8 -> 4.27 at 64. Hence 8. A compile-time knob for
// A/B measurements (-DLLCOMM_SPREAD_MIN_RANKS=65 restores the serial path everywhere); not part of the ABI.
#ifndef LLCOMM_SPREAD_MIN_RANKS
#define LLCOMM_SPREAD_MIN_RANKS 8
#endif
// Fewest thread groups per slot for the peer-parallel path; with fewer, the serial path is taken. Measured on an
// H200 with virtual ranks (bench/results/cuda-h200-ab-pollbatch-2026-11-29.txt, run 5): oneshot-ll with 256 LL8
// slots a block has 2 groups, and the serial path beat it at 32 ranks, 4 KB (8.58 against 10.11 us) and 64 ranks,
// 2-4 KB (14.26 / 28.38 against 17.06 / 33.70), while 4-8 groups (oneshot-sentinel) kept gaining. Compile-time
// knob for A/B measurements; not part of the ABI.
#ifndef LLCOMM_SPREAD_MIN_GROUPS
#define LLCOMM_SPREAD_MIN_GROUPS 4
#endif
// LLC_SHARED_WORDS_ALIGNED: the same, 16-byte aligned (an mbarrier inside it must be 8-byte aligned; the emulator's
// block buffer is).
#if defined(LLCOMM_HOST_EMULATION)
#define LLC_SHARED_WORDS(name, n) llc_u32* name = static_cast<llc_u32*>(llcEmuBlockShared(4ull * (n)))
#define LLC_SHARED_WORDS_ALIGNED(name, n) LLC_SHARED_WORDS(name, n)
#else
#define LLC_SHARED_WORDS(name, n) __shared__ llc_u32 name[n]
#define LLC_SHARED_WORDS_ALIGNED(name, n) __shared__ __align__(16) llc_u32 name[n]
#endif

// Ranks of one window of blockRecvReduceSpreadWords' shared stage: min(LLCOMM_PEER_STAGE_WORDS / perRank, nranks),
// with the division only where the stage does not hold every rank (the small messages the spread path serves take
// the multiply; perRank <= LLCOMM_PEER_STAGE_WORDS on the spread path and nranks <= LLCOMM_MAX_RANKS, so it does not
// wrap): a division by a run-time value is some 20 dependent instructions, and every warp of the block runs it
// before its first poll.
LLC_DEVICE llc_u32 llcStageWindow(llc_u32 perRank, llc_u32 nranks) {
  if (perRank * nranks <= LLCOMM_PEER_STAGE_WORDS) return nranks;
  const llc_u32 w = LLCOMM_PEER_STAGE_WORDS / perRank;
  return w < nranks ? w : nranks;
}

// LlBuffer::spreadGroups without a buffer (the kernels that decide their path before the epoch is known).
LLC_DEVICE llc_u32 llcSpreadGroups(llc_u32 nranks, llc_u32 slots, llc_u32 words) {
  if (nranks < LLCOMM_SPREAD_MIN_RANKS || slots == 0 || slots >= blockDim.x || slots * words > LLCOMM_PEER_STAGE_WORDS)
    return 1;
  const llc_u32 g = blockDim.x / slots < nranks ? blockDim.x / slots : nranks;
  return g >= LLCOMM_SPREAD_MIN_GROUPS ? g : 1;
}

template <class Fmt>
struct LlBuffer {
  static constexpr int kWords = Fmt::kWords;
  struct Value {
    llc_u32 w[Fmt::kWords];
  };

  const llc_u64* recvBuf; // params.recvBuf: each rank's receive buffer, by global rank
  llc_u64 baseOffset;     // this channel-half (and sub-region) inside every rank's buffer
  llc_u64 laneBytes;
  llc_u32 me;
  llc_u32 nranks;
  llc_u32 epoch;
  LlcWaiter* waiter;

  LLC_DEVICE void* slotPtr(llc_u32 rank, llc_u32 lane, llc_u32 slot) const {
    return reinterpret_cast<char*>(recvBuf[rank]) + baseOffset + lane * laneBytes +
           static_cast<llc_u64>(slot) * Fmt::kSlotBytes;
  }

  // Write `v` into `peer`'s lane `me`, slot `slot`, tagged with this epoch.
  LLC_DEVICE void send(llc_u32 peer, llc_u32 slot, const Value& v) const { Fmt::write(slotPtr(peer, me, slot), v.w, epoch); }

  // Send to every rank but me, starting after me so that ranks do not all hit rank 0 first.
  LLC_DEVICE void bcast(llc_u32 slot, const Value& v) const {
    for (llc_u32 k = 1; k < nranks; ++k) {
      llc_u32 peer = me + k;
      peer = peer >= nranks ? peer - nranks : peer;
      send(peer, slot, v);
    }
  }

  // Wait for `peer`'s value in my lane `peer`, slot `slot`; re-arm the slot when the format needs it.
  LLC_DEVICE Value recv(llc_u32 peer, llc_u32 slot) const {
    Value v;
    void* p = slotPtr(me, peer, slot);
    LlcSpin spin;
    while (!Fmt::tryRead(p, epoch, v.w)) {
      if (!waiter->keepWaiting(spin, peer, Fmt::kWhat, slot)) break;
    }
    if (Fmt::kRearm) Fmt::rearm(p); // ordering argument at the format's rearm()
    return v;
  }

  // One poll of the batch members whose bit is set in `pending` (at most kBatch; member j's slot is
  // slotOf(j)): every load is issued before any is inspected, so they are in flight together and the poll costs one
  // round trip, not one per member. (Inspecting a member branches on its loaded data; had the next load waited
  // behind that branch, as it does when each poll is a tryRead, the batch would take a round trip per member.)
  // Returns `pending` less the members that arrived; an arrived member's payload is in got[j]. No ordering is
  // needed among the loads: each slot's validity rides in the same single-copy-atomic element as its data
  // (packets.cuh), so which load returns first cannot make a stale or torn value look valid.
  template <int kBatch = LLCOMM_RECV_BATCH, class SlotOf>
  LLC_DEVICE llc_u32 pollBatch(llc_u32 pending, SlotOf slotOf, Value* got) const {
    typename Fmt::Raw raw[kBatch]; // member j is read only when its bit is set, after its load
#pragma unroll
    for (int j = 0; j < kBatch; ++j)
      if ((pending >> j) & 1u) raw[j] = Fmt::load(slotOf(j));
    llc_u32 arrived = 0;
#pragma unroll
    for (int j = 0; j < kBatch; ++j)
      if (((pending >> j) & 1u) && Fmt::accept(raw[j], epoch, got[j].w)) arrived |= 1u << j;
    return pending & ~arrived;
  }

  // Receive slot `slot` from every rank and reduce in f32 in rank order 0..nranks-1 (my own contribution is `own`,
  // not read from the buffer, canonicalized like a sent value), so every rank computes bitwise the same result. Peers are polled
  // kBatch at a time with all their loads in flight; received values wait in registers.
  // kFreshBound (code generation only; the same loads, stores and sums): the accumulate loop's `r < nranks` takes
  // nranks through an empty asm, so the compiler computes each member's bound after the poll loop instead of keeping
  // the pending mask's predicates alive across it. In the split push kernels (16-bit dtypes) that ran 0.08-0.24 us
  // faster on an H100 at 8 ranks (bench/results/cuda-h100-split-fresh-bound-ab-2026-12-07.txt); elsewhere off (every
  // other kernel's code as before). The asm has no "memory" clobber: it orders no load or store (not a fence).
  template <int DT, int kBatch = LLCOMM_RECV_BATCH, bool kFreshBound = false>
  LLC_DEVICE Value recvReduce(llc_u32 slot, const Value& own) const {
    LlcAcc<DT, Fmt::kWords> acc;
    for (llc_u32 base = 0; base < nranks; base += kBatch) {
      Value got[kBatch];
      llc_u32 pending = 0;
#pragma unroll
      for (int j = 0; j < kBatch; ++j)
        if (base + j < nranks && base + j != me) pending |= 1u << j;
      LlcSpin spin;
      while (pending != 0) {
        pending = pollBatch<kBatch>(pending, [&](int j) { return slotPtr(me, base + j, slot); }, got);
        if (pending != 0 && !waiter->keepWaiting(spin, base + __ffs(pending) - 1, Fmt::kWhat, slot)) break;
      }
      llc_u32 bound = nranks;
      if constexpr (kFreshBound) asm volatile("" : "+r"(bound)); // opaque to the compiler: see kFreshBound
#pragma unroll
      for (int j = 0; j < kBatch; ++j) {
        const llc_u32 r = base + j;
        if (r < bound) {
          Value v;
#pragma unroll
          for (int i = 0; i < Fmt::kWords; ++i) v.w[i] = r == me ? Fmt::canonicalize(own.w[i]) : got[j].w[i];
          if (r == 0)
            acc.set(v.w);
          else
            acc.add(v.w);
          if (Fmt::kRearm && r != me) Fmt::rearm(slotPtr(me, r, slot)); // ordering argument at rearm()
        }
      }
    }
    Value out;
    acc.pack(out.w);
    return out;
  }

  // ---- Peer-parallel variants: block-wide (every thread of the block calls them with the same arguments). ----
  // When a block has fewer slots than threads, the serial path leaves most threads idle while each slot's thread
  // walks all nranks - 1 peers in ceil(nranks / kBatch) sequential poll rounds (each a full L2/NVLink
  // round trip). Here (slot, peer) pairs are spread over the block: thread t serves slot t % slots and the peers of
  // group t / slots. Usable when spreadGroups() > 1.

  // Thread groups per slot (1: use the serial path). A window of ranks must fit the shared stage, too.
  LLC_DEVICE llc_u32 spreadGroups(llc_u32 slots) const { return llcSpreadGroups(nranks, slots, kWords); }

  // bcast for all `slots` slots at once: the nranks - 1 stores of each slot are spread over the thread groups.
  // `load(slot, v)` gives slot `slot`'s payload (each thread loads the slots it sends; cheap, L1/L2-served).
  template <class Load>
  LLC_DEVICE void blockBcastSpread(llc_u32 slots, llc_u32 groups, Load load) const {
    const llc_u32 t = threadIdx.x;
    if (t >= groups * slots) return;
    const llc_u32 group = t / slots, slot = t - group * slots; // one division for both (t % slots)
    if (group + 1 >= nranks) return;
    Value v;
    load(slot, v);
    for (llc_u32 k = 1 + group; k < nranks; k += groups) {
      llc_u32 peer = me + k;
      peer = peer >= nranks ? peer - nranks : peer;
      send(peer, slot, v);
    }
  }

  // recvReduce for all `slots` slots at once. Ranks are taken in windows of as many as the shared stage holds
  // (every rank at once for small slot counts). In a window, the pollers (thread t < groups * slots) wait for their
  // peers' packets kBatch at a time with loads in flight, re-arm each slot right after reading it, and
  // stage the words; after __syncthreads, thread s < slots reduces slot s in f32 over the window's ranks in rank
  // order (its own contribution `own` from registers, canonicalized), continuing the accumulator of the previous
  // windows. So the accumulation order is exactly 0, 1, ..., nranks - 1, as in recvReduce: bitwise the same result.
  // Returns the sum in threads t < slots (garbage elsewhere). A poller that gave up (timeout) stages garbage and
  // still reaches every __syncthreads.
  // `idle()` runs in every thread that polls nothing, before the first __syncthreads, and `done()` in every thread
  // after the last window (the one-shot kernels check the call signature in one or the other: signature.cuh).
  // kStageWords: the words `stage` holds (a kernel with a smaller stage of its own passes it: fused_split.cuh kTwo).
  template <int DT, int kBatch = LLCOMM_RECV_BATCH, llc_u32 kStageWords = LLCOMM_PEER_STAGE_WORDS, class Idle,
            class Done>
  LLC_DEVICE Value blockRecvReduceSpread(llc_u32 slots, llc_u32 groups, const Value& own, llc_u32* stage, Idle idle,
                                         Done done) const {
    const llc_u32 t = threadIdx.x;
    const llc_u32 perRank = slots * static_cast<llc_u32>(kWords);
    // The division, not llcStageWindow: with it oneshot-ll (this function's kernel) was 0.3 / 0.8 / 1.8 us slower at
    // 16 / 32 / 64 ranks, 8 B (its polls and last barrier waited longer, Nsight Compute; the Words variant below
    // gained; bench/results/cuda-h200-ab-prologue32-2026-12-03b.txt).
    llc_u32 window = kStageWords / perRank;
    window = window < nranks ? window : nranks;
    const llc_u32 g = groups < window ? groups : window; // groups beyond the window would have nothing to poll
    const bool poller = t < g * slots;
    if (!poller) idle();
    const llc_u32 group = poller ? t / slots : 0, slot = poller ? t - group * slots : 0; // one division (t % slots)
    LlcAcc<DT, Fmt::kWords> acc;
    for (llc_u32 base = 0; base < nranks; base += window) {
      const llc_u32 end = base + window < nranks ? base + window : nranks;
      if (poller) {
        for (llc_u32 first = base + group; first < end; first += kBatch * g) {
          Value got[kBatch];
          llc_u32 pending = 0;
#pragma unroll
          for (int j = 0; j < kBatch; ++j) {
            const llc_u32 r = first + j * g;
            if (r < end && r != me) pending |= 1u << j;
          }
          LlcSpin spin;
          if (pending == 1u) {
            // One peer for this poller (the common small-message case: as many groups as ranks): a plain poll loop.
            // The batch's unrolled loads and checks cost more here than they save (measured: oneshot-ll 8 B at 8-32
            // ranks, research/notes/NOTES.md); nothing to overlap with one load.
            while (!Fmt::tryRead(slotPtr(me, first, slot), epoch, got[0].w))
              if (!waiter->keepWaiting(spin, first, Fmt::kWhat, slot)) break;
          } else {
            while (pending != 0) {
              pending = pollBatch<kBatch>(pending, [&](int j) { return slotPtr(me, first + j * g, slot); }, got);
              if (pending != 0 && !waiter->keepWaiting(spin, first + (__ffs(pending) - 1) * g, Fmt::kWhat, slot))
                break;
            }
          }
#pragma unroll
          for (int j = 0; j < kBatch; ++j) {
            const llc_u32 r = first + j * g;
            if (r < end && r != me) {
              llc_u32* dst = stage + (r - base) * perRank + slot * kWords;
#pragma unroll
              for (int i = 0; i < kWords; ++i) dst[i] = got[j].w[i];
              // The thread that read the slot re-arms it; ordering argument at rearm() (next write at epoch + 2).
              if (Fmt::kRearm) Fmt::rearm(slotPtr(me, r, slot));
            }
          }
        }
      }
      __syncthreads(); // the window's staged words are visible to the reducing threads
      if (t < slots) {
        for (llc_u32 r = base; r < end; ++r) {
          Value v;
          const llc_u32* src = stage + (r - base) * perRank + t * kWords;
#pragma unroll
          for (int i = 0; i < kWords; ++i) v.w[i] = r == me ? Fmt::canonicalize(own.w[i]) : src[i];
          if (r == 0)
            acc.set(v.w);
          else
            acc.add(v.w);
        }
      }
      if (end < nranks) __syncthreads(); // the stage is read before the next window overwrites it (uniform test)
    }
    done();
    Value out = own;
    if (t < slots) acc.pack(out.w);
    return out;
  }

  // blockRecvReduceSpread with the reduce spread over words: the same pollers, stage layout and windows, but after a
  // window's __syncthreads thread t < slots * kWords reduces word t % kWords of slot t / kWords (one accumulator word,
  // two elements for 16-bit types), in rank order 0..nranks-1 in f32, its own contribution `ownWord` (word t of my
  // part, from registers) canonicalized as a sent word. Each element's sum is the same chain of f32 adds as in
  // recvReduce and blockRecvReduceSpread (LlcAcc works element by element), so the bits are the same; a warp's reads
  // of a staged rank are 128 contiguous bytes (no bank conflict), and a warp issues a quarter of the instructions of
  // the slot-per-thread reduce. Needs slots * kWords <= blockDim.x (spreadGroups() > 1 gives slots <=
  // blockDim.x / LLCOMM_SPREAD_MIN_GROUPS). Returns the packed sum word (not canonicalized) in threads
  // t < slots * kWords, garbage elsewhere. No __syncthreads after the last window: nothing rewrites the stage after
  // it in the caller. `idle()` as in blockRecvReduceSpread; no `done()`: the caller checks where it wants.
  template <int DT, int kBatch = LLCOMM_RECV_BATCH, class Idle>
  LLC_DEVICE llc_u32 blockRecvReduceSpreadWords(llc_u32 slots, llc_u32 groups, llc_u32 ownWord, llc_u32* stage,
                                                Idle idle) const {
    const llc_u32 t = threadIdx.x;
    const llc_u32 perRank = slots * static_cast<llc_u32>(kWords);
    const llc_u32 window = llcStageWindow(perRank, nranks);
    const llc_u32 g = groups < window ? groups : window;
    const bool poller = t < g * slots;
    if (!poller) idle();
    const llc_u32 group = poller ? t / slots : 0, slot = poller ? t - group * slots : 0; // one division (t % slots)
    LlcAcc<DT, 1> acc;
    for (llc_u32 base = 0; base < nranks; base += window) {
      const llc_u32 end = base + window < nranks ? base + window : nranks;
      if (poller) {
        for (llc_u32 first = base + group; first < end; first += kBatch * g) {
          Value got[kBatch];
          llc_u32 pending = 0;
#pragma unroll
          for (int j = 0; j < kBatch; ++j) {
            const llc_u32 r = first + j * g;
            if (r < end && r != me) pending |= 1u << j;
          }
          LlcSpin spin;
          if (pending == 1u) {
            // One peer for this poller: a plain poll loop (as blockRecvReduceSpread).
            while (!Fmt::tryRead(slotPtr(me, first, slot), epoch, got[0].w))
              if (!waiter->keepWaiting(spin, first, Fmt::kWhat, slot)) break;
          } else {
            while (pending != 0) {
              pending = pollBatch<kBatch>(pending, [&](int j) { return slotPtr(me, first + j * g, slot); }, got);
              if (pending != 0 && !waiter->keepWaiting(spin, first + (__ffs(pending) - 1) * g, Fmt::kWhat, slot))
                break;
            }
          }
#pragma unroll
          for (int j = 0; j < kBatch; ++j) {
            const llc_u32 r = first + j * g;
            if (r < end && r != me) {
              llc_u32* dst = stage + (r - base) * perRank + slot * kWords;
#pragma unroll
              for (int i = 0; i < kWords; ++i) dst[i] = got[j].w[i];
              // The thread that read the slot re-arms it; ordering argument at rearm() (next write at epoch + 2).
              if (Fmt::kRearm) Fmt::rearm(slotPtr(me, r, slot));
            }
          }
        }
      }
      __syncthreads(); // bar.sync: the window's staged words (shared memory) are visible to the reducing threads
      if (t < perRank) {
        for (llc_u32 r = base; r < end; ++r) {
          const llc_u32 w = r == me ? Fmt::canonicalize(ownWord) : stage[(r - base) * perRank + t];
          if (r == 0)
            acc.set(&w);
          else
            acc.add(&w);
        }
      }
      if (end < nranks) __syncthreads(); // the stage is read before the next window overwrites it (uniform test)
    }
    llc_u32 out = 0;
    if (t < perRank) acc.pack(&out);
    return out;
  }

  // Re-arm slots [first, first + count) of every lane of my buffer (block-strided over the calling threads).
  // A no-op for LL formats, whose flags carry the epoch. Same ordering argument as Fmt::rearm().
  LLC_DEVICE void blockResetRange(llc_u32 first, llc_u32 count) const {
    if (!Fmt::kRearm) return;
    for (llc_u32 lane = 0; lane < nranks; ++lane)
      for (llc_u32 s = threadIdx.x; s < count; s += blockDim.x) Fmt::rearm(slotPtr(me, lane, first + s));
  }
  LLC_DEVICE void blockReset() const { blockResetRange(0, static_cast<llc_u32>(laneBytes / Fmt::kSlotBytes)); }

};

template <class Fmt>
LLC_DEVICE LlBuffer<Fmt> llcMakeBuffer(const llc_u64* recvBuf, llc_u64 baseOffset, llc_u64 laneBytes, llc_u32 me,
                                       llc_u32 nranks, const LlcChannel& ch, LlcWaiter* waiter) {
  LlBuffer<Fmt> b;
  b.recvBuf = recvBuf;
  b.baseOffset = baseOffset;
  b.laneBytes = laneBytes;
  b.me = me;
  b.nranks = nranks;
  b.epoch = ch.epoch;
  b.waiter = waiter;
  return b;
}

// Payload of `W` words at byte `offset` of a message of `totalBytes` bytes (zero-padded past the end), and its store.
// `Off`: llc_u64, or llc_u32 for index-heavy paths (twoshot-sentinel's spread path: offset < totalBytes < 2^31, a
// launch's bytes, LlcParts, so offset + 4 W does not wrap).
template <int DT, int W, class Off>
LLC_DEVICE void llcLoadPayloadAt(const char* base, Off offset, Off totalBytes, llc_u32* w) {
  if (offset + 4 * W <= totalBytes) {
    if (W == 4) {
      const LlcWords4 v = llcLoadWeakV4(base + offset);
#pragma unroll
      for (int i = 0; i < W; ++i) w[i] = v.w[i];
    } else if (W == 2) {
      llcLoadWeak2(base + offset, w);
    } else {
      llcLoadWeak1(base + offset, w);
    }
  } else {
    llcLoadTail<DT, W>(base + offset, static_cast<llc_u32>(totalBytes - offset), w);
  }
}
template <int DT, int W, class Off>
LLC_DEVICE void llcStorePayloadAt(char* base, Off offset, Off totalBytes, const llc_u32* w) {
  if (offset + 4 * W <= totalBytes) {
    if (W == 4) {
      LlcWords4 v;
#pragma unroll
      for (int i = 0; i < W; ++i) v.w[i] = w[i];
      llcStoreWeakV4(base + offset, v);
    } else if (W == 2) {
      llcStoreWeak2(base + offset, w);
    } else {
      llcStoreWeak1(base + offset, w);
    }
  } else {
    llcStoreTail<DT, W>(base + offset, w, static_cast<llc_u32>(totalBytes - offset));
  }
}
template <int DT, int W>
LLC_DEVICE void llcLoadPayload(const char* base, llc_u64 offset, llc_u64 totalBytes, llc_u32* w) {
  llcLoadPayloadAt<DT, W, llc_u64>(base, offset, totalBytes, w);
}
template <int DT, int W>
LLC_DEVICE void llcStorePayload(char* base, llc_u64 offset, llc_u64 totalBytes, const llc_u32* w) {
  llcStorePayloadAt<DT, W, llc_u64>(base, offset, totalBytes, w);
}
template <int DT, int W>
LLC_DEVICE void llcLoadPayload32(const char* base, llc_u32 offset, llc_u32 totalBytes, llc_u32* w) {
  llcLoadPayloadAt<DT, W, llc_u32>(base, offset, totalBytes, w);
}
template <int DT, int W>
LLC_DEVICE void llcStorePayload32(char* base, llc_u32 offset, llc_u32 totalBytes, const llc_u32* w) {
  llcStorePayloadAt<DT, W, llc_u32>(base, offset, totalBytes, w);
}

#endif // LLC_HAS_DEVICE
