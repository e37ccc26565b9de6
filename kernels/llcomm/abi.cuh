// The ABI between the TypeScript host (src/backends/cuda/abi.ts) and the kernels: every kernel takes exactly one
// of these structs by value (`__grid_constant__ const Params p`). Host-includable: plain data only. A CI test
// (test/kernels/abi.test.ts) compiles this header on the host and compares every offsetof/sizeof with abi.ts.
//
// Contract for the caller (the host side):
//  * Arrays indexed by rank (input, output, recvBuf, scratch) are indexed by the GLOBAL rank; recvBuf[] and
//    scratch[] must be filled for every rank of the communicator (peer-mapped addresses), input[]/output[] at
//    least for the ranks of this launch (launchRanks[0 .. ranksInLaunch-1]).
//  * gridDim.x == ranksInLaunch * blocksPerRank, blockDim.x == the kernel's LLCOMM_THREADS (launchShape()).
//  * input/output pointers 16-byte aligned; count > 0 and count <= launchShape().maxCountPerCall.
//  * The region fields are copied from deviceBufferLayout() and must be identical on every rank.
#pragma once
#include "llcomm/types.cuh"

#define LLCOMM_MAX_RANKS 64
#define LLCOMM_MAX_CHANNELS 16
#define LLCOMM_THREADS 512
// Kernels are built for one resident 512-thread block per SM (up to 128 registers per thread): recvReduce keeps
// LLCOMM_RECV_BATCH received 16-byte values in registers, and a 64-register cap (two blocks per SM) made the LL16 and
// sentinel kernels spill. ranksInLaunch * blocksPerRank must fit the device (132 SMs on H200): the host launches
// cooperatively and checks occupancy; launchShape() keeps blocksPerRank * nranks <= 128.
#define LLCOMM_MIN_BLOCKS_PER_SM 1
// Scratch (per rank, zero-filled at creation): channel epochs, global-barrier flags, ring step flags.
#define LLCOMM_SCRATCH_EPOCHS_OFFSET 0
#define LLCOMM_SCRATCH_BARRIER_OFFSET 256
#define LLCOMM_SCRATCH_BARRIER_BYTES (LLCOMM_MAX_CHANNELS * 2 * LLCOMM_MAX_RANKS * 4)
#define LLCOMM_MAX_RING_STEPS (2 * (LLCOMM_MAX_RANKS - 1))
#define LLCOMM_SCRATCH_RING_OFFSET (LLCOMM_SCRATCH_BARRIER_OFFSET + LLCOMM_SCRATCH_BARRIER_BYTES)
#define LLCOMM_SCRATCH_RING_STRIDE 128 /* u32 flags per channel (>= LLCOMM_MAX_RING_STEPS) */
#define LLCOMM_SCRATCH_SIGNATURE_OFFSET (LLCOMM_SCRATCH_RING_OFFSET + LLCOMM_MAX_CHANNELS * LLCOMM_SCRATCH_RING_STRIDE * 4)
// Call signatures (kernels/llcomm/signature.cuh): per channel, per half, per sender one 16-byte LL16-style packet.
#define LLCOMM_SCRATCH_SIGNATURE_BYTES (LLCOMM_MAX_CHANNELS * 2 * LLCOMM_MAX_RANKS * 16)
#define LLCOMM_SCRATCH_BYTES (LLCOMM_SCRATCH_SIGNATURE_OFFSET + LLCOMM_SCRATCH_SIGNATURE_BYTES)
// The sentinel bit pattern of an empty sentinel slot, per 32-bit word (f32: one NaN; f16/bf16: two 0xFFFF NaNs).
#define LLCOMM_SENTINEL_WORD 0xFFFFFFFFu

// Error word codes (LlcommErrorWord.code) and what the waiter was doing (LlcommErrorWord.what).
#define LLCOMM_ERR_NONE 0u
#define LLCOMM_ERR_TIMEOUT 1u
// A peer's call signature differs (signature.cuh). The error word then holds {code, rank, peer, epoch, what = rank's
// signature word 1, slot = peer's word 1, channel = rank's word 0, reserved = peer's word 0} (src/algorithms/
// signature.ts decodes the words; the channel is not recorded).
#define LLCOMM_ERR_MISMATCH 2u
#define LLCOMM_WAIT_LL 1u
#define LLCOMM_WAIT_SENTINEL 2u
#define LLCOMM_WAIT_LL128_COUNTER 3u
#define LLCOMM_WAIT_BARRIER 4u
#define LLCOMM_WAIT_RING_FLAG 5u
#define LLCOMM_WAIT_PINGPONG 6u
#define LLCOMM_WAIT_SIGNATURE 7u

// Call-signature codes (word 1, bits 0..9: algorithm | dtype << 4 | op << 6 | protocol << 8), as
// src/algorithms/signature.ts (ALGORITHM_CODES, PROTOCOL_CODES; dtype codes are LLCOMM_DTYPE_*; op sum = 0).
#define LLCOMM_SIG_ALG_ONESHOT_LL 1u
#define LLCOMM_SIG_ALG_ONESHOT_SENTINEL 2u
#define LLCOMM_SIG_ALG_TWOSHOT_SENTINEL 3u
#define LLCOMM_SIG_ALG_TWOSHOT_ATOMIC 4u
#define LLCOMM_SIG_ALG_ONESHOT_BARRIER 5u
#define LLCOMM_SIG_ALG_RING 6u
#define LLCOMM_SIG_PROTOCOL_NONE 0u
#define LLCOMM_SIG_PROTOCOL_LL8 1u
#define LLCOMM_SIG_PROTOCOL_LL16 2u
#define LLCOMM_SIG_OP_SUM 0u
#define LLCOMM_SIG_KIND_MASK 0x3FFu

// 1: f16/bf16 ring carries f32 partial sums between reduce-scatter hops (kernels/allreduce/ring.cu; issue 18 item 4)
// at half the capacity per launch; 0: 16-bit partials, rounded at every hop (as NCCL). The host's capacity rule
// (kernel-table.ts, LLCOMM_RING_F32_PARTIALS in abi.ts) must agree; the ABI test checks it. Off by default until the
// latency model is re-calibrated for it (its committed fits describe the 16-bit ring's chunking).
#ifndef LLCOMM_RING_F32_PARTIALS
#define LLCOMM_RING_F32_PARTIALS 0
#endif

// One per communicator, zero-filled by the host; the first timeout wins the CAS on `code` and fills the rest.
struct LlcommErrorWord {
  llc_u32 code;  // LLCOMM_ERR_*
  llc_u32 rank;  // the rank that gave up waiting
  llc_u32 peer;  // the rank it waited for (0xFFFFFFFF when not one peer)
  llc_u32 epoch; // the channel epoch of the call
  llc_u32 what;  // LLCOMM_WAIT_*
  llc_u32 slot;  // slot / step / line index being waited on
  llc_u32 channel;
  llc_u32 reserved;
};

// Placement of one buffer region inside each rank's receive buffer: channel c, half h (epoch parity) starts at
// offset + (c * 2 + h) * channelHalfBytes.
struct LlcommRegion {
  llc_u64 offset;
  llc_u64 channelHalfBytes;
};

struct LlcommAllReduceParams {
  llc_u64 input[LLCOMM_MAX_RANKS];   // device pointers, by global rank
  llc_u64 output[LLCOMM_MAX_RANKS];  // device pointers, by global rank
  llc_u64 recvBuf[LLCOMM_MAX_RANKS]; // each rank's receive buffer (peer-mapped), by global rank
  llc_u64 scratch[LLCOMM_MAX_RANKS]; // each rank's scratch (LLCOMM_SCRATCH_BYTES, peer-mapped), by global rank
  llc_u64 errorWord;                 // LlcommErrorWord* (device memory, visible to every device of the launch)
  llc_u64 count;                     // elements per rank in this call
  llc_u64 timeoutNs;                 // deadline of every single wait, in %globaltimer nanoseconds
  LlcommRegion ll;                   // LL8/LL16 packets (zero-filled)
  LlcommRegion sentinel;             // sentinel slots (filled with LLCOMM_SENTINEL_WORD)
  LlcommRegion ll128;                // LL128 atomic lines (zero-filled)
  LlcommRegion plain;                // plain data for ring and oneshot-barrier (no fill needed)
  llc_u32 nranks;
  llc_u32 ranksInLaunch;
  llc_u32 blocksPerRank;
  // Call-signature word 1, bits 10..31 (chunk index and chunk count of the call, signature.ts
  // signatureChunkBits); bits 0..9 must be 0 (the kernel ORs in its compile-time algorithm, dtype, op and protocol).
  llc_u32 signatureChunk;
  llc_u8 launchRanks[LLCOMM_MAX_RANKS]; // global rank of each rank slot of this launch
};

// llcomm_spin_ns: every block of rank r spins (thread 0) for min(delayNs[r], maxDelayNs) before exiting.
struct LlcommSpinParams {
  llc_u64 delayNs;   // llc_u64* device array indexed by global rank
  llc_u64 maxDelayNs;
  llc_u32 blocksPerRank;
  llc_u32 ranksInLaunch;
  llc_u8 launchRanks[LLCOMM_MAX_RANKS];
};

// ---- the decode step's compute kernels (kernels/tools/decode.cu; `llcomm decode`) ----
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

// llcomm_stress_ll16: blocks of the writer rank rewrite `numPackets` 16-byte packets `iters` times, each packet's
// words derived from one counter value; blocks of the reader rank poll them and check every packet whose flags say
// "complete" against the counter. layout 0 = llcomm's LL16 (two 8-byte elements {data, flag}, one v2.u64 store);
// layout 1 = 8 B data then 8 B flag (one v4.u32 store: needs 16-byte single-copy atomicity, not architectural).
// counters: [0] torn (flags complete, data inconsistent), [1] half-new (the two flags differ: the packet was seen
// half written), [2] complete packets checked, [3] reader threads that saw the last iteration in all their packets.
struct LlcommStressParams {
  llc_u64 packets;   // 16-byte aligned, numPackets * 16 bytes, zero-filled; may live on a peer device
  llc_u64 counters;  // llc_u64[4], zero-filled
  llc_u64 timeoutNs; // the readers stop at this deadline even if the writer never finishes (not an error)
  llc_u32 numPackets;
  llc_u32 iters;
  llc_u32 layout;
  llc_u32 writerRank;
  llc_u32 readerRank;
  llc_u32 blocksPerRank;
  llc_u32 ranksInLaunch;
  llc_u32 reserved;
  llc_u8 launchRanks[LLCOMM_MAX_RANKS];
};
