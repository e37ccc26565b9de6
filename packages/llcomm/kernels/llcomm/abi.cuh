// The collective ABI between the TypeScript host (src/backends/cuda/abi.ts) and the kernels: every kernel takes exactly one
// of these structs by value (`__grid_constant__ const Params p`). Host-includable: plain data only. A CI test
// (test/kernels/abi.test.ts) compiles this header on the host and compares every offsetof/sizeof with abi.ts.
//
// Contract for the caller (the host side):
//  * Arrays indexed by rank (input, output, recvBuf, scratch) are indexed by the GLOBAL rank; recvBuf[] and
//    scratch[] must be filled for every rank of the communicator (peer-mapped addresses), input[]/output[] at
//    least for the ranks of this launch (launchRanks[0 .. ranksInLaunch-1]).
//  * gridDim.x == ranksInLaunch * blocksPerRank (+ one signature block after them for the all-reduce kernels'
//    llcBeginCall: kernel-table.ts SIGNATURE_BLOCK), blockDim.x == the kernel's LLCOMM_THREADS (launchShape()).
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
// Call signatures (kernels/llcomm/signature.cuh): per channel, per slot, per sender one 16-byte LL16-style packet.
// LLCOMM_SIG_SLOTS slots per channel; a call of epoch e uses slot e & LLCOMM_SIG_EPOCH_MASK: 2 of them (epoch parity)
// in the default build, all 4 with LLCOMM_SIG_DEFERRED (the epoch e - 1 check in kernel e: its packets must survive
// while a peer stores e + 1 and e + 2; the bound is argued in signature.cuh). The region has room for 4 in every build
// so that the host (abi.ts) allocates the same scratch whichever kernel tree it loads.
#define LLCOMM_SIG_SLOTS 4
#if defined(LLCOMM_SIG_DEFERRED)
#define LLCOMM_SIG_EPOCH_MASK 3u
#else
#define LLCOMM_SIG_EPOCH_MASK 1u
#endif
#define LLCOMM_SCRATCH_SIGNATURE_BYTES (LLCOMM_MAX_CHANNELS * LLCOMM_SIG_SLOTS * LLCOMM_MAX_RANKS * 16)
// Who checks the call signature (signature.cuh). By default one block of its own per launch, after the data blocks
// (LLCOMM_SIG_BLOCK: the data blocks carry no signature code; the host adds the block, kernel-table.ts
// SIGNATURE_BLOCK; round 11 of research/notes/signature-cost.md). LLCOMM_SIG_IN_BLOCKS builds the check inside the
// data blocks instead (the product before round 11, kept for the A/B), as do the A/B builds on it (LLCOMM_SIG_DEFERRED,
// LLCOMM_SIG_PUBLISH_ONLY and the knobs listed in signature.cuh); LLCOMM_NO_SIGNATURE and LLCOMM_SIG_BLOCK_EMPTY
// build no check at all (A/B baselines only).
#if !defined(LLCOMM_SIG_BLOCK) && !defined(LLCOMM_SIG_IN_BLOCKS) && !defined(LLCOMM_NO_SIGNATURE) && \
    !defined(LLCOMM_SIG_DEFERRED) && !defined(LLCOMM_SIG_PUBLISH_ONLY) && !defined(LLCOMM_SIG_BLOCK_EMPTY)
#define LLCOMM_SIG_BLOCK 1
#endif
#if defined(LLCOMM_SIG_BLOCK) &&                                                                                   \
    (defined(LLCOMM_SIG_ARM_PLAIN) || defined(LLCOMM_SIG_NO_ARM) || defined(LLCOMM_SIG_PUBLISH_LOW) ||              \
     defined(LLCOMM_SIG_TAIL) || defined(LLCOMM_SIG_NOWAIT) || defined(LLCOMM_SIG_R2))
#error "these signature knobs modify the in-block check: define LLCOMM_SIG_IN_BLOCKS too"
#endif
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
// src/protocol/call-signature.ts (ALGORITHM_CODES, PROTOCOL_CODES; dtype codes are LLCOMM_DTYPE_*; op sum = 0).
#define LLCOMM_SIG_ALG_ONESHOT_LL 1u
#define LLCOMM_SIG_ALG_ONESHOT_SENTINEL 2u
#define LLCOMM_SIG_ALG_TWOSHOT_SENTINEL 3u
#define LLCOMM_SIG_ALG_TWOSHOT_ATOMIC 4u
#define LLCOMM_SIG_ALG_ONESHOT_BARRIER 5u
#define LLCOMM_SIG_ALG_RING 6u
// 7, 8: nccl, nccl-symmetric (host only). 9: the fused AllReduce + residual + RMSNorm (llcomm/fused_signature.cuh).
#define LLCOMM_SIG_ALG_FUSED_RMSNORM 9u
// 10: allReduceMany (allreduce/allreduce_many.cu; its signature block per process only, llcomm/fused_signature.cuh).
#define LLCOMM_SIG_ALG_ALLREDUCE_MANY 10u
// A call refused on its rank (per process; call-signature.ts encodeRefusedSignature): the host publishes it through
// the allreduce_many kernel's signature block alone, never as any call's code.
#define LLCOMM_SIG_ALG_REFUSED 11u
#define LLCOMM_SIG_PROTOCOL_NONE 0u
#define LLCOMM_SIG_PROTOCOL_LL8 1u
#define LLCOMM_SIG_PROTOCOL_LL16 2u
#define LLCOMM_SIG_OP_SUM 0u
#define LLCOMM_SIG_KIND_MASK 0x3FFu

// f32 accumulation for f16/bf16 (issue 18 item 4), the default: the host builds the kernels with these values unless
// the communicator asks for 16-bit accumulation (option `accumulation: 'dtype'`, which passes both as 0 to NVRTC).
// The host's capacity rules (kernel-table.ts KernelBuildOptions, defaults from abi.ts) must agree; the ABI test
// checks the defaults.
// 1: f16/bf16 ring carries f32 partial sums between reduce-scatter hops (kernels/allreduce/ring.cu) at half the
// capacity per launch; 0: 16-bit partials, rounded at every hop (as NCCL).
#ifndef LLCOMM_RING_F32_PARTIALS
#define LLCOMM_RING_F32_PARTIALS 1
#endif
// 1: f16/bf16 twoshot-atomic adds into f32 lines (two physical lines per 31 input words; llcomm/atomic_lines.cuh;
// the ll128 region has room for them: the same capacity per launch); 0: packed 16-bit red.add (one rounding to the
// dtype per add).
#ifndef LLCOMM_ATOMIC_F32_LINES
#define LLCOMM_ATOMIC_F32_LINES 1
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
