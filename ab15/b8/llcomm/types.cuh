// Fixed-width integer types and qualifiers shared by device and host code.
// No host headers: this file compiles under NVRTC (which has no <cstdint>) and under any C++17 host compiler.
#pragma once

typedef unsigned char llc_u8;
typedef unsigned short llc_u16;
typedef unsigned int llc_u32;
typedef int llc_i32;
typedef unsigned long long llc_u64;
typedef long long llc_i64;

static_assert(sizeof(llc_u16) == 2 && sizeof(llc_u32) == 4 && sizeof(llc_u64) == 8, "llcomm needs LP64-like widths");

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define LLC_DEVICE __device__ __forceinline__
#define LLC_HAS_DEVICE 1
#elif defined(LLCOMM_HOST_EMULATION) // the kernel logic tests run the device code on host threads
#define LLC_DEVICE inline
#define LLC_HAS_DEVICE 1
#else
#define LLC_HAS_DEVICE 0
#endif

#if LLC_HAS_DEVICE
// 16 bytes as four 32-bit words: the unit of every vector access in llcomm (own type, so NVRTC needs no builtin
// vector headers).
struct alignas(16) LlcWords4 {
  llc_u32 w[4];
};
#endif
