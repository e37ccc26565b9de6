// The compute kernels of `llcomm decode`: one Llama-style tensor-parallel decode step (bf16 weights and activations,
// f32 accumulation, random weights) around which the AllReduce under test runs. They exist so that an AllReduce can
// be timed where it lives in a model: right after a GEMV that filled the GPU, right before the next one. They aim
// at a serving framework's bandwidth, not at its last percent; `llcomm decode` prints the bandwidth they reached.
//
// No kernel here touches another rank's memory: the only communication in the step is the AllReduce. Nothing is
// shared between blocks but what a kernel boundary orders (stream order), so there is no flag, fence or atomic.
// Every reduction has a fixed order (no atomics), so a rank's result depends only on its inputs: ranks that get
// the same AllReduce output compute bitwise the same residual stream.
#include "llcomm/abi.cuh"
#include "llcomm/ptx.cuh"
#include "llcomm/types.cuh"
#include "tools_abi.cuh"

#define LLC_DECODE_FULL_MASK 0xFFFFFFFFu
// Column steps of weight loads a lane of the batch-1 GEMV issues before using them (see llcDecodeGemvRows).
#ifndef LLC_DECODE_GEMV_DEPTH_B1
#define LLC_DECODE_GEMV_DEPTH_B1 8
#endif

__device__ __forceinline__ float llcDecodeBf16ToF32(llc_u16 h) { return __uint_as_float(static_cast<llc_u32>(h) << 16); }

// The two bf16 halves of a 32-bit word (low half = lower address) as floats.
__device__ __forceinline__ void llcDecodeUnpack(llc_u32 w, float& lo, float& hi) {
  lo = __uint_as_float(w << 16);
  hi = __uint_as_float(w & 0xFFFF0000u);
}

// A weight load that streams past L1: each weight byte is read once per step.
__device__ __forceinline__ LlcWords4 llcDecodeLoadStream(const LlcWords4* p) {
  LlcWords4 v;
  asm("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.w[0]), "=r"(v.w[1]), "=r"(v.w[2]), "=r"(v.w[3])
               : "l"(p));
  return v;
}

// An activation load through the read-only path (every warp of the GEMV reads the same activations).
__device__ __forceinline__ LlcWords4 llcDecodeLoadShared(const LlcWords4* p) {
  LlcWords4 v;
  asm("ld.global.nc.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v.w[0]), "=r"(v.w[1]), "=r"(v.w[2]), "=r"(v.w[3]) : "l"(p));
  return v;
}

// Eight bf16 values (16 bytes, lower address first) as floats.
__device__ __forceinline__ void llcDecodeUnpack8(const LlcWords4& v, float (&f)[8]) {
#pragma unroll
  for (int i = 0; i < 4; ++i) llcDecodeUnpack(v.w[i], f[2 * i], f[2 * i + 1]);
}

__device__ __forceinline__ float llcDecodeWarpSum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(LLC_DECODE_FULL_MASK, v, o);
  return v;
}

// The hash behind llcomm_decode_fill; src/backends/cuda/decode-reference.ts computes the same function.
__device__ __forceinline__ float llcDecodeUniform(llc_u64 i, llc_u32 seed) {
  llc_u32 h = static_cast<llc_u32>(i) * 0x9E3779B1u ^ static_cast<llc_u32>(i >> 32) * 0x85EBCA77u ^ seed * 0xC2B2AE3Du;
  h ^= h >> 16;
  h *= 0x7FEB352Du;
  h ^= h >> 15;
  h *= 0x846CA68Bu;
  h ^= h >> 16;
  return static_cast<float>(h >> 8) * (2.0f / 16777216.0f) - 1.0f;
}

extern "C" __global__ void __launch_bounds__(LLCOMM_DECODE_THREADS)
    llcomm_decode_fill(const __grid_constant__ LlcommDecodeFillParams p) {
  llc_u16* data = reinterpret_cast<llc_u16*>(p.data);
  const float scale = __uint_as_float(p.scaleBits);
  const llc_u64 stride = static_cast<llc_u64>(gridDim.x) * blockDim.x;
  for (llc_u64 i = static_cast<llc_u64>(blockIdx.x) * blockDim.x + threadIdx.x; i < p.count; i += stride)
    data[i] = llcBf16FromF32Rn(__fmul_rn(scale, llcDecodeUniform(i, p.seed)));
}

// A warp owns two weight rows: rows 2w and 2w+1 (plain) or gate row w and up row w + rows (gated). Lanes stride over
// the columns 16 bytes at a time; each weight vector meets every sequence's activation vector while in registers.
// MAXB is a compile-time bound so the accumulators stay in registers; `batch` <= MAXB picks how many are live.
template <int MAXB, bool GATED>
__device__ __forceinline__ void llcDecodeGemvRows(const LlcommDecodeGemvParams& p, llc_u32 outRow, llc_u32 lane) {
  const llc_u32 vecs = p.cols / 8u;
  const LlcWords4* weight = reinterpret_cast<const LlcWords4*>(p.weight);
  const LlcWords4* row0 = weight + static_cast<llc_u64>(outRow) * vecs;
  const LlcWords4* row1 = weight + static_cast<llc_u64>(GATED ? outRow + p.rows : outRow + 1u) * vecs;
  const LlcWords4* x = reinterpret_cast<const LlcWords4*>(p.x);
  float acc0[MAXB], acc1[MAXB];
#pragma unroll
  for (int b = 0; b < MAXB; ++b) acc0[b] = acc1[b] = 0.0f;
  // DEPTH column steps of weight loads are issued before any of them is used: 2 * DEPTH 16-byte loads in flight per
  // lane is what keeps HBM busy when a warp has only its two rows to read (fewer at large batches, where the
  // accumulators take the registers).
  static_assert(MAXB == 1, "batches above 1 take the tensor-core GEMV below");
  constexpr int DEPTH = LLC_DECODE_GEMV_DEPTH_B1;
  for (llc_u32 v0 = lane; v0 < vecs; v0 += 32u * DEPTH) {
    LlcWords4 w0[DEPTH], w1[DEPTH];
#pragma unroll
    for (int i = 0; i < DEPTH; ++i) {
      const llc_u32 v = v0 + 32u * i;
      if (v < vecs) {
        w0[i] = llcDecodeLoadStream(row0 + v);
        w1[i] = llcDecodeLoadStream(row1 + v);
      }
    }
#pragma unroll
    for (int i = 0; i < DEPTH; ++i) {
      const llc_u32 v = v0 + 32u * i;
      if (v < vecs) {
        // Each weight vector is unpacked once and each activation vector once per step, not once per product.
        float wf0[8], wf1[8];
        llcDecodeUnpack8(w0[i], wf0);
        llcDecodeUnpack8(w1[i], wf1);
#pragma unroll
        for (int b = 0; b < MAXB; ++b) {
          if (b < static_cast<int>(p.batch)) {
            float xf[8];
            llcDecodeUnpack8(llcDecodeLoadShared(x + static_cast<llc_u64>(b) * vecs + v), xf);
#pragma unroll
            for (int k = 0; k < 8; ++k) {
              acc0[b] = __fmaf_rn(wf0[k], xf[k], acc0[b]);
              acc1[b] = __fmaf_rn(wf1[k], xf[k], acc1[b]);
            }
          }
        }
      }
    }
  }
  llc_u16* y = reinterpret_cast<llc_u16*>(p.y);
#pragma unroll
  for (int b = 0; b < MAXB; ++b) {
    if (b < static_cast<int>(p.batch)) {
      const float s0 = llcDecodeWarpSum(acc0[b]);
      const float s1 = llcDecodeWarpSum(acc1[b]);
      if (lane == 0) {
        llc_u16* yb = y + static_cast<llc_u64>(b) * p.rows;
        if (GATED) {
          const float silu = s0 / (1.0f + __expf(-s0));
          yb[outRow] = llcBf16FromF32Rn(silu * s1);
        } else {
          yb[outRow] = llcBf16FromF32Rn(s0);
          yb[outRow + 1u] = llcBf16FromF32Rn(s1);
        }
      }
    }
  }
}

// Warps take row pairs (or gated rows) in grid-stride order: the host may launch one warp per pair or fewer blocks
// that each take several (llcomm decode's GEMV grid).
template <int MAXB, bool GATED>
__device__ __forceinline__ void llcDecodeGemv(const LlcommDecodeGemvParams& p) {
  const llc_u32 lane = threadIdx.x & 31u;
  const llc_u32 warps = gridDim.x * (LLCOMM_DECODE_THREADS / 32u);
  for (llc_u32 warp = (blockIdx.x * LLCOMM_DECODE_THREADS + threadIdx.x) >> 5;; warp += warps) {
    const llc_u32 outRow = GATED ? warp : 2u * warp;
    if (outRow >= p.rows) return;
    llcDecodeGemvRows<MAXB, GATED>(p, outRow, lane);
  }
}

// ---- batches above 1: tensor cores (mma.sync m16n8k16, bf16 in, f32 accumulate) ----
// A block owns a tile of 16 output rows (plain) or 16 gate rows and their 16 up rows (gated); its 4 warps split the
// columns, each taking every 4th block of 32·KB columns, and their partial tiles are summed through shared memory
// in warp order (a fixed order: the result depends only on the inputs). The weights are the mma's A (16 rows × 16
// k), the activations its B (16 k × 8 sequences; NT tiles of 8 for up to 8·NT sequences).
//
// Coalescing by a permutation of k: a dot product does not care in which order its k terms come, so long as A and B
// use the same one. In a column block, lane (g = lane / 4, t = lane % 4) loads KB 16-byte vectors of row g (and of
// row g + 8, and of sequence g) at columns [t·8·KB, (t+1)·8·KB): 4 lanes read a row's block contiguously. Its load
// i's four words feed mma 2i (words 0 and 1) and mma 2i + 1 (words 2 and 3) as the fragment words the PTX layout
// gives lane (g, t): A {row g k 2t..2t+1, row g+8 k 2t..2t+1, row g k 2t+8..2t+9, row g+8 k 2t+8..2t+9}, B {k 2t..2t+1,
// k 2t+8..2t+9} of sequence g. Over the 4 lanes of a row each mma meets 16 distinct columns, every column of the
// block exactly once, and B's columns are the same ones. Columns past the end load as zeros in both.
__device__ __forceinline__ void llcDecodeMma(float (&c)[4], llc_u32 a0, llc_u32 a1, llc_u32 a2, llc_u32 a3, llc_u32 b0,
                                             llc_u32 b1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
               "{%0, %1, %2, %3};"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// KB 16-byte vectors of one row from vector index v (zeros past `vecs`).
template <int KB, bool STREAM>
__device__ __forceinline__ void llcDecodeLoadRun(const LlcWords4* row, llc_u32 v, llc_u32 vecs, bool live,
                                                 LlcWords4 (&out)[KB]) {
#pragma unroll
  for (int i = 0; i < KB; ++i) {
    out[i] = LlcWords4{};
    if (live && v + i < vecs) out[i] = STREAM ? llcDecodeLoadStream(row + v + i) : llcDecodeLoadShared(row + v + i);
  }
}

// One warp's share of a tile: acc[tile][n] += W[tile rows] · X[sequences of n-tile n] over its column blocks.
template <int NT, int KB, int TILES>
__device__ __forceinline__ void llcDecodeMmaTiles(const LlcommDecodeGemvParams& p, const llc_u32 (&rowBase)[TILES],
                                                  llc_u32 warp, llc_u32 lane, float (&acc)[TILES][NT][4]) {
  const llc_u32 vecs = p.cols / 8u, g = lane >> 2, t = lane & 3u;
  const LlcWords4* weight = reinterpret_cast<const LlcWords4*>(p.weight);
  const LlcWords4* x = reinterpret_cast<const LlcWords4*>(p.x);
  constexpr llc_u32 kBlockVecs = 4u * KB;
  constexpr llc_u32 kWarps = LLCOMM_DECODE_THREADS / 32u;
  for (llc_u32 v0 = warp * kBlockVecs; v0 < vecs; v0 += kWarps * kBlockVecs) {
    const llc_u32 v = v0 + t * KB;
    LlcWords4 wLo[TILES][KB], wHi[TILES][KB], xs[NT][KB];
#pragma unroll
    for (int m = 0; m < TILES; ++m) {
      const llc_u32 r = rowBase[m] + g;
      llcDecodeLoadRun<KB, true>(weight + static_cast<llc_u64>(r) * vecs, v, vecs, true, wLo[m]);
      llcDecodeLoadRun<KB, true>(weight + static_cast<llc_u64>(r + 8u) * vecs, v, vecs, true, wHi[m]);
    }
#pragma unroll
    for (int n = 0; n < NT; ++n) {
      const llc_u32 seq = 8u * n + g;
      llcDecodeLoadRun<KB, false>(x + static_cast<llc_u64>(seq) * vecs, v, vecs, seq < p.batch, xs[n]);
    }
#pragma unroll
    for (int i = 0; i < KB; ++i)
#pragma unroll
      for (int h = 0; h < 2; ++h)
#pragma unroll
        for (int m = 0; m < TILES; ++m)
#pragma unroll
          for (int n = 0; n < NT; ++n)
            llcDecodeMma(acc[m][n], wLo[m][i].w[2 * h], wHi[m][i].w[2 * h], wLo[m][i].w[2 * h + 1],
                         wHi[m][i].w[2 * h + 1], xs[n][i].w[2 * h], xs[n][i].w[2 * h + 1]);
  }
}

// Rows of a tile must exist: the host gives row counts that are multiples of LLCOMM_DECODE_MMA_ROWS (checked by
// planDecodeStep).
template <int NT, int KB, bool GATED>
__device__ __forceinline__ void llcDecodeGemvMma(const LlcommDecodeGemvParams& p) {
  constexpr int TILES = GATED ? 2 : 1;
  constexpr llc_u32 kWarps = LLCOMM_DECODE_THREADS / 32u;
  // partial tiles of warps 1..3 (warp 0 keeps its own in registers): [warp - 1][tile][n][fragment word][lane]
  __shared__ float partial[kWarps - 1][TILES][NT][4][32];
  const llc_u32 lane = threadIdx.x & 31u, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3u;
  const llc_u32 tiles = p.rows / LLCOMM_DECODE_MMA_ROWS;
  for (llc_u32 tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    llc_u32 rowBase[TILES];
    rowBase[0] = tile * LLCOMM_DECODE_MMA_ROWS;
    if (GATED) rowBase[TILES - 1] = p.rows + tile * LLCOMM_DECODE_MMA_ROWS; // the up rows follow the gate rows
    float acc[TILES][NT][4];
#pragma unroll
    for (int m = 0; m < TILES; ++m)
#pragma unroll
      for (int n = 0; n < NT; ++n)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[m][n][j] = 0.0f;
    llcDecodeMmaTiles<NT, KB, TILES>(p, rowBase, warp, lane, acc);
    if (warp > 0) {
#pragma unroll
      for (int m = 0; m < TILES; ++m)
#pragma unroll
        for (int n = 0; n < NT; ++n)
#pragma unroll
          for (int j = 0; j < 4; ++j) partial[warp - 1][m][n][j][lane] = acc[m][n][j];
    }
    __syncthreads(); // the partials are written before warp 0 reads them
    if (warp == 0) {
#pragma unroll
      for (int w = 0; w < static_cast<int>(kWarps) - 1; ++w)
#pragma unroll
        for (int m = 0; m < TILES; ++m)
#pragma unroll
          for (int n = 0; n < NT; ++n)
#pragma unroll
            for (int j = 0; j < 4; ++j) acc[m][n][j] += partial[w][m][n][j][lane];
      llc_u16* y = reinterpret_cast<llc_u16*>(p.y);
      // fragment word j: row g + 8·(j / 2), sequence 8n + 2t + (j % 2)
#pragma unroll
      for (int n = 0; n < NT; ++n)
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          const llc_u32 seq = 8u * n + 2u * t + (j & 1), row = rowBase[0] + g + 8u * (j >> 1);
          if (seq < p.batch) {
            float out = acc[0][n][j];
            if (GATED) out = out / (1.0f + __expf(-out)) * acc[TILES - 1][n][j];
            y[static_cast<llc_u64>(seq) * p.rows + row] = llcBf16FromF32Rn(out);
          }
        }
    }
    __syncthreads(); // warp 0 has read the partials before the next tile overwrites them
  }
}

// Batch 1 keeps the CUDA-core GEMV above (a tensor-core tile would waste 7 of its 8 sequences); 4 and 16 use the
// tensor cores. KB: plain 4 vectors a row (128 columns a block), gated 2 (two weight tiles in registers).
// (min blocks 1: ptxas otherwise picks a 64-register target and spills)
extern "C" __global__ void __launch_bounds__(LLCOMM_DECODE_THREADS, 1)
    llcomm_decode_gemv_b1(const __grid_constant__ LlcommDecodeGemvParams p) {
  llcDecodeGemv<1, false>(p);
}
extern "C" __global__ void __launch_bounds__(LLCOMM_DECODE_THREADS, 1)
    llcomm_decode_gemv_gated_b1(const __grid_constant__ LlcommDecodeGemvParams p) {
  llcDecodeGemv<1, true>(p);
}
#define LLC_DECODE_GEMV_MMA_KERNELS(N, NT)                                                                          \
  extern "C" __global__ void __launch_bounds__(LLCOMM_DECODE_THREADS, 1)                                           \
      llcomm_decode_gemv_b##N(const __grid_constant__ LlcommDecodeGemvParams p) {                                  \
    llcDecodeGemvMma<NT, 4, false>(p);                                                                              \
  }                                                                                                                 \
  extern "C" __global__ void __launch_bounds__(LLCOMM_DECODE_THREADS, 1)                                           \
      llcomm_decode_gemv_gated_b##N(const __grid_constant__ LlcommDecodeGemvParams p) {                            \
    llcDecodeGemvMma<NT, 2, true>(p);                                                                               \
  }
LLC_DECODE_GEMV_MMA_KERNELS(4, 1)
LLC_DECODE_GEMV_MMA_KERNELS(16, 2)

// One block per sequence. The sum of squares is reduced in a fixed order (per thread, then warp, then block). The
// pointers are __restrict__ (the host passes disjoint buffers) so a thread's loads are not held behind its own stores.
extern "C" __global__ void __launch_bounds__(LLCOMM_DECODE_NORM_THREADS)
    llcomm_decode_add_rmsnorm(const __grid_constant__ LlcommDecodeNormParams p) {
  __shared__ float warpSums[LLCOMM_DECODE_NORM_THREADS / 32];
  const llc_u32 b = blockIdx.x;
  float* __restrict__ residual = reinterpret_cast<float*>(p.residual) + static_cast<llc_u64>(b) * p.hidden;
  const llc_u16* __restrict__ delta = reinterpret_cast<const llc_u16*>(p.delta) + static_cast<llc_u64>(b) * p.hidden;
  const llc_u16* __restrict__ weight = reinterpret_cast<const llc_u16*>(p.weight);
  llc_u16* __restrict__ out = reinterpret_cast<llc_u16*>(p.out) + static_cast<llc_u64>(b) * p.hidden;
  float squares = 0.0f;
#pragma unroll 4
  for (llc_u32 i = threadIdx.x; i < p.hidden; i += LLCOMM_DECODE_NORM_THREADS) {
    const float d = llcDecodeBf16ToF32(delta[i]);
    const float r = p.mode == 0 ? d : __fadd_rn(residual[i], d);
    residual[i] = r;
    squares = __fmaf_rn(r, r, squares);
  }
  squares = llcDecodeWarpSum(squares);
  if ((threadIdx.x & 31u) == 0) warpSums[threadIdx.x >> 5] = squares;
  __syncthreads();
  float total = 0.0f;
#pragma unroll
  for (int w = 0; w < LLCOMM_DECODE_NORM_THREADS / 32; ++w) total += warpSums[w];
  const float inv = rsqrtf(total / static_cast<float>(p.hidden) + __uint_as_float(p.epsBits));
#pragma unroll 4
  for (llc_u32 i = threadIdx.x; i < p.hidden; i += LLCOMM_DECODE_NORM_THREADS)
    out[i] = llcBf16FromF32Rn(residual[i] * inv * llcDecodeBf16ToF32(weight[i]));
}

// RoPE (rotate-half pairs i, i + 64) on the new token's q and k at position context - 1, then K and V appended to
// the caches. One block of HEAD_DIM / 2 threads per (head, sequence), head fastest; thread i owns pair (i, i + 64).
extern "C" __global__ void __launch_bounds__(LLCOMM_DECODE_THREADS)
    llcomm_decode_rope_append(const __grid_constant__ LlcommDecodeAttentionParams p) {
  constexpr llc_u32 D = LLCOMM_DECODE_HEAD_DIM, HALF = D / 2;
  const llc_u32 heads = p.qHeads + 2u * p.kvHeads;
  const llc_u32 head = blockIdx.x % heads, b = blockIdx.x / heads, i = threadIdx.x;
  llc_u16* h = reinterpret_cast<llc_u16*>(p.qkv) + (static_cast<llc_u64>(b) * heads + head) * D;
  const llc_u32 pos = p.context - 1u;
  llc_u16 lo = h[i], hi = h[i + HALF];
  if (head < p.qHeads + p.kvHeads) { // q and k are rotated; v is not
    const float log2Theta = __log2f(__uint_as_float(p.ropeThetaBits));
    const float invFreq = exp2f(-(2.0f * static_cast<float>(i) / static_cast<float>(D)) * log2Theta);
    float s, c;
    __sincosf(static_cast<float>(pos) * invFreq, &s, &c);
    const float x0 = llcDecodeBf16ToF32(lo), x1 = llcDecodeBf16ToF32(hi);
    lo = llcBf16FromF32Rn(x0 * c - x1 * s);
    hi = llcBf16FromF32Rn(x1 * c + x0 * s);
  }
  if (head < p.qHeads) {
    h[i] = lo;
    h[i + HALF] = hi;
  } else {
    const bool isK = head < p.qHeads + p.kvHeads;
    const llc_u32 kvHead = isK ? head - p.qHeads : head - p.qHeads - p.kvHeads;
    llc_u16* cache = reinterpret_cast<llc_u16*>(isK ? p.kCache : p.vCache) +
                     ((static_cast<llc_u64>(b) * p.kvHeads + kvHead) * p.maxContext + pos) * D;
    cache[i] = lo;
    cache[i + HALF] = hi;
  }
}

// Split-context attention for one (split, KV head, sequence): the KV head's group of query heads shares every K/V
// load. A warp takes every fourth token of the split; a lane holds 4 of the 128 dimensions; each warp keeps a
// running max / sum / weighted sum per query head (online softmax), and the block merges its four warps.
extern "C" __global__ void __launch_bounds__(LLCOMM_DECODE_THREADS)
    llcomm_decode_attention(const __grid_constant__ LlcommDecodeAttentionParams p) {
  constexpr llc_u32 D = LLCOMM_DECODE_HEAD_DIM, G_MAX = LLCOMM_DECODE_MAX_GROUP;
  constexpr llc_u32 WARPS = LLCOMM_DECODE_ATTENTION_WARPS;
  __shared__ float warpState[WARPS][G_MAX][LLCOMM_DECODE_PARTIAL_FLOATS];
  // Grid: splits * kvHeads * batch blocks, split fastest.
  const llc_u32 split = blockIdx.x % p.splits, kvHead = (blockIdx.x / p.splits) % p.kvHeads;
  const llc_u32 b = blockIdx.x / (p.splits * p.kvHeads);
  const llc_u32 lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
  const llc_u32 group = p.qHeads / p.kvHeads;
  const llc_u32 heads = p.qHeads + 2u * p.kvHeads;
  const llc_u16* q = reinterpret_cast<const llc_u16*>(p.qkv) + static_cast<llc_u64>(b) * heads * D;
  const float scale = rsqrtf(static_cast<float>(D));
  float qv[G_MAX][4], m[G_MAX], l[G_MAX], acc[G_MAX][4];
#pragma unroll
  for (llc_u32 g = 0; g < G_MAX; ++g) {
    m[g] = -__int_as_float(0x7F800000); // -inf: the first token's weight is exp(s - s) = 1, the old state's 0
    l[g] = 0.0f;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      acc[g][j] = 0.0f;
      qv[g][j] = g < group ? llcDecodeBf16ToF32(q[(kvHead * group + g) * D + lane * 4u + j]) * scale : 0.0f;
    }
  }
  const llc_u64 cacheRow = (static_cast<llc_u64>(b) * p.kvHeads + kvHead) * p.maxContext;
  const llc_u32 t0 = split * p.tokensPerSplit;
  const llc_u32 t1 = min(p.context, t0 + p.tokensPerSplit);
  // A warp's K and V rows for TOKENS tokens are loaded before any is used, so a warp waits on memory once per
  // TOKENS tokens instead of once per token (the softmax update is a dependent chain). 4 tokens took 137 registers,
  // over the 128 every llcomm kernel keeps to (test/kernels/compile.test.ts); 2 take 123.
  constexpr llc_u32 TOKENS = 2;
  const llc_u16* kCache = reinterpret_cast<const llc_u16*>(p.kCache);
  const llc_u16* vCache = reinterpret_cast<const llc_u16*>(p.vCache);
  for (llc_u32 tBase = t0 + warp; tBase < t1; tBase += WARPS * TOKENS) {
    uint2 kw[TOKENS], vw[TOKENS];
#pragma unroll
    for (llc_u32 u = 0; u < TOKENS; ++u) {
      const llc_u32 t = tBase + u * WARPS;
      kw[u] = vw[u] = make_uint2(0u, 0u);
      if (t < t1) {
        const llc_u64 at = (cacheRow + t) * D + lane * 4u;
        kw[u] = *reinterpret_cast<const uint2*>(kCache + at);
        vw[u] = *reinterpret_cast<const uint2*>(vCache + at);
      }
    }
    // The chunk's scores first (independent shuffle chains), then one online-softmax update per query head for the
    // whole chunk: a token past the split's end gets score -inf and weight 0.
    float k[TOKENS][4], v[TOKENS][4];
#pragma unroll
    for (llc_u32 u = 0; u < TOKENS; ++u) {
      llcDecodeUnpack(kw[u].x, k[u][0], k[u][1]);
      llcDecodeUnpack(kw[u].y, k[u][2], k[u][3]);
      llcDecodeUnpack(vw[u].x, v[u][0], v[u][1]);
      llcDecodeUnpack(vw[u].y, v[u][2], v[u][3]);
    }
#pragma unroll
    for (llc_u32 g = 0; g < G_MAX; ++g) {
      if (g < group) {
        float sc[TOKENS];
#pragma unroll
        for (llc_u32 u = 0; u < TOKENS; ++u) {
          float x = qv[g][0] * k[u][0];
          x = __fmaf_rn(qv[g][1], k[u][1], x);
          x = __fmaf_rn(qv[g][2], k[u][2], x);
          sc[u] = __fmaf_rn(qv[g][3], k[u][3], x);
        }
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) {
#pragma unroll
          for (llc_u32 u = 0; u < TOKENS; ++u) sc[u] += __shfl_xor_sync(LLC_DECODE_FULL_MASK, sc[u], o);
        }
        float mNew = m[g];
#pragma unroll
        for (llc_u32 u = 0; u < TOKENS; ++u) {
          if (tBase + u * WARPS >= t1) sc[u] = -__int_as_float(0x7F800000);
          mNew = fmaxf(mNew, sc[u]);
        }
        const float keep = __expf(m[g] - mNew);
        m[g] = mNew;
        l[g] *= keep;
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[g][j] *= keep;
#pragma unroll
        for (llc_u32 u = 0; u < TOKENS; ++u) {
          const float weight = __expf(sc[u] - mNew);
          l[g] += weight;
#pragma unroll
          for (int j = 0; j < 4; ++j) acc[g][j] = __fmaf_rn(weight, v[u][j], acc[g][j]);
        }
      }
    }
  }
#pragma unroll
  for (llc_u32 g = 0; g < G_MAX; ++g) {
    if (g < group) {
      if (lane == 0) {
        warpState[warp][g][0] = m[g];
        warpState[warp][g][1] = l[g];
      }
#pragma unroll
      for (int j = 0; j < 4; ++j) warpState[warp][g][LLCOMM_DECODE_PARTIAL_ACC + lane * 4u + j] = acc[g][j];
    }
  }
  __syncthreads();
  // Merge the warps (a warp that saw no token has max -inf and weight 0; every split has a token, so the block's
  // max is finite). Thread d writes dimension d of every query head of the group.
  const llc_u32 d = threadIdx.x;
  float* partial = reinterpret_cast<float*>(p.partial);
  for (llc_u32 g = 0; g < group; ++g) {
    float mMax = warpState[0][g][0];
    for (llc_u32 w = 1; w < WARPS; ++w) mMax = fmaxf(mMax, warpState[w][g][0]);
    float lSum = 0.0f, aSum = 0.0f;
    for (llc_u32 w = 0; w < WARPS; ++w) {
      const float f = __expf(warpState[w][g][0] - mMax);
      lSum = __fmaf_rn(warpState[w][g][1], f, lSum);
      aSum = __fmaf_rn(warpState[w][g][LLCOMM_DECODE_PARTIAL_ACC + d], f, aSum);
    }
    const llc_u32 qHead = kvHead * group + g;
    float* out = partial + ((static_cast<llc_u64>(b) * p.qHeads + qHead) * p.splits + split) * LLCOMM_DECODE_PARTIAL_FLOATS;
    if (d == 0) {
      out[0] = mMax;
      out[1] = lSum;
    }
    out[LLCOMM_DECODE_PARTIAL_ACC + d] = aSum;
  }
}

// One block per (query head, sequence), query head fastest: merges the splits' partials. The splits are spread over
// the threads (the max) and over the warps (the sums; a lane holds 4 dimensions, one 16-byte load per split), so no
// thread walks every split in a chain of dependent loads; the warps' sums are then added in a fixed order.
extern "C" __global__ void __launch_bounds__(LLCOMM_DECODE_THREADS)
    llcomm_decode_attention_combine(const __grid_constant__ LlcommDecodeAttentionParams p) {
  constexpr llc_u32 WARPS = LLCOMM_DECODE_ATTENTION_WARPS, STRIDE = LLCOMM_DECODE_PARTIAL_FLOATS;
  __shared__ float warpMax[WARPS];
  __shared__ float warpAcc[WARPS][LLCOMM_DECODE_HEAD_DIM + 1]; // + 1: the sum of weights
  const llc_u32 qHead = blockIdx.x % p.qHeads, b = blockIdx.x / p.qHeads;
  const llc_u32 lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
  const float* partial =
      reinterpret_cast<const float*>(p.partial) + (static_cast<llc_u64>(b) * p.qHeads + qHead) * p.splits * STRIDE;
  float mMax = -__int_as_float(0x7F800000);
  for (llc_u32 s = threadIdx.x; s < p.splits; s += LLCOMM_DECODE_THREADS) mMax = fmaxf(mMax, partial[s * STRIDE]);
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) mMax = fmaxf(mMax, __shfl_xor_sync(LLC_DECODE_FULL_MASK, mMax, o));
  if (lane == 0) warpMax[warp] = mMax;
  __syncthreads();
  mMax = warpMax[0];
#pragma unroll
  for (llc_u32 w = 1; w < WARPS; ++w) mMax = fmaxf(mMax, warpMax[w]);
  float lSum = 0.0f, a[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll 4
  for (llc_u32 s = warp; s < p.splits; s += WARPS) {
    const float* ps = partial + s * STRIDE;
    const float f = __expf(ps[0] - mMax);
    lSum = __fmaf_rn(ps[1], f, lSum);
    const float4 v = *reinterpret_cast<const float4*>(ps + LLCOMM_DECODE_PARTIAL_ACC + lane * 4u);
    a[0] = __fmaf_rn(v.x, f, a[0]);
    a[1] = __fmaf_rn(v.y, f, a[1]);
    a[2] = __fmaf_rn(v.z, f, a[2]);
    a[3] = __fmaf_rn(v.w, f, a[3]);
  }
#pragma unroll
  for (int j = 0; j < 4; ++j) warpAcc[warp][lane * 4u + j] = a[j];
  if (lane == 0) warpAcc[warp][LLCOMM_DECODE_HEAD_DIM] = lSum;
  __syncthreads();
  const llc_u32 d = threadIdx.x;
  float aSum = 0.0f, l = 0.0f;
#pragma unroll
  for (llc_u32 w = 0; w < WARPS; ++w) {
    aSum += warpAcc[w][d];
    l += warpAcc[w][LLCOMM_DECODE_HEAD_DIM];
  }
  llc_u16* out = reinterpret_cast<llc_u16*>(p.out);
  out[(static_cast<llc_u64>(b) * p.qHeads + qHead) * LLCOMM_DECODE_HEAD_DIM + d] = llcBf16FromF32Rn(aSum / l);
}
