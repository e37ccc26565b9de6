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
  // True when no element of the word is the sentinel pattern (every element of the slot has arrived).
  LLC_DEVICE static bool wordArrived(llc_u32 w) { return w != 0xFFFFFFFFu; }
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
    return static_cast<llc_u32>(fromF32(acc[0])) | (static_cast<llc_u32>(fromF32(acc[1])) << 16);
  }
  static constexpr llc_u32 kQuietNaNHalf = DT == LLCOMM_DTYPE_F16 ? 0x7E00u : 0x7FC0u;
  LLC_DEVICE static llc_u32 canonicalizeWord(llc_u32 w) {
    llc_u32 lo = w & 0xFFFFu, hi = w >> 16;
    lo = lo == 0xFFFFu ? kQuietNaNHalf : lo;
    hi = hi == 0xFFFFu ? kQuietNaNHalf : hi;
    return lo | (hi << 16);
  }
  LLC_DEVICE static bool wordArrived(llc_u32 w) { return (w & 0xFFFFu) != 0xFFFFu && (w >> 16) != 0xFFFFu; }
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

// Partial 16-byte access for the tail of a message: `validBytes` (< 16, a multiple of the element size) bytes are
// loaded, the rest of the vector is zero (harmless for a sum; never stored back).
template <int DT>
LLC_DEVICE LlcWords4 llcLoadTail(const void* p, llc_u32 validBytes) {
  // Unrolled with constant indices so the vector stays in registers (a run-time index would move it to local memory).
  LlcWords4 v;
  const char* c = static_cast<const char*>(p);
#pragma unroll
  for (int i = 0; i < 4; ++i) v.w[i] = 0;
  if (LlcDtype<DT>::kElemBytes == 4) {
#pragma unroll
    for (int i = 0; i < 4; ++i)
      if (4u * i < validBytes) v.w[i] = reinterpret_cast<const llc_u32*>(c)[i];
  } else {
#pragma unroll
    for (int i = 0; i < 8; ++i)
      if (2u * i < validBytes) v.w[i / 2] |= static_cast<llc_u32>(reinterpret_cast<const llc_u16*>(c)[i]) << (16 * (i & 1));
  }
  return v;
}
template <int DT>
LLC_DEVICE void llcStoreTail(void* p, const LlcWords4& v, llc_u32 validBytes) {
  char* c = static_cast<char*>(p);
  if (LlcDtype<DT>::kElemBytes == 4) {
#pragma unroll
    for (int i = 0; i < 4; ++i)
      if (4u * i < validBytes) reinterpret_cast<llc_u32*>(c)[i] = v.w[i];
  } else {
#pragma unroll
    for (int i = 0; i < 8; ++i)
      if (2u * i < validBytes) reinterpret_cast<llc_u16*>(c)[i] = static_cast<llc_u16>(v.w[i / 2] >> (16 * (i & 1)));
  }
}

#endif // LLC_HAS_DEVICE
