// The tools' ABI (packages/tools/src/kernels/abi.ts ↔ decode.cu, sol.cu): the parameter structs of the kernels
// that only the tools launch (`llcomm decode`'s compute kernels, `llcomm sol`'s microbenchmarks), apart from the
// collective ABI (llcomm/abi.cuh). Same rules: one struct by value per kernel, plain data, host-includable; the ABI
// test (test/kernels/abi.test.ts at the repository root) compiles this header on the host and checks every
// offsetof/sizeof and constant against abi.ts.
#pragma once
#include "llcomm/types.cuh"
#include "llcomm/abi.cuh"

// ---- the decode step's compute kernels (decode.cu; `llcomm decode`) ----
// A Llama-style layer in bf16 with f32 accumulation: GEMVs over [rows, cols] row-major weights, RMSNorm with the
// residual stream in f32, RoPE + KV-cache append, split-context attention (GQA) and its combine. Head size is fixed.
#define LLCOMM_DECODE_HEAD_DIM 128
#define LLCOMM_DECODE_MAX_BATCH 16
#define LLCOMM_DECODE_MAX_GROUP 8 /* query heads per KV head */
#define LLCOMM_DECODE_THREADS 128 /* every decode kernel but the norm */
#define LLCOMM_DECODE_NORM_THREADS 256
#define LLCOMM_DECODE_MMA_ROWS 16 /* output rows of a tensor-core GEMV block (batches above 1); rows come in multiples */
#define LLCOMM_DECODE_ATTENTION_WARPS (LLCOMM_DECODE_THREADS / 32)
// Floats per (sequence, query head, split) in the attention partials: running max, sum of exponentials, 2 unused,
// then the 128 weighted sums from offset LLCOMM_DECODE_PARTIAL_ACC (16-byte aligned: the combine reads them as float4).
#define LLCOMM_DECODE_PARTIAL_ACC 4
#define LLCOMM_DECODE_PARTIAL_FLOATS (LLCOMM_DECODE_PARTIAL_ACC + LLCOMM_DECODE_HEAD_DIM)

// llcomm_decode_fill: data[i] = bf16(scale * u(i, seed)), u uniform in [-1, 1) from a hash of (i, seed) that the
// host reproduces exactly (the decode test's reference).
struct LlcommDecodeFillParams {
  llc_u64 data;  // bf16[count]
  llc_u64 count;
  llc_u32 seed;
  llc_u32 scaleBits; // f32 bits
};

// llcomm_decode_gemv_bN / llcomm_decode_gemv_gated_bN (N = the largest batch the variant serves):
//   plain: y[b][r] = sum_k weight[r][k] * x[b][k], r < rows (rows even: a warp takes two rows);
//   gated: weight holds 2*rows rows (gate rows, then up rows); y[b][r] = silu(gate_r . x_b) * (up_r . x_b).
struct LlcommDecodeGemvParams {
  llc_u64 x;      // bf16[batch][cols]
  llc_u64 weight; // bf16[rows or 2*rows][cols], 16-byte aligned rows (cols % 8 == 0)
  llc_u64 y;      // bf16[batch][rows]
  llc_u32 batch;
  llc_u32 rows;
  llc_u32 cols;
  llc_u32 reserved;
};

// llcomm_decode_add_rmsnorm: one block per sequence. mode 0: residual = delta; mode 1: residual += delta; then
// out = bf16(residual / sqrt(mean(residual^2) + eps) * weight).
struct LlcommDecodeNormParams {
  llc_u64 residual; // f32[batch][hidden]
  llc_u64 delta;    // bf16[batch][hidden]
  llc_u64 weight;   // bf16[hidden]
  llc_u64 out;      // bf16[batch][hidden]
  llc_u32 batch;
  llc_u32 hidden;
  llc_u32 mode;
  llc_u32 epsBits; // f32 bits
};

// llcomm_decode_rope_append, llcomm_decode_attention, llcomm_decode_attention_combine. qkv per sequence holds
// qHeads, then kvHeads K, then kvHeads V heads of LLCOMM_DECODE_HEAD_DIM; the caches are bf16[batch][kvHeads]
// [maxContext][HEAD_DIM]; the new token is at position context - 1. Attention splits the context into `splits`
// runs of tokensPerSplit tokens (every run non-empty), writes partials, and the combine writes out.
struct LlcommDecodeAttentionParams {
  llc_u64 qkv;     // bf16[batch][(qHeads + 2 kvHeads) * HEAD_DIM]; RoPE rotates q in place
  llc_u64 kCache;
  llc_u64 vCache;
  llc_u64 partial; // f32[batch][qHeads][splits][LLCOMM_DECODE_PARTIAL_FLOATS]
  llc_u64 out;     // bf16[batch][qHeads * HEAD_DIM]
  llc_u32 batch;
  llc_u32 qHeads;
  llc_u32 kvHeads;
  llc_u32 context;
  llc_u32 maxContext;
  llc_u32 splits;
  llc_u32 tokensPerSplit;
  llc_u32 ropeThetaBits; // f32 bits
};

// llcomm_sol_l2_rtt: one thread times `iters` dependent round trips to L2: mode 0 = fence.sc.gpu (__threadfence),
// mode 1 = a chain of dependent ld.relaxed.gpu loads of `probe` (L1 bypassed).
// result[0] = elapsed %globaltimer ns, result[1] = elapsed clock64 cycles, result[2] = a checksum (keeps the chain).
struct LlcommSolL2Params {
  llc_u64 result;  // llc_u64[3]
  llc_u64 probe;   // llc_u32* (device memory holding 0)
  llc_u32 iters;
  llc_u32 mode;
};

// llcomm_sol_pingpong: side 0 writes flag value i into side 1's flag word, side 1 waits for it and answers into
// side 0's flag word; `iters` round trips. Each side is one block of one rank of the launch (launchRanks gives the
// side: launchRanks[b] is 0 or 1). ordering 0 = relaxed stores/loads (like an LL packet), 1 = release/acquire.
// result (side 0 only): [0] = elapsed ns for all round trips, [1] = round trips completed.
struct LlcommSolPingPongParams {
  llc_u64 flag[2]; // llc_u32* flag word living in each side's own memory, zero-filled before the launch
  llc_u64 result;  // llc_u64[2], written by side 0
  llc_u64 errorWord;
  llc_u64 timeoutNs;
  llc_u32 iters;
  llc_u32 ordering;
  llc_u32 ranksInLaunch;
  llc_u32 reserved;
  llc_u8 launchRanks[LLCOMM_MAX_RANKS];
};

// llcomm_sol_empty: does nothing (the floor of one kernel inside a graph). The struct keeps the one-parameter rule.
struct LlcommSolEmptyParams {
  llc_u64 unused;
};

// llcomm_sol_copy: grid-stride 16-byte copy of `bytes` (multiple of 16, both pointers 16-byte aligned).
struct LlcommSolCopyParams {
  llc_u64 src;
  llc_u64 dst;
  llc_u64 bytes;
};

