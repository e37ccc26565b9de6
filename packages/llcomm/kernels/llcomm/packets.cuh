// Slot formats of the LL buffer. Each documents its layout and the store width it relies on (docs/kernels.md).
//   LL16     16 B: {data0, flag, data1, flag} as two 8-byte elements of one st.v2.u64: PTX makes each 8-byte element
//            single-copy atomic, so a reader that sees both flag copies equal to the epoch has both data words of
//            this epoch. (No 16-byte atomicity is assumed; the stress kernel measures whether it holds anyway.)
//   LL8       8 B: {data, flag} in one aligned scalar st.u64: single-copy atomic by the PTX memory model.
//   Sentinel 16 B: four data words, no flag; a slot is empty while any element holds the sentinel bits. Each 4-byte
//            element of the v4 access is atomic on its own and checked on its own, so tearing is harmless.
// All slot stores and polls are .relaxed.sys: the data rides in the same single-copy-atomic element as its
// validity (flag or non-sentinel bits), so no release/acquire is needed to publish it.
// A poll is split in two: load(slot) issues the access and accept(raw, epoch, v) inspects what it returned
// (tryRead = both). A batch of polls issues every load before inspecting any (LlBuffer::pollBatch), so the loads are
// in flight together: an inspection branches on loaded data, and a load issued after it would wait for that data.
#pragma once
#include "llcomm/dtype.cuh"
#include "llcomm/ptx.cuh"

#if LLC_HAS_DEVICE

struct LlcLL16 {
  static constexpr int kWords = 2;      // payload words per slot
  static constexpr int kSlotBytes = 16; // bytes per slot
  static constexpr bool kRearm = false; // the flag carries the epoch: stale packets never match, no reset needed
  static constexpr llc_u32 kWhat = LLCOMM_WAIT_LL;
  LLC_DEVICE static void write(void* slot, const llc_u32* v, llc_u32 epoch) {
    const llc_u64 hi = static_cast<llc_u64>(epoch) << 32;
    llcStoreRelaxedSysV2u64(slot, hi | v[0], hi | v[1]);
  }
  struct Raw {
    llc_u64 a, b;
  };
  LLC_DEVICE static Raw load(const void* slot) {
    Raw r;
    llcLoadRelaxedSysV2u64(slot, r.a, r.b);
    return r;
  }
  LLC_DEVICE static bool accept(const Raw& r, llc_u32 epoch, llc_u32* v) {
    v[0] = static_cast<llc_u32>(r.a);
    v[1] = static_cast<llc_u32>(r.b);
    return static_cast<llc_u32>(r.a >> 32) == epoch && static_cast<llc_u32>(r.b >> 32) == epoch;
  }
  LLC_DEVICE static bool tryRead(const void* slot, llc_u32 epoch, llc_u32* v) { return accept(load(slot), epoch, v); }
  LLC_DEVICE static void rearm(void*) {}
  LLC_DEVICE static llc_u32 canonicalize(llc_u32 w) { return w; }
};

struct LlcLL8 {
  static constexpr int kWords = 1;
  static constexpr int kSlotBytes = 8;
  static constexpr bool kRearm = false;
  static constexpr llc_u32 kWhat = LLCOMM_WAIT_LL;
  LLC_DEVICE static void write(void* slot, const llc_u32* v, llc_u32 epoch) {
    llcStoreRelaxedSys64(static_cast<llc_u64*>(slot), (static_cast<llc_u64>(epoch) << 32) | v[0]);
  }
  using Raw = llc_u64;
  LLC_DEVICE static Raw load(const void* slot) { return llcLoadRelaxedSys64(static_cast<const llc_u64*>(slot)); }
  LLC_DEVICE static bool accept(Raw a, llc_u32 epoch, llc_u32* v) {
    v[0] = static_cast<llc_u32>(a);
    return static_cast<llc_u32>(a >> 32) == epoch;
  }
  LLC_DEVICE static bool tryRead(const void* slot, llc_u32 epoch, llc_u32* v) { return accept(load(slot), epoch, v); }
  LLC_DEVICE static void rearm(void*) {}
  LLC_DEVICE static llc_u32 canonicalize(llc_u32 w) { return w; }
};

// kSwarHalves: a 16-bit type's arrival test as the OR of the exact per-half sentinel bits over the slot (dtype.cuh)
// instead of half by half; f32 always tests by the OR.
template <int DT, bool kSwarHalves = false>
struct LlcSentinel {
  static constexpr int kWords = 4;
  static constexpr int kSlotBytes = 16;
  static constexpr bool kRearm = true;
  static constexpr llc_u32 kWhat = LLCOMM_WAIT_SENTINEL;
  // The receiver's own contribution goes through the same canonicalization as what peers received from it, so
  // every rank reduces the same bits.
  LLC_DEVICE static llc_u32 canonicalize(llc_u32 w) { return LlcDtype<DT>::canonicalizeWord(w); }
  LLC_DEVICE static void write(void* slot, const llc_u32* v, llc_u32) {
    LlcWords4 c;
#pragma unroll
    for (int i = 0; i < 4; ++i) c.w[i] = LlcDtype<DT>::canonicalizeWord(v[i]);
    llcStoreRelaxedSysV4(slot, c);
  }
  using Raw = LlcWords4;
  LLC_DEVICE static Raw load(const void* slot) { return llcLoadRelaxedSysV4(slot); }
  LLC_DEVICE static bool tryRead(const void* slot, llc_u32 epoch, llc_u32* v) { return accept(load(slot), epoch, v); }
  LLC_DEVICE static bool accept(const Raw& x, llc_u32, llc_u32* v) {
    // bitwise tests, never a float compare. f32, and 16-bit types when kSwarHalves: one OR of the words' sentinel
    // bits, one compare for the slot; otherwise half by half (dtype.cuh says which kernels use which, and why)
    if constexpr (LlcDtype<DT>::kSwarArrival || kSwarHalves) {
      llc_u32 missing = 0;
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        v[i] = x.w[i];
        missing |= LlcDtype<DT>::sentinelBits(x.w[i]);
      }
      return missing == 0;
    } else {
      bool arrived = true;
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        v[i] = x.w[i];
        arrived = arrived && LlcDtype<DT>::wordArrived(x.w[i]);
      }
      return arrived;
    }
  }
  // Re-arm after the read. Ordering: the slot is written next at epoch + 2 (the other half takes epoch + 1), and a
  // peer writes epoch + 2 only after it has received this rank's epoch + 1 data (directly, or for the ring through
  // the chain of hops), which this rank sends in a later kernel. Kernel completion performs this store before the
  // next kernel starts, so the peer's epoch + 2 store is causally after it and cannot be overwritten by it.
  // Who re-arms: the thread that read the slot (recvReduce's slot thread, or in LlBuffer::recvReduceSpread the
  // poller of that (slot, peer) pair), right after its read, so a slot is never re-armed before it was read. Which
  // thread of the block it is does not matter to the argument, which needs only that the store is issued before
  // the kernel completes; the one-shot kernels send nothing after receiving.
  LLC_DEVICE static void rearm(void* slot) {
    LlcWords4 s;
#pragma unroll
    for (int i = 0; i < 4; ++i) s.w[i] = LLCOMM_SENTINEL_WORD;
    llcStoreRelaxedSysV4(slot, s);
  }
};

#endif // LLC_HAS_DEVICE
