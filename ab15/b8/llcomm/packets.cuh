// Slot formats of the LL buffer: the LL packets (CPU: src/protocol/cpu/packets.ts, LL8 only); the sentinel slot is in
// sentinel.cuh. Each documents its layout and the store width it relies on (docs/kernels.md).
//   LL16     16 B: {data0, flag, data1, flag} as two 8-byte elements of one st.v2.u64: PTX makes each 8-byte element
//            single-copy atomic, so a reader that sees both flag copies equal to the epoch has both data words of
//            this epoch. (No 16-byte atomicity is assumed; the stress kernel measures whether it holds anyway.)
//   LL8       8 B: {data, flag} in one aligned scalar st.u64: single-copy atomic by the PTX memory model.
//   Sentinel 16 B: four data words, no flag (sentinel.cuh; CPU: src/protocol/cpu/sentinel.ts).
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

#endif // LLC_HAS_DEVICE
