// Residual add and RMSNorm, block-level, shared by the fused kernels and the reference RMSNorm kernel
// (kernels/allreduce/rmsnorm.cu), so that the fused call and AllReduce-then-RMSNorm do exactly the same arithmetic
// on the same bits: bit-identical results (the fused kernels' AllReduce sum is the same rank-order f32 sum, rounded
// to the dtype, as every llcomm AllReduce kernel's output).
//
// The arithmetic, per element i of a row (all f32, round to nearest even, no contraction):
//   r_i  = residual_i + sum_i        (rounded to the dtype unless the residual stream is f32; = sum_i with no residual)
//   per thread t: q_t = fma chain over the elements of slots t, t + blockDim, ... (16-byte slots, element order)
//   level 1: lane l < 32: a_l = q_l + q_{l+32} + q_{l+64} + ... (in that order)
//   total = a_0 + a_1 + ... + a_31 (thread 0, in that order)
//   inv  = rsqrtf(total / hidden + eps);  out_i = dtype((r_i * inv) * weight_i)
// The order depends on blockDim, so every kernel that uses it runs LLCOMM_THREADS threads (the emulator test runs
// all of them with its own, equal, thread count).
#pragma once
#include "llcomm/dtype.cuh"
#include "llcomm/fused_abi.cuh"
#include "llcomm/ll_buffer.cuh"

#if LLC_HAS_DEVICE

// Floats of shared memory llcRmsNormRowFrom needs (one per thread, 32 level-1 sums, the total).
#define LLCOMM_NORM_SHARED_FLOATS (LLCOMM_THREADS + 33)

// A weak 16-byte load of data other threads of this block stored before a __syncthreads: as llcLoadWeakV4, with a
// "memory" clobber so that the compiler cannot hoist it above the barrier (llcLoadWeakV4 has none: its callers read
// only what their own thread wrote). The barrier orders the stores before it at block scope (CUDA memory model).
#if defined(LLCOMM_HOST_EMULATION)
LLC_DEVICE LlcWords4 llcLoadAfterBarrierV4(const void* p) { return llcLoadWeakV4(p); }
#else
LLC_DEVICE LlcWords4 llcLoadAfterBarrierV4(const void* p) {
  LlcWords4 v;
  asm volatile("ld.global.v4.u32 {%0,%1,%2,%3}, [%4];"
               : "=r"(v.w[0]), "=r"(v.w[1]), "=r"(v.w[2]), "=r"(v.w[3])
               : "l"(p)
               : "memory");
  return v;
}
#endif

// Two f32 to two FP8 e4m3 bytes (lo in the lower byte): round to nearest even, saturated to the largest finite value
// (+-448), NaN to NaN. One cvt for the pair (sm_89+). The emulator supplies its own llcE4m3x2FromF32.
#if !defined(LLCOMM_HOST_EMULATION)
LLC_DEVICE llc_u16 llcE4m3x2FromF32(float lo, float hi) {
  llc_u16 h;
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 890
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(h) : "f"(hi), "f"(lo));
#else
  h = 0;
  __trap(); // no FP8 conversion before sm_89: the host refuses an e4m3 output there
#endif
  return h;
}
#endif

// The elements of one 16-byte slot of dtype DT as floats (f32: 4, 16-bit types: 8).
template <int DT>
struct LlcSlotFloats {
  static constexpr int kElems = 16 / LlcDtype<DT>::kElemBytes;
  float v[kElems];
  LLC_DEVICE void unpack(const llc_u32* w) {
#pragma unroll
    for (int i = 0; i < 4; ++i) LlcDtype<DT>::setWord(v + i * LlcDtype<DT>::kPerWord, w[i]);
  }
  LLC_DEVICE void pack(llc_u32* w) const {
#pragma unroll
    for (int i = 0; i < 4; ++i) w[i] = LlcDtype<DT>::packWord(v + i * LlcDtype<DT>::kPerWord);
  }
};

// The residual elements of one slot of x (elements [elem0, elem0 + kElems) of a contiguous run starting at `base`):
// dtype DT, or f32 when `f32` (then 16-bit types take two 16-byte vectors). Weak accesses: the residual is this
// rank's own memory; the add pass reads and writes each element in one thread, the norm passes read what other
// threads of the block wrote before a __syncthreads (hence llcLoadAfterBarrierV4).
template <int DT, bool kAfterBarrier = true>
LLC_DEVICE void llcLoadResidualSlot(const char* base, llc_u64 elem0, bool f32, LlcSlotFloats<DT>& r) {
  constexpr int E = LlcSlotFloats<DT>::kElems;
  const auto load = [](const char* p) { return kAfterBarrier ? llcLoadAfterBarrierV4(p) : llcLoadWeakV4(p); };
  if (f32 && LlcDtype<DT>::kElemBytes == 2) {
#pragma unroll
    for (int h = 0; h < E / 4; ++h) {
      const LlcWords4 v = load(base + 4 * elem0 + 16 * h);
#pragma unroll
      for (int i = 0; i < 4; ++i) r.v[4 * h + i] = __uint_as_float(v.w[i]);
    }
  } else {
    const LlcWords4 v = load(base + LlcDtype<DT>::kElemBytes * elem0);
    r.unpack(v.w);
  }
}
template <int DT>
LLC_DEVICE void llcStoreResidualSlot(char* base, llc_u64 elem0, bool f32, const LlcSlotFloats<DT>& r) {
  constexpr int E = LlcSlotFloats<DT>::kElems;
  if (f32 && LlcDtype<DT>::kElemBytes == 2) {
#pragma unroll
    for (int h = 0; h < E / 4; ++h) {
      LlcWords4 v;
#pragma unroll
      for (int i = 0; i < 4; ++i) v.w[i] = __float_as_uint(r.v[4 * h + i]);
      llcStoreWeakV4(base + 4 * elem0 + 16 * h, v);
    }
  } else {
    LlcWords4 v;
    r.pack(v.w);
    llcStoreWeakV4(base + LlcDtype<DT>::kElemBytes * elem0, v);
  }
}

// The residual add of one slot in two steps, so that the residual load can be issued before the slot's receive and
// overlap its wait: llcResidualBefore loads the slot's residual (zeros with NO_RESIDUAL_IN); llcResidualAfter adds
// the reduced words (dtype DT) and stores residual[elem0 ..] = residual + sum. With a residual in the dtype the sum
// is rounded to the dtype (pack); with an f32 residual it stays f32. Only this thread touches these elements in the
// add pass, so the plain weak load is enough.
template <int DT>
LLC_DEVICE LlcSlotFloats<DT> llcResidualBefore(const char* base, llc_u64 elem0, llc_u32 flags) {
  LlcSlotFloats<DT> r;
  if ((flags & LLCOMM_FUSED_NO_RESIDUAL_IN) == 0u)
    llcLoadResidualSlot<DT, false>(base, elem0, (flags & LLCOMM_FUSED_RESIDUAL_F32) != 0u, r);
  else
#pragma unroll
    for (int i = 0; i < LlcSlotFloats<DT>::kElems; ++i) r.v[i] = 0.0f;
  return r;
}
template <int DT>
LLC_DEVICE void llcResidualAfter(char* base, llc_u64 elem0, llc_u32 flags, const LlcSlotFloats<DT>& r,
                                 const llc_u32* sumWords) {
  LlcSlotFloats<DT> s;
  s.unpack(sumWords);
  // NO_RESIDUAL_IN: residual = sum, stored as is (no add)
  if ((flags & LLCOMM_FUSED_NO_RESIDUAL_IN) == 0u)
#pragma unroll
    for (int i = 0; i < LlcSlotFloats<DT>::kElems; ++i) s.v[i] = __fadd_rn(r.v[i], s.v[i]);
  llcStoreResidualSlot<DT>(base, elem0, (flags & LLCOMM_FUSED_RESIDUAL_F32) != 0u, s);
}
// llcResidualAfter that also returns the residual values as stored (rounded to the residual's type), i.e. exactly
// what llcLoadResidualSlot would read back: the split fused kernel takes the sum of squares from them in registers.
// With kStore = false nothing is stored: the caller stores the returned values later with llcStoreResidualSlot,
// which writes the same words (16-bit types: the values are already the dtype's, so packing them again is exact).
template <int DT, bool kStore = true>
LLC_DEVICE LlcSlotFloats<DT> llcResidualAfterStored(char* base, llc_u64 elem0, llc_u32 flags,
                                                   const LlcSlotFloats<DT>& r, const llc_u32* sumWords) {
  LlcSlotFloats<DT> s;
  s.unpack(sumWords);
  if ((flags & LLCOMM_FUSED_NO_RESIDUAL_IN) == 0u)
#pragma unroll
    for (int i = 0; i < LlcSlotFloats<DT>::kElems; ++i) s.v[i] = __fadd_rn(r.v[i], s.v[i]);
  const bool f32 = (flags & LLCOMM_FUSED_RESIDUAL_F32) != 0u;
  if (kStore) llcStoreResidualSlot<DT>(base, elem0, f32, s);
  if (!(f32 && LlcDtype<DT>::kElemBytes == 2)) {
    llc_u32 w[4];
    s.pack(w); // the stored words (llcStoreResidualSlot packs the same way)
    s.unpack(w);
  }
  return s;
}
template <int DT>
LLC_DEVICE void llcResidualAddSlot(char* base, llc_u64 elem0, llc_u32 flags, const llc_u32* sumWords) {
  llcResidualAfter<DT>(base, elem0, flags, llcResidualBefore<DT>(base, elem0, flags), sumWords);
}

// The output of slot j of a row (16-byte slot j of x's dtype): out = dtype((r * inv) * weight), or with outE4m3
// e4m3((r * inv) * weight * outScale) (E bytes per slot, lowest element in the lowest byte). Shared by every kernel
// that normalizes (llcRmsNormRowFrom, the split fused kernel), so their arithmetic is the same by construction.
// llcNormStoreSlotWeights takes slot j's weights already loaded (wv: the 16 bytes at weight + 16 j).
template <int DT>
LLC_DEVICE void llcNormStoreSlotWeights(LlcSlotFloats<DT> r, const LlcWords4& wv, char* outRow, llc_u32 j, float inv,
                                        bool outE4m3, float outScale) {
  constexpr int E = LlcSlotFloats<DT>::kElems;
  LlcSlotFloats<DT> w;
  w.unpack(wv.w);
#pragma unroll
  for (int i = 0; i < E; ++i) r.v[i] = __fmul_rn(__fmul_rn(r.v[i], inv), w.v[i]);
  if (outE4m3) {
    // E bytes per slot (8 or 4): one or two words of four e4m3 values, lowest element in the lowest byte.
    llc_u32 q[2] = {0, 0};
#pragma unroll
    for (int i = 0; i < E; i += 2) {
      const llc_u32 pair = llcE4m3x2FromF32(__fmul_rn(r.v[i], outScale), __fmul_rn(r.v[i + 1], outScale));
      q[i / 4] |= pair << (8 * (i % 4));
    }
    if (E == 8)
      llcStoreWeak2(outRow + 8ull * j, q);
    else
      llcStoreWeak1(outRow + 4ull * j, q);
    return;
  }
  LlcWords4 o;
  r.pack(o.w);
  llcStoreWeakV4(outRow + 16ull * j, o);
}
template <int DT>
LLC_DEVICE void llcNormStoreSlot(LlcSlotFloats<DT> r, const char* weight, char* outRow, llc_u32 j, float inv,
                                 bool outE4m3, float outScale) {
  llcNormStoreSlotWeights<DT>(r, llcLoadWeakV4(weight + 16ull * j), outRow, j, inv, outE4m3, outScale);
}

// The residual row cache of a fused block, in shared memory: the block's residual rows in the global residual's
// layout (word w = bytes 4w .. 4w + 3 of the block's first residual row; f32 with an f32 residual, else the dtype's
// packed words). The thread that stores a residual slot to global memory also stores the same words here
// (llcCacheStoreSlot); after a __syncthreads the norm pass reads them from here (llcFusedNormRows<DT, true>) instead of
// reading the global residual back: the same bits (measured 2026-12-04 in the fused two-shot: -0.1..-0.3 us at 8
// ranks batch 16, -0.4..-2.5 at 16 ranks batch 16 (4096 x 32 too), +0.07..+0.2 at batch 1-2). Plain shared accesses
// (block scope; the __syncthreads orders them).
template <int DT>
LLC_DEVICE void llcCacheStoreSlot(llc_u32* cache, llc_u64 elem0, bool f32, const LlcSlotFloats<DT>& r) {
  constexpr int E = LlcSlotFloats<DT>::kElems;
  if (f32 && LlcDtype<DT>::kElemBytes == 2) {
#pragma unroll
    for (int i = 0; i < E; ++i) cache[elem0 + i] = __float_as_uint(r.v[i]);
  } else {
    llc_u32 w[4];
    r.pack(w);
#pragma unroll
    for (int i = 0; i < 4; ++i) cache[elem0 * LlcDtype<DT>::kElemBytes / 4u + i] = w[i];
  }
}
template <int DT>
LLC_DEVICE void llcCacheLoadSlot(const llc_u32* cache, llc_u64 elem0, bool f32, LlcSlotFloats<DT>& r) {
  constexpr int E = LlcSlotFloats<DT>::kElems;
  if (f32 && LlcDtype<DT>::kElemBytes == 2) {
#pragma unroll
    for (int i = 0; i < E; ++i) r.v[i] = __uint_as_float(cache[elem0 + i]);
  } else {
    llc_u32 w[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) w[i] = cache[elem0 * LlcDtype<DT>::kElemBytes / 4u + i];
    r.unpack(w);
  }
}
// Words of the row cache a block's residual rows need (rows * hidden residual elements).
LLC_DEVICE llc_u64 llcCacheWords(llc_u64 rows, llc_u32 hidden, bool f32, llc_u32 elemBytes) {
  return rows * hidden * (f32 ? 4u : elemBytes) / 4u;
}

// Threads of every block that normalizes: LLCOMM_THREADS on the GPU, a compile-time constant (every kernel that
// normalizes is launched with exactly that many by fused-launcher.ts; test/kernels/sources.test.ts checks it), so
// that llcNormInverse's level-1 and total loops unroll with every shared load issued before the first add. With
// blockDim.x as the bound each add waited for its own load (a run-time trip count: a rolled load-add loop in the
// PTX), ~0.6 us of serial loads per norm pass in the 2026-12-04 timeline. The host emulator runs smaller blocks:
// blockDim.x there.
#if defined(LLCOMM_HOST_EMULATION)
LLC_DEVICE llc_u32 llcNormThreads() { return blockDim.x; }
#else
LLC_DEVICE constexpr llc_u32 llcNormThreads() { return LLCOMM_THREADS; }
#endif

// The level-1 sums and the total of a row's per-thread partials red[0 .. nt) in the reference order, and inv =
// rsqrtf(total / hidden + eps) in red[nt + 32]. Called by every thread between the caller's two __syncthreads.
// nt = llcNormThreads(): a multiple of 32 (LLCOMM_THREADS on the GPU) or, in the emulator only, fewer than 32. The
// loads come first, then the adds in the reference order: the bits are those of a rolled loop (the same fadd_rn
// chain). Measured 2026-12-07 (one H100, 8 virtual ranks, bf16; bench/results/cuda-h100-fused-ab-2026-12-07.txt):
// the RMSNorm kernel -0.16..-0.25 us, the fused one-shot -0.28..-0.31, two-shot -0.38..-0.44, split -0.14..-0.45.
LLC_DEVICE void llcNormInverse(float* red, llc_u32 t, llc_u32 nt, llc_u32 hidden, float eps) {
  if (t < 32u) {
    // Partials per level-1 sum on the GPU: 16, loaded 8 at a time, then their adds; 32 m < nt is t + 32 m < nt (nt a
    // multiple of 32, or m = 0).
    constexpr llc_u32 kMaxM = LLCOMM_THREADS / 32u;
    float a = red[t];
#pragma unroll
    for (llc_u32 g = 0; g < kMaxM; g += 8u) {
      float v[8];
#pragma unroll
      for (llc_u32 i = 0; i < 8u; ++i)
        if (32u * (g + i) < nt) v[i] = red[t + 32u * (g + i)];
#pragma unroll
      for (llc_u32 i = 0; i < 8u; ++i)
        if (g + i >= 1u && 32u * (g + i) < nt) a = __fadd_rn(a, v[i]);
    }
    red[nt + t] = a;
    __syncwarp(); // warp 0's level-1 sums are visible to thread 0
    if (t == 0u) {
      // 8 loads at a time, then their adds (all 32 at once spilled in the f32 two-shot, at its 128-register cap)
      float total = red[nt];
#pragma unroll
      for (llc_u32 g = 0; g < 32u; g += 8u) {
        float l1[8];
#pragma unroll
        for (llc_u32 i = 0; i < 8u; ++i)
          if (g + i < nt) l1[i] = red[nt + g + i];
#pragma unroll
        for (llc_u32 i = 0; i < 8u; ++i)
          if (g + i >= 1u && g + i < nt) total = __fadd_rn(total, l1[i]);
      }
      red[nt + 32u] = rsqrtf(__fadd_rn(__fdiv_rn(total, static_cast<float>(hidden)), eps));
    }
  }
}

// RMSNorm of one row, block-wide (every thread calls it), its residual slots read by loadSlot(j, r) (slot j into r):
// from global memory, stored by threads of this block before a __syncthreads, or from the block's row cache
// (llcFusedNormRows). kPrefetchWeights: the weights of the thread's first slot are loaded before the sum
// of squares, so that their load overlaps it (the order of loads changes no bit). `red`: LLCOMM_NORM_SHARED_FLOATS
// floats of shared memory. Ends with a __syncthreads, so `red` may be reused by the next row.
template <int DT, bool kPrefetchWeights, class LoadSlot>
LLC_DEVICE void llcRmsNormRowFrom(const LoadSlot& loadSlot, const char* weight, char* outRow, llc_u32 hidden, float eps,
                                  float* red, bool outE4m3, float outScale) {
  constexpr llc_u32 eb = LlcDtype<DT>::kElemBytes;
  constexpr int E = LlcSlotFloats<DT>::kElems;
  const llc_u32 slots = hidden * eb / 16u;
  // nt = kNt (= blockDim.x) on the GPU; the slot loops stride by the run-time blockDim.x all the same (with the
  // constant, ptxas unrolled them and the f32 two-shot spilled 8 bytes at its 128-register cap).
  const llc_u32 t = threadIdx.x, nt = blockDim.x, kNt = llcNormThreads();
  LlcWords4 w0{};
  if (kPrefetchWeights && t < slots) w0 = llcLoadWeakV4(weight + 16ull * t);
  float q = 0.0f;
  for (llc_u32 j = t; j < slots; j += nt) {
    LlcSlotFloats<DT> r;
    loadSlot(j, r);
#pragma unroll
    for (int i = 0; i < E; ++i) q = __fmaf_rn(r.v[i], r.v[i], q);
  }
  red[t] = q;
  __syncthreads(); // every thread's partial is in shared memory
  llcNormInverse(red, t, kNt, hidden, eps);
  __syncthreads(); // the row's inverse RMS is visible to every thread
  const float inv = red[kNt + 32u];
  for (llc_u32 j = t; j < slots; j += nt) {
    LlcSlotFloats<DT> r;
    loadSlot(j, r);
    if (kPrefetchWeights)
      llcNormStoreSlotWeights<DT>(r, j == t ? w0 : llcLoadWeakV4(weight + 16ull * j), outRow, j, inv, outE4m3, outScale);
    else
      llcNormStoreSlot<DT>(r, weight, outRow, j, inv, outE4m3, outScale);
  }
  __syncthreads(); // `red` is read by every thread before the next row overwrites it
}

// The element-count and byte facts of a fused call's block: its rows, their message bytes (whole 16-byte slots).
struct LlcFusedRows {
  LlcRange rows;
  llc_u64 rowBytes;  // hidden * elemBytes of x
  llc_u64 resRowBytes; // hidden * elemBytes of the residual
  llc_u64 bytes;     // rows.size() * rowBytes
};
template <int DT>
LLC_DEVICE LlcFusedRows llcFusedRows(const LlcommFusedNormParams& p, llc_u32 channel) {
  LlcFusedRows f;
  f.rows = llcPiece(p.rows, p.blocksPerRank, channel, 1);
  f.rowBytes = static_cast<llc_u64>(p.hidden) * LlcDtype<DT>::kElemBytes;
  f.resRowBytes = static_cast<llc_u64>(p.hidden) * ((p.flags & LLCOMM_FUSED_RESIDUAL_F32) ? 4u : LlcDtype<DT>::kElemBytes);
  f.bytes = f.rows.size() * f.rowBytes;
  return f;
}

// The RMSNorm pass of a fused block: every row of the block, after its residual rows were written; kCached: from the
// block's row cache (llcCacheStoreSlot's layout, the block's first row at word 0), else from the global residual (a
// template argument, not a run-time choice: with the cache pointer tested at every residual load the fused two-shot
// measured 0.2-0.4 us slower at 8 ranks, research/notes/fused-probes.md, 2026-12-04).
template <int DT, bool kCached = false>
LLC_DEVICE void llcFusedNormRows(const LlcommFusedNormParams& p, llc_u32 rank, const LlcFusedRows& f, float* red,
                                 const llc_u32* cache = nullptr) {
  const char* residual = reinterpret_cast<const char*>(p.residual[rank]);
  char* out = reinterpret_cast<char*>(p.out[rank]);
  const char* weight = reinterpret_cast<const char*>(p.weight[rank]);
  const bool f32 = (p.flags & LLCOMM_FUSED_RESIDUAL_F32) != 0u;
  const float eps = __uint_as_float(p.epsBits);
  const bool e4m3 = (p.flags & LLCOMM_FUSED_OUT_E4M3) != 0u;
  const float outScale = __uint_as_float(p.outScaleBits);
  const llc_u64 outRowBytes = e4m3 ? p.hidden : f.rowBytes;
  constexpr int E = LlcSlotFloats<DT>::kElems;
  for (llc_u64 row = f.rows.begin; row < f.rows.end; ++row) {
    // Slot j of this row's residual: from the cache (written by threads of this block before a __syncthreads), with
    // the weights prefetched; or from global memory (written by threads of this block before a __syncthreads, which
    // makes those global stores visible here).
    const llc_u32* cacheRow = kCached ? cache + (row - f.rows.begin) * (f.resRowBytes / 4u) : nullptr;
    const char* residualRow = residual + row * f.resRowBytes;
    llcRmsNormRowFrom<DT, kCached>(
        [&](llc_u32 j, LlcSlotFloats<DT>& r) {
          if constexpr (kCached)
            llcCacheLoadSlot<DT>(cacheRow, static_cast<llc_u64>(j) * E, f32, r);
          else
            llcLoadResidualSlot<DT>(residualRow, static_cast<llc_u64>(j) * E, f32, r);
        },
        weight, out + row * outRowBytes, p.hidden, eps, red, e4m3, outScale);
  }
}
#endif // LLC_HAS_DEVICE
