// Element types on the wire, f32 accumulation, and the sentinel canonicalization. Conversions are PTX `cvt`
// (round to nearest even, llcomm/ptx.cuh), so no cuda_fp16/cuda_bf16 headers are needed under NVRTC.
// Everything here works on 32-bit words: one f32, or two packed 16-bit values (low half = lower address).
#pragma once
#include "llcomm/ptx.cuh"
#include "llcomm/types.cuh"

#define LLCOMM_DTYPE_F32 0
#define LLCOMM_DTYPE_F16 1
#define LLCOMM_DTYPE_BF16 2

#if LLC_HAS_DEVICE

template <int DT>
struct LlcDtype;

template <>
struct LlcDtype<LLCOMM_DTYPE_F32> {
  static constexpr int kElemBytes = 4;
  static constexpr int kPerWord = 1;
  static constexpr llc_u32 kQuietNaNWord = 0x7FC00000u;
  LLC_DEVICE static void addWord(float* acc, llc_u32 w) { acc[0] = __fadd_rn(acc[0], __uint_as_float(w)); }
  LLC_DEVICE static void setWord(float* acc, llc_u32 w) { acc[0] = __uint_as_float(w); }
  LLC_DEVICE static llc_u32 packWord(const float* acc) { return __float_as_uint(acc[0]); }
  // Sender-side canonicalization: a value whose bits equal the sentinel becomes the standard quiet NaN, so a
  // reader never mistakes data for an empty slot (NaN in, NaN out). Bitwise compare, never a float compare.
  LLC_DEVICE static llc_u32 canonicalizeWord(llc_u32 w) { return w == 0xFFFFFFFFu ? kQuietNaNWord : w; }
  // Nonzero when the word is the sentinel pattern (its element has not arrived); ORed over a slot's words by
  // LlcSentinel::accept. ~w is zero exactly when w is all ones: then ~w - 1 and w are all ones and the top bit
  // survives; otherwise ~w - 1 borrows nowhere and its top bit is set only where w's is clear.
  static constexpr bool kSwarArrival = true;
  LLC_DEVICE static llc_u32 sentinelBits(llc_u32 w) { return (~w - 1u) & w & 0x80000000u; }
};

template <int DT>
struct LlcHalfDtype {
  static constexpr int kElemBytes = 2;
  static constexpr int kPerWord = 2;
  LLC_DEVICE static float toF32(llc_u16 h) {
    // bf16 is the top half of an f32: exact by a shift.
    return DT == LLCOMM_DTYPE_F16 ? llcF32FromF16(h) : __uint_as_float(static_cast<llc_u32>(h) << 16);
  }
  LLC_DEVICE static llc_u16 fromF32(float f) { return DT == LLCOMM_DTYPE_F16 ? llcF16FromF32Rn(f) : llcBf16FromF32Rn(f); }
  LLC_DEVICE static void addWord(float* acc, llc_u32 w) {
    acc[0] = __fadd_rn(acc[0], toF32(static_cast<llc_u16>(w & 0xFFFFu)));
    acc[1] = __fadd_rn(acc[1], toF32(static_cast<llc_u16>(w >> 16)));
  }
  LLC_DEVICE static void setWord(float* acc, llc_u32 w) {
    acc[0] = toF32(static_cast<llc_u16>(w & 0xFFFFu));
    acc[1] = toF32(static_cast<llc_u16>(w >> 16));
  }
  LLC_DEVICE static llc_u32 packWord(const float* acc) {
    return DT == LLCOMM_DTYPE_F16 ? llcF16x2FromF32Rn(acc[0], acc[1]) : llcBf16x2FromF32Rn(acc[0], acc[1]);
  }
  static constexpr llc_u32 kQuietNaNHalf = DT == LLCOMM_DTYPE_F16 ? 0x7E00u : 0x7FC0u;
  // Bit 15 (31) set exactly when the low (high) half is the sentinel 0xFFFF, else clear. Per half h:
  // (h & 0x7FFF) + 1 carries into bit 15 only when h's low 15 bits are all ones, and is at most 0x8000, so it never
  // carries into the other half; ANDing h's own bit 15 leaves h == 0xFFFF. Exact, unlike the borrowing form
  // (~w - 0x00010001) & w & 0x80008000, whose low-half borrow can flag a high half that is not the sentinel.
  LLC_DEVICE static llc_u32 sentinelBits(llc_u32 w) { return ((w & 0x7FFF7FFFu) + 0x00010001u) & w & 0x80008000u; }
  // Each sentinel half becomes the quiet NaN: (bits >> 15) has a 1 at bit 0 and/or 16, and times (0xFFFF ^ qNaN)
  // (< 0x10000) it is the XOR that turns 0xFFFF into qNaN in exactly those halves. No compare, no select.
  LLC_DEVICE static llc_u32 canonicalizeWord(llc_u32 w) {
    return w ^ ((sentinelBits(w) >> 15) * (0xFFFFu ^ kQuietNaNHalf));
  }
  // True when neither 16-bit half of the word is the sentinel 0xFFFF (both elements have arrived).
  LLC_DEVICE static bool wordArrived(llc_u32 w) { return (w & 0xFFFFu) != 0xFFFFu && (w >> 16) != 0xFFFFu; }
  // The arrival test: half by half (wordArrived) unless the kernel asks for the OR of sentinelBits over the slot
  // (LlcSentinel's second parameter). bf16, against the half-by-half test: on two H200s the OR made
  // oneshot-sentinel 1-4% faster at every size, twoshot-sentinel 3-7% faster up to 256 KB and 6-10% slower at
  // 512 KB-2 MB; at 8 virtual ranks twoshot-sentinel 7-12% slower at 256 KB-1 MB
  // (bench/results/cuda-h200x2-ab-16bit-word-2026-11-29.txt, cuda-h200-ab-16bit-word-2026-11-29.txt). So
  // oneshot-sentinel uses the OR and twoshot-sentinel does not. The borrowing form had made bf16 twoshot-sentinel on
  // two GPUs 14-16% slower at 512 KB-2 MB (bench/results/cuda-h200x2-ab-sentinel-swar-2026-11-29.txt).
  static constexpr bool kSwarArrival = false;
};
template <>
struct LlcDtype<LLCOMM_DTYPE_F16> : LlcHalfDtype<LLCOMM_DTYPE_F16> {};
template <>
struct LlcDtype<LLCOMM_DTYPE_BF16> : LlcHalfDtype<LLCOMM_DTYPE_BF16> {};

// An f32 accumulator for W words (2 floats per word; f32 uses the first of each pair).
template <int DT, int W>
struct LlcAcc {
  float v[2 * W];
  LLC_DEVICE void set(const llc_u32* words) {
#pragma unroll
    for (int i = 0; i < W; ++i) LlcDtype<DT>::setWord(v + 2 * i, words[i]);
  }
  LLC_DEVICE void add(const llc_u32* words) {
#pragma unroll
    for (int i = 0; i < W; ++i) LlcDtype<DT>::addWord(v + 2 * i, words[i]);
  }
  LLC_DEVICE void pack(llc_u32* words) const {
#pragma unroll
    for (int i = 0; i < W; ++i) words[i] = LlcDtype<DT>::packWord(v + 2 * i);
  }
};

// The tail of a message: the W payload words of the last slot, of which only `validBytes` (< 4 * W, a multiple of
// the element size) bytes are in the message. Whole words are loaded as words; a 16-bit type's odd last element as
// one half (the upper half of its word is zero, harmless for a sum and never stored back); words past the end are 0.
// Sized by W, not by the 16-byte vector: an LL8 slot's tail is one 16-bit load. The tail code is in every kernel's
// loop, taken or not, and its size counts: a bf16 tail written for 16 bytes (8 half loads or stores) made oneshot-ll
// 0.2-0.9 us slower than f32 at equal bytes (research/notes/NOTES.md, fourth session).
// Unrolled with constant indices so the words stay in registers (a run-time index would move them to local memory).
template <int DT, int W>
LLC_DEVICE void llcLoadTail(const void* p, llc_u32 validBytes, llc_u32* w) {
  const char* c = static_cast<const char*>(p);
#pragma unroll
  for (int i = 0; i < W; ++i) {
    w[i] = 0;
    if (4u * i + 4u <= validBytes)
      w[i] = reinterpret_cast<const llc_u32*>(c)[i];
    else if (LlcDtype<DT>::kElemBytes == 2 && 4u * i + 2u <= validBytes)
      w[i] = reinterpret_cast<const llc_u16*>(c)[2 * i];
  }
}
template <int DT, int W>
LLC_DEVICE void llcStoreTail(void* p, const llc_u32* w, llc_u32 validBytes) {
  char* c = static_cast<char*>(p);
#pragma unroll
  for (int i = 0; i < W; ++i) {
    if (4u * i + 4u <= validBytes)
      reinterpret_cast<llc_u32*>(c)[i] = w[i];
    else if (LlcDtype<DT>::kElemBytes == 2 && 4u * i + 2u <= validBytes)
      reinterpret_cast<llc_u16*>(c)[2 * i] = static_cast<llc_u16>(w[i]);
  }
}

#endif // LLC_HAS_DEVICE
