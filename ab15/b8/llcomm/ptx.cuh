// Memory accesses with their ordering in the name (MSCCL++ habit: `signal` vs `relaxedSignal`). Every access that
// another GPU's thread may touch concurrently is a *strong* PTX operation (relaxed/acquire/release) at .sys scope:
// peers on other GPUs reach this memory over NVLink, and ranks of one launch may equally live on different devices
// of one process, so .gpu scope would not cover them. Weak (plain) accesses are used only for data that a kernel
// boundary or an acquire has already made stable.
#pragma once
#include "llcomm/types.cuh"

#if LLC_HAS_DEVICE && defined(LLCOMM_HOST_EMULATION)
// Host emulation for the kernel logic tests (test/kernels/emulator/): the test supplies every function of this
// file under the same name, over std::atomic_ref, before including the kernels. Never defined under nvcc/NVRTC.
#elif LLC_HAS_DEVICE

// ---- timers ----
LLC_DEVICE llc_u64 llcGlobalTimerNs() {
  llc_u64 t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Programmatic dependent launch: wait until the previous kernel of the stream (when launched with the PDL attribute)
// has completed and its memory is visible. Every all-reduce kernel calls this before touching its epoch or buffers,
// so a PDL launch can never read a channel epoch or a slot before the previous call has finished with it. Without
// the attribute it returns at once. (The trigger for dependents is the implicit one at block exit.)
LLC_DEVICE void llcWaitForPriorGrid() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// Called once per unsuccessful poll. On the GPU nothing: a poll loop already yields issue slots to other warps, and
// any sleep would add to the hand-off latency that is the whole point of the LL buffer.
LLC_DEVICE void llcSpinPause() {}

// ---- 32-bit words ----
LLC_DEVICE llc_u32 llcLoadRelaxedSys(const llc_u32* p) {
  llc_u32 v;
  asm volatile("ld.relaxed.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
LLC_DEVICE llc_u32 llcLoadAcquireSys(const llc_u32* p) {
  llc_u32 v;
  asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
LLC_DEVICE void llcStoreRelaxedSys(llc_u32* p, llc_u32 v) {
  asm volatile("st.relaxed.sys.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
LLC_DEVICE void llcStoreReleaseSys(llc_u32* p, llc_u32 v) {
  asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
LLC_DEVICE llc_u32 llcCasRelaxedSys(llc_u32* p, llc_u32 expected, llc_u32 desired) {
  llc_u32 old;
  asm volatile("atom.relaxed.sys.global.cas.b32 %0, [%1], %2, %3;"
               : "=r"(old)
               : "l"(p), "r"(expected), "r"(desired)
               : "memory");
  return old;
}
LLC_DEVICE void llcRedAddReleaseSys(llc_u32* p, llc_u32 v) {
  asm volatile("red.release.sys.global.add.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
// Relaxed counter bump: a release only where a fence.acq_rel.sys precedes it in the same thread (a release pattern
// in the PTX memory model), which is how the LL128 lines publish a warp's batch of contributions with one fence.
LLC_DEVICE void llcRedAddRelaxedSysU32(llc_u32* p, llc_u32 v) {
  asm volatile("red.relaxed.sys.global.add.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

// ---- 64-bit scalars: one aligned 8-byte access is single-copy atomic (PTX memory model), the basis of LL8 ----
LLC_DEVICE llc_u64 llcLoadRelaxedSys64(const llc_u64* p) {
  llc_u64 v;
  asm volatile("ld.relaxed.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
LLC_DEVICE void llcStoreRelaxedSys64(llc_u64* p, llc_u64 v) {
  asm volatile("st.relaxed.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

// ---- 16-byte vectors ----
// v2.u64: PTX models a vector access as one access per element, so each 8-byte element is single-copy atomic
// on its own (the two halves may be observed separately). LL16 puts a flag copy in each element for that reason.
LLC_DEVICE void llcLoadRelaxedSysV2u64(const void* p, llc_u64& a, llc_u64& b) {
  asm volatile("ld.relaxed.sys.global.v2.u64 {%0,%1}, [%2];" : "=l"(a), "=l"(b) : "l"(p) : "memory");
}
LLC_DEVICE void llcStoreRelaxedSysV2u64(void* p, llc_u64 a, llc_u64 b) {
  asm volatile("st.relaxed.sys.global.v2.u64 [%0], {%1,%2};" ::"l"(p), "l"(a), "l"(b) : "memory");
}
// Release / acquire v2.u64 (oneshot-barrier's first barrier, signature.cuh): each element a release store / acquire
// load of its own in the PTX model, so a load of one element that observes the store of that element synchronizes
// with it (which element is observed first does not matter).
LLC_DEVICE void llcLoadAcquireSysV2u64(const void* p, llc_u64& a, llc_u64& b) {
  asm volatile("ld.acquire.sys.global.v2.u64 {%0,%1}, [%2];" : "=l"(a), "=l"(b) : "l"(p) : "memory");
}
LLC_DEVICE void llcStoreReleaseSysV2u64(void* p, llc_u64 a, llc_u64 b) {
  asm volatile("st.release.sys.global.v2.u64 [%0], {%1,%2};" ::"l"(p), "l"(a), "l"(b) : "memory");
}
// v4.u32: four independently atomic 4-byte elements. Used where each element is checked on its own (sentinel).
LLC_DEVICE LlcWords4 llcLoadRelaxedSysV4(const void* p) {
  LlcWords4 v;
  asm volatile("ld.relaxed.sys.global.v4.u32 {%0,%1,%2,%3}, [%4];"
               : "=r"(v.w[0]), "=r"(v.w[1]), "=r"(v.w[2]), "=r"(v.w[3])
               : "l"(p)
               : "memory");
  return v;
}
LLC_DEVICE void llcStoreRelaxedSysV4(void* p, const LlcWords4& v) {
  asm volatile("st.relaxed.sys.global.v4.u32 [%0], {%1,%2,%3,%4};" ::"l"(p), "r"(v.w[0]), "r"(v.w[1]), "r"(v.w[2]),
               "r"(v.w[3])
               : "memory");
}
// Weak 16-byte accesses for the caller's own input/output: each element is read and written by one thread only
// (the same thread in every phase), so input == output (in place) is safe. Not .nc: in place, the data changes.
LLC_DEVICE LlcWords4 llcLoadWeakV4(const void* p) {
  LlcWords4 v;
  asm volatile("ld.global.v4.u32 {%0,%1,%2,%3}, [%4];"
               : "=r"(v.w[0]), "=r"(v.w[1]), "=r"(v.w[2]), "=r"(v.w[3])
               : "l"(p));
  return v;
}
LLC_DEVICE void llcStoreWeakV4(void* p, const LlcWords4& v) {
  asm volatile("st.global.v4.u32 [%0], {%1,%2,%3,%4};" ::"l"(p), "r"(v.w[0]), "r"(v.w[1]), "r"(v.w[2]), "r"(v.w[3])
               : "memory");
}

LLC_DEVICE void llcLoadWeak2(const void* p, llc_u32* w) {
  asm volatile("ld.global.v2.u32 {%0,%1}, [%2];" : "=r"(w[0]), "=r"(w[1]) : "l"(p));
}
// An asynchronous 16-byte copy from global memory into this block's shared memory (sm_80+ cp.async, .ca), for data
// a kernel boundary made stable (as llcLoadWeakV4): no register holds it while it is in flight. The issuing thread
// sees the bytes after its llcCpAsyncWaitAll; only that thread reads them (no block-level ordering implied).
LLC_DEVICE void llcCpAsync16(void* sharedDst, const void* src) {
  llc_u32 d;
  asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(d) : "l"(sharedDst));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 16;" ::"r"(d), "l"(src) : "memory");
}
LLC_DEVICE void llcCpAsyncWaitAll() { asm volatile("cp.async.wait_all;" ::: "memory"); }
LLC_DEVICE void llcLoadWeak1(const void* p, llc_u32* w) { asm volatile("ld.global.u32 %0, [%1];" : "=r"(w[0]) : "l"(p)); }
LLC_DEVICE void llcStoreWeak2(void* p, const llc_u32* w) {
  asm volatile("st.global.v2.u32 [%0], {%1,%2};" ::"l"(p), "r"(w[0]), "r"(w[1]) : "memory");
}
LLC_DEVICE void llcStoreWeak1(void* p, const llc_u32* w) {
  asm volatile("st.global.u32 [%0], %1;" ::"l"(p), "r"(w[0]) : "memory");
}

// ---- conversions (round to nearest even), so no cuda_fp16/cuda_bf16 headers are needed ----
LLC_DEVICE float llcF32FromF16(llc_u16 h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
}
LLC_DEVICE llc_u16 llcF16FromF32Rn(float f) {
  llc_u16 h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
}
LLC_DEVICE llc_u16 llcBf16FromF32Rn(float f) {
  llc_u16 h;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
}
// Two f32 to one word of two 16-bit values, lo in the lower half: one conversion for the pair, not two and a pack.
LLC_DEVICE llc_u32 llcBf16x2FromF32Rn(float lo, float hi) {
  llc_u32 w;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(w) : "f"(hi), "f"(lo));
  return w;
}
LLC_DEVICE llc_u32 llcF16x2FromF32Rn(float lo, float hi) {
  llc_u32 w;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(w) : "f"(hi), "f"(lo));
  return w;
}

// ---- reductions into (peer) memory: NVLink atomics, relaxed at system scope ----
LLC_DEVICE void llcRedAddRelaxedSysF32(llc_u32* p, llc_u32 bitsF32) {
  asm volatile("red.relaxed.sys.global.add.f32 [%0], %1;" ::"l"(p), "f"(__uint_as_float(bitsF32)) : "memory");
}
LLC_DEVICE void llcRedAddRelaxedSysBf16x2(llc_u32* p, llc_u32 packed) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
  asm volatile("red.relaxed.sys.global.add.noftz.bf16x2 [%0], %1;" ::"l"(p), "r"(packed) : "memory");
#else
  // Before sm_90 there is no packed bf16 reduction: a relaxed CAS loop adding both halves (rounded to bf16 each).
  llc_u32 old = *reinterpret_cast<volatile llc_u32*>(p), seen;
  while (true) {
    float lo, hi;
    lo = __uint_as_float(old << 16) + __uint_as_float(packed << 16);
    hi = __uint_as_float(old & 0xFFFF0000u) + __uint_as_float(packed & 0xFFFF0000u);
    llc_u16 l16, h16;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(l16) : "f"(lo));
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h16) : "f"(hi));
    const llc_u32 sum = static_cast<llc_u32>(l16) | (static_cast<llc_u32>(h16) << 16);
    asm volatile("atom.relaxed.sys.global.cas.b32 %0, [%1], %2, %3;" : "=r"(seen) : "l"(p), "r"(old), "r"(sum) : "memory");
    if (seen == old) break;
    old = seen;
  }
#endif
}
LLC_DEVICE void llcRedAddRelaxedSysF16x2(llc_u32* p, llc_u32 packed) {
  asm volatile("red.relaxed.sys.global.add.noftz.f16x2 [%0], %1;" ::"l"(p), "r"(packed) : "memory");
}

// ---- fences ----
// fence.acq_rel.sys: a release+acquire fence for all memory visible at system scope (peers over NVLink).
LLC_DEVICE void llcFenceAcqRelSys() { asm volatile("fence.acq_rel.sys;" ::: "memory"); }

#endif // LLC_HAS_DEVICE
