// Host emulation of the device environment the all-reduce kernels use, so their logic (lanes, parts, tails,
// epochs and halves, re-arming, counters, ring steps, timeouts) runs on host threads in CI without a GPU.
// Every thread of the grid is a std::thread; __syncthreads/__syncwarp are std::barriers; every access the kernels
// make through llcomm/ptx.cuh is a std::atomic_ref access with the same (or stronger) ordering. What this cannot
// show: GPU memory-model behaviour (x86 is TSO), NVLink atomicity, performance.
#pragma once
#define LLCOMM_HOST_EMULATION 1
#include <atomic>
#include <barrier>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <thread>

#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __grid_constant__

struct EmuDim {
  unsigned x = 0, y = 0, z = 0;
};
inline thread_local EmuDim threadIdx, blockIdx;
inline EmuDim blockDim, gridDim; // one launch at a time
inline thread_local std::barrier<>* emuBlockBarrier = nullptr;
inline thread_local std::barrier<>* emuWarpBarrier = nullptr;
inline void __syncthreads() { emuBlockBarrier->arrive_and_wait(); }
// Static __shared__ arrays: one zeroed buffer per block (the kernels declare them with LLC_SHARED_WORDS); accesses
// between threads are ordered by the __syncthreads barriers, as on the GPU.
constexpr unsigned long long kEmuSharedBytes = 48 * 1024;
inline thread_local unsigned char* emuBlockSharedMem = nullptr;
inline void* llcEmuBlockShared(unsigned long long bytes) {
  if (bytes > kEmuSharedBytes) __builtin_trap();
  return emuBlockSharedMem;
}
inline void __syncwarp() { emuWarpBarrier->arrive_and_wait(); }

// Thread-block clusters (llcomm/cluster.cuh): emuLaunch's clusterSize consecutive blocks form a cluster with one
// std::barrier over all their threads (barrier.cluster.arrive / wait: the token kept per thread; the std::barrier's
// arrive/wait give release/acquire ordering of everything before them, as the PTX barrier does at cluster scope),
// and distributed shared memory is the cluster's block shared buffers: an address is (block in cluster << 20 |
// offset in the block's buffer).
inline unsigned emuClusterSize = 1;
inline thread_local std::barrier<>* emuClusterBarrier = nullptr;
inline thread_local std::optional<std::barrier<>::arrival_token> emuClusterToken;
inline thread_local unsigned char* const* emuClusterShared = nullptr; // the cluster's blocks' shared buffers
inline unsigned llcClusterCtaRank() { return blockIdx.x % emuClusterSize; }
inline unsigned llcClusterNumCtas() { return emuClusterSize; }
inline void llcClusterArriveRelease() { emuClusterToken.emplace(emuClusterBarrier->arrive()); }
inline void llcClusterWaitAcquire() {
  emuClusterBarrier->wait(std::move(*emuClusterToken));
  emuClusterToken.reset();
}
inline unsigned llcSharedAddress(const void* p) {
  return static_cast<unsigned>(static_cast<const unsigned char*>(p) - emuBlockSharedMem);
}
inline unsigned llcMapSharedCluster(unsigned a, unsigned cta) { return (cta << 20) | a; }
inline float llcLoadSharedClusterF32(unsigned a) {
  float v;
  std::memcpy(&v, emuClusterShared[a >> 20] + (a & 0xFFFFFu), 4);
  return v;
}
// The split kernel's push (cluster.cuh, candidate split-push): an mbarrier is 8 bytes of the block's shared buffer
// holding (low to high) 15 bits of pending arrivals, the phase bit, 16 bits of expected arrivals and a signed 32-bit
// tx count, updated by one atomic CAS (release/acquire, as the PTX complete-tx / try_wait at cluster scope); a phase
// completes when its pending arrivals and tx count are both zero (then pending = expected, tx = 0, phase flips).
// barrier.cluster.arrive.relaxed is emulated as the release arrive (stronger); the init fence as a full fence.
inline std::atomic_ref<unsigned long long> emuMbar(unsigned char* block, unsigned offset) {
  return std::atomic_ref<unsigned long long>(*reinterpret_cast<unsigned long long*>(block + offset));
}
inline void emuMbarUpdate(std::atomic_ref<unsigned long long> m, int arrivals, int txDelta) {
  unsigned long long old = m.load(std::memory_order_relaxed), next;
  do {
    unsigned pending = static_cast<unsigned>(old & 0x7FFFu), phase = static_cast<unsigned>(old >> 15) & 1u;
    const unsigned expected = static_cast<unsigned>(old >> 16) & 0xFFFFu;
    int tx = static_cast<int>(static_cast<unsigned>(old >> 32));
    if (static_cast<int>(pending) < arrivals) __builtin_trap(); // more arrivals than the phase expects
    pending -= static_cast<unsigned>(arrivals);
    tx += txDelta;
    if (pending == 0u && tx == 0) {
      pending = expected;
      phase ^= 1u;
    }
    next = (static_cast<unsigned long long>(static_cast<unsigned>(tx)) << 32) |
           (static_cast<unsigned long long>(expected) << 16) | (static_cast<unsigned long long>(phase) << 15) | pending;
  } while (!m.compare_exchange_weak(old, next, std::memory_order_acq_rel, std::memory_order_relaxed));
}
inline void llcMbarInit(unsigned mbar, unsigned arrivals) {
  emuMbar(emuBlockSharedMem, mbar)
      .store((static_cast<unsigned long long>(arrivals) << 16) | arrivals, std::memory_order_relaxed);
}
inline void llcMbarArriveExpectTx(unsigned mbar, unsigned bytes) {
  emuMbarUpdate(emuMbar(emuBlockSharedMem, mbar), 1, static_cast<int>(bytes));
}
inline void llcFenceMbarrierInitCluster() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline void llcClusterArriveRelaxed() { llcClusterArriveRelease(); }
// A phase that never completes (a push lost or sent to the wrong block) would hang the emulated kernel: after 20 s
// of false answers in a row this thread reports it and aborts the emulator.
inline bool llcMbarTryWaitParityCluster(unsigned mbar, unsigned parity) {
  thread_local std::chrono::steady_clock::time_point since{};
  const unsigned long long v = emuMbar(emuBlockSharedMem, mbar).load(std::memory_order_acquire);
  if (((v >> 15) & 1u) != parity) {
    since = {};
    return true;
  }
  const auto now = std::chrono::steady_clock::now();
  if (since == std::chrono::steady_clock::time_point{}) since = now;
  if (now - since > std::chrono::seconds(20)) {
    std::fprintf(stderr, "emu: mbarrier phase %u never completed (block %u thread %u)\n", parity, blockIdx.x,
                 threadIdx.x);
    std::abort();
  }
  std::this_thread::yield();
  return false;
}
inline void llcStoreAsyncClusterF32(unsigned dst, float v, unsigned dstMbar) {
  if ((dst >> 20) != (dstMbar >> 20)) __builtin_trap(); // the address and the mbarrier of one block
  unsigned char* block = emuClusterShared[dst >> 20];
  std::memcpy(block + (dst & 0xFFFFFu), &v, 4);
  emuMbarUpdate(emuMbar(block, dstMbar & 0xFFFFFu), 0, -4);
}

// Warp shuffles (__shfl_sync, __shfl_xor_sync) among the lanes of `mask` only (the kernels shuffle within pairs or
// groups of lanes while other lanes of the warp do something else): each lane publishes its value under its count of
// shuffles with masks of that size, then waits until every lane of the mask has published that count, and reads the
// source lane's value. A lane can be at most one shuffle ahead of its mask's lanes, so 4 slots per lane suffice.
struct EmuWarpShuffle {
  std::atomic<unsigned> gen[6][32]; // [log2(mask size)][lane]: shuffles published
  unsigned value[6][32][4];
};
inline thread_local EmuWarpShuffle* emuWarpShuffle = nullptr;
inline thread_local unsigned emuShuffleGen[6] = {0, 0, 0, 0, 0, 0};
inline unsigned emuShuffle(unsigned mask, unsigned v, unsigned src) {
  EmuWarpShuffle* w = emuWarpShuffle;
  const unsigned lane = threadIdx.x & 31u;
  const int size = __builtin_ctz(static_cast<unsigned>(__builtin_popcount(mask))); // masks are 2^k lanes
  const unsigned g = ++emuShuffleGen[size];
  w->value[size][lane][g & 3u] = v;
  w->gen[size][lane].store(g, std::memory_order_release);
  for (unsigned l = 0; l < 32; ++l)
    if ((mask >> l) & 1u)
      while (w->gen[size][l].load(std::memory_order_acquire) < g) std::this_thread::yield();
  return w->value[size][src & 31u][g & 3u];
}
inline unsigned __shfl_sync(unsigned mask, unsigned v, unsigned src) { return emuShuffle(mask, v, src); }
inline float __shfl_sync(unsigned mask, float v, unsigned src) {
  unsigned u;
  std::memcpy(&u, &v, 4);
  u = emuShuffle(mask, u, src);
  std::memcpy(&v, &u, 4);
  return v;
}
inline unsigned __shfl_xor_sync(unsigned mask, unsigned v, int laneMask) {
  return emuShuffle(mask, v, (threadIdx.x & 31u) ^ static_cast<unsigned>(laneMask));
}
inline float __uint_as_float(unsigned u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline unsigned __float_as_uint(float f) {
  unsigned u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float __fadd_rn(float a, float b) {
  volatile float r = a + b;
  return r;
}
inline int __ffs(unsigned x) { return __builtin_ffs(static_cast<int>(x)); }
inline long long clock64() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
inline unsigned long long atomicAdd(unsigned long long* p, unsigned long long v) {
  return std::atomic_ref<unsigned long long>(*p).fetch_add(v);
}

#include "llcomm/types.cuh"

template <class T>
std::atomic_ref<T> emuRef(const void* p) {
  return std::atomic_ref<T>(*const_cast<T*>(static_cast<const T*>(p)));
}
constexpr auto kRelaxed = std::memory_order_relaxed;

inline llc_u64 llcGlobalTimerNs() { return static_cast<llc_u64>(clock64()); }
inline void llcSpinPause() { std::this_thread::yield(); }
inline llc_u32 llcLoadRelaxedSys(const llc_u32* p) { return emuRef<llc_u32>(p).load(kRelaxed); }
inline llc_u32 llcLoadAcquireSys(const llc_u32* p) { return emuRef<llc_u32>(p).load(std::memory_order_acquire); }
inline void llcStoreRelaxedSys(llc_u32* p, llc_u32 v) { emuRef<llc_u32>(p).store(v, kRelaxed); }
inline void llcStoreReleaseSys(llc_u32* p, llc_u32 v) { emuRef<llc_u32>(p).store(v, std::memory_order_release); }
inline llc_u32 llcCasRelaxedSys(llc_u32* p, llc_u32 expected, llc_u32 desired) {
  emuRef<llc_u32>(p).compare_exchange_strong(expected, desired, kRelaxed);
  return expected;
}
inline void llcRedAddReleaseSys(llc_u32* p, llc_u32 v) { emuRef<llc_u32>(p).fetch_add(v, std::memory_order_release); }
inline void llcRedAddRelaxedSysU32(llc_u32* p, llc_u32 v) { emuRef<llc_u32>(p).fetch_add(v, kRelaxed); }
inline llc_u64 llcLoadRelaxedSys64(const llc_u64* p) { return emuRef<llc_u64>(p).load(kRelaxed); }
inline void llcStoreRelaxedSys64(llc_u64* p, llc_u64 v) { emuRef<llc_u64>(p).store(v, kRelaxed); }
// Vector accesses: one atomic access per element, exactly the PTX model's guarantee (and no more).
inline void llcLoadRelaxedSysV2u64(const void* p, llc_u64& a, llc_u64& b) {
  a = emuRef<llc_u64>(p).load(kRelaxed);
  b = emuRef<llc_u64>(static_cast<const char*>(p) + 8).load(kRelaxed);
}
inline void llcStoreRelaxedSysV2u64(void* p, llc_u64 a, llc_u64 b) {
  emuRef<llc_u64>(p).store(a, kRelaxed);
  emuRef<llc_u64>(static_cast<char*>(p) + 8).store(b, kRelaxed);
}
inline void llcLoadAcquireSysV2u64(const void* p, llc_u64& a, llc_u64& b) {
  a = emuRef<llc_u64>(p).load(std::memory_order_acquire);
  b = emuRef<llc_u64>(static_cast<const char*>(p) + 8).load(std::memory_order_acquire);
}
inline void llcStoreReleaseSysV2u64(void* p, llc_u64 a, llc_u64 b) {
  emuRef<llc_u64>(p).store(a, std::memory_order_release);
  emuRef<llc_u64>(static_cast<char*>(p) + 8).store(b, std::memory_order_release);
}
inline LlcWords4 llcLoadRelaxedSysV4(const void* p) {
  LlcWords4 v;
  for (int i = 0; i < 4; ++i) v.w[i] = emuRef<llc_u32>(static_cast<const char*>(p) + 4 * i).load(kRelaxed);
  return v;
}
inline void llcStoreRelaxedSysV4(void* p, const LlcWords4& v) {
  for (int i = 0; i < 4; ++i) emuRef<llc_u32>(static_cast<char*>(p) + 4 * i).store(v.w[i], kRelaxed);
}
// "Weak" accesses are emulated as relaxed atomics too (stronger than needed, never weaker).
inline LlcWords4 llcLoadWeakV4(const void* p) { return llcLoadRelaxedSysV4(p); }
inline void llcStoreWeakV4(void* p, const LlcWords4& v) { llcStoreRelaxedSysV4(p, v); }
inline void llcLoadWeak2(const void* p, llc_u32* w) {
  for (int i = 0; i < 2; ++i) w[i] = emuRef<llc_u32>(static_cast<const char*>(p) + 4 * i).load(kRelaxed);
}
inline void llcLoadWeak1(const void* p, llc_u32* w) { w[0] = emuRef<llc_u32>(p).load(kRelaxed); }
// cp.async: done at once (the emulated thread reads it only after its llcCpAsyncWaitAll, as on the GPU).
inline void llcCpAsync16(void* sharedDst, const void* src) {
  const LlcWords4 v = llcLoadRelaxedSysV4(src);
  std::memcpy(sharedDst, &v, 16);
}
inline void llcCpAsyncWaitAll() {}
inline void llcStoreWeak2(void* p, const llc_u32* w) {
  for (int i = 0; i < 2; ++i) emuRef<llc_u32>(static_cast<char*>(p) + 4 * i).store(w[i], kRelaxed);
}
inline void llcStoreWeak1(void* p, const llc_u32* w) { emuRef<llc_u32>(p).store(w[0], kRelaxed); }
inline float llcF32FromF16(llc_u16 h) {
  _Float16 x;
  std::memcpy(&x, &h, 2);
  return static_cast<float>(x);
}
inline llc_u16 llcF16FromF32Rn(float f) {
  const _Float16 x = static_cast<_Float16>(f);
  llc_u16 h;
  std::memcpy(&h, &x, 2);
  return h;
}
inline llc_u16 llcBf16FromF32Rn(float f) {
  const llc_u32 u = __float_as_uint(f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return 0x7FFF; // NaN: the canonical bf16 NaN, as cvt.rn.bf16.f32 gives
  return static_cast<llc_u16>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}
// The paired conversions (cvt.rn.bf16x2.f32 / cvt.rn.f16x2.f32): each half as the single conversion, lo in the low
// half.
inline llc_u32 llcBf16x2FromF32Rn(float lo, float hi) {
  return static_cast<llc_u32>(llcBf16FromF32Rn(lo)) | (static_cast<llc_u32>(llcBf16FromF32Rn(hi)) << 16);
}
inline llc_u32 llcF16x2FromF32Rn(float lo, float hi) {
  return static_cast<llc_u32>(llcF16FromF32Rn(lo)) | (static_cast<llc_u32>(llcF16FromF32Rn(hi)) << 16);
}
inline void emuRedAdd(llc_u32* p, llc_u32 (*combine)(llc_u32, llc_u32), llc_u32 v) {
  auto r = emuRef<llc_u32>(p);
  llc_u32 old = r.load(kRelaxed);
  while (!r.compare_exchange_weak(old, combine(old, v), kRelaxed)) {
  }
}
inline llc_u32 emuAddF32(llc_u32 a, llc_u32 b) { return __float_as_uint(__uint_as_float(a) + __uint_as_float(b)); }
template <int F16>
inline llc_u32 emuAddHalf2(llc_u32 a, llc_u32 b) {
  llc_u32 out = 0;
  for (int i = 0; i < 2; ++i) {
    const llc_u16 x = static_cast<llc_u16>(a >> (16 * i)), y = static_cast<llc_u16>(b >> (16 * i));
    float fx, fy;
    if (F16) {
      fx = llcF32FromF16(x);
      fy = llcF32FromF16(y);
    } else {
      fx = __uint_as_float(static_cast<llc_u32>(x) << 16);
      fy = __uint_as_float(static_cast<llc_u32>(y) << 16);
    }
    const llc_u16 s = F16 ? llcF16FromF32Rn(fx + fy) : llcBf16FromF32Rn(fx + fy);
    out |= static_cast<llc_u32>(s) << (16 * i);
  }
  return out;
}
inline void llcRedAddRelaxedSysF32(llc_u32* p, llc_u32 bits) { emuRedAdd(p, emuAddF32, bits); }
inline void llcRedAddRelaxedSysBf16x2(llc_u32* p, llc_u32 packed) { emuRedAdd(p, emuAddHalf2<0>, packed); }
inline void llcRedAddRelaxedSysF16x2(llc_u32* p, llc_u32 packed) { emuRedAdd(p, emuAddHalf2<1>, packed); }
inline void llcFenceAcqRelSys() { std::atomic_thread_fence(std::memory_order_acq_rel); }
inline void llcWaitForPriorGrid() {} // launches are sequential in the emulation
