// The sentinel slot format of the LL buffer (CPU: src/protocol/cpu/sentinel.ts).
//   Sentinel 16 B: four data words, no flag; a slot is empty while any element holds the sentinel bits. Each 4-byte
//            element of the v4 access is atomic on its own and checked on its own, so tearing is harmless.
// The fill differs from the CPU's: here LLCOMM_SENTINEL_WORD 0xFFFFFFFF (f32: one NaN; f16/bf16: two 0xFFFF NaNs),
// there 0x7FA57FA5 (src/dtype/sentinels.ts); each side canonicalizes user values equal to its own pattern.
// Stores and polls are .relaxed.sys, as the LL packets' (packets.cuh): each element is its own validity.
#pragma once
#include "llcomm/abi.cuh"
#include "llcomm/dtype.cuh"
#include "llcomm/ptx.cuh"

#if LLC_HAS_DEVICE

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
  // Who re-arms: the thread that read the slot (recvReduce's slot thread, or in LlBuffer::blockRecvReduceSpread the
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
