// The parameter structs of the fused kernels (kernels/allreduce/fused_rmsnorm_*.cu, rmsnorm.cu, allreduce_many.cu)
// and their constants. Host-includable: plain data only; src/backends/cuda/fused-abi.ts mirrors every field and
// test/kernels/fused-abi.test.ts compares offsetof/sizeof. Kept apart from abi.cuh so that the all-reduce ABI is
// untouched.
#pragma once
#include "llcomm/abi.cuh"

// LlcommFusedNormParams.flags
#define LLCOMM_FUSED_RESIDUAL_F32 1u /* the residual stream is f32 (else the dtype of x) */
#define LLCOMM_FUSED_NO_RESIDUAL_IN 2u /* residual = allreduce(x) (the first layer); else residual += allreduce(x) */
#define LLCOMM_FUSED_OUT_E4M3 4u /* out is FP8 e4m3 (1 byte per element): e4m3(y * outScale), saturating */
#define LLCOMM_FUSED_FLAGS_MASK 7u

// The fused AllReduce + residual add + RMSNorm, over a [rows][hidden] tensor per rank, row-major and contiguous:
//   residual = (flags & NO_RESIDUAL_IN ? 0 : residual) + allreduce(x)   (x's dtype, or f32 with RESIDUAL_F32)
//   out      = dtype(residual * rsqrt(mean(residual^2) + eps) * weight)
//              (with OUT_E4M3: e4m3(that value before rounding * outScale), round to nearest even, saturated to +-448)
// Each block (channel) owns whole rows: llcPiece(rows, blocksPerRank, channel, 1). hidden * elemBytes is a multiple
// of 16 (every slot of the message is full, every row starts on a 16-byte boundary).
// The same struct drives the reference llcomm_rmsnorm_<dtype> kernel (input = the AllReduce's output; the buffer
// fields are unused there): one block per (rank slot, row), blockIdx.x = slot * rows + row.
struct LlcommFusedNormParams {
  llc_u64 input[LLCOMM_MAX_RANKS];    // x: dtype[rows][hidden], by global rank
  llc_u64 residual[LLCOMM_MAX_RANKS]; // dtype or f32 [rows][hidden], read and written in place
  llc_u64 out[LLCOMM_MAX_RANKS];      // dtype[rows][hidden]
  llc_u64 weight[LLCOMM_MAX_RANKS];   // dtype[hidden]
  llc_u64 recvBuf[LLCOMM_MAX_RANKS];
  llc_u64 scratch[LLCOMM_MAX_RANKS];
  llc_u64 errorWord;
  llc_u64 timeoutNs;
  LlcommRegion sentinel; // sentinel slots (deviceBufferLayout's, filled with LLCOMM_SENTINEL_WORD)
  llc_u32 rows;
  llc_u32 hidden;
  llc_u32 epsBits; // f32 bits
  llc_u32 flags;   // LLCOMM_FUSED_*
  llc_u32 nranks;
  llc_u32 ranksInLaunch;
  llc_u32 blocksPerRank;
  llc_u32 outScaleBits; // f32 bits of the per-tensor scale of an e4m3 output (OUT_E4M3; else unused)
  llc_u8 launchRanks[LLCOMM_MAX_RANKS];
  LlcommRegion ll; // LL8/LL16 packet region (deviceBufferLayout's, zero fill): the LL fused kernels only
  // The launch's call signature, word 0 then word 1 (src/protocol/call-signature.ts encodeFusedSignature), read only by
  // the signature cluster of the per-process build (LLCOMM_FUSED_SIG_CLUSTER, llcomm/fused_signature.cuh); the
  // in-process launches leave it zero. Appended last: every other field keeps its offset.
  llc_u32 signature[2];
};

// allReduceMany: up to LLCOMM_MANY_MAX_BUFFERS buffers of different sizes reduced in one launch. The buffers are laid
// end to end in slot space (buffer i starts at slot sum_{j<i} ceil(count_j * elemBytes / 16)); the channels split
// that slot range as one message. Every element is reduced in rank order in f32, exactly as one AllReduce per buffer.
// The struct is larger than 4 KB (CUDA 12.1+ on sm_70+ takes kernel parameters up to 32764 bytes).
#define LLCOMM_MANY_MAX_BUFFERS 8
struct LlcommAllReduceManyParams {
  llc_u64 input[LLCOMM_MANY_MAX_BUFFERS][LLCOMM_MAX_RANKS];  // by buffer, then global rank
  llc_u64 output[LLCOMM_MANY_MAX_BUFFERS][LLCOMM_MAX_RANKS];
  llc_u64 count[LLCOMM_MANY_MAX_BUFFERS]; // elements per rank of each buffer (0 past `buffers`)
  llc_u64 recvBuf[LLCOMM_MAX_RANKS];
  llc_u64 scratch[LLCOMM_MAX_RANKS];
  llc_u64 errorWord;
  llc_u64 timeoutNs;
  LlcommRegion sentinel;
  llc_u32 buffers;
  llc_u32 nranks;
  llc_u32 ranksInLaunch;
  llc_u32 blocksPerRank;
  llc_u8 launchRanks[LLCOMM_MAX_RANKS];
  // The launch's call signature, word 0 then word 1 (src/protocol/call-signature.ts encodeManySignature), read only by
  // the signature block of the per-process build (LLCOMM_FUSED_SIG_CLUSTER, llcomm/fused_signature.cuh); the
  // in-process launches leave it zero. Appended last: every other field keeps its offset.
  llc_u32 signature[2];
};
