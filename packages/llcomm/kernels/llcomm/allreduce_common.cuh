// What every all-reduce kernel starts with: its rank and channel, its element range, its epoch and its waiter;
// plus the token maps the instantiation table's X-macros use.
#pragma once
#include "llcomm/abi.cuh"
#include "llcomm/channel.cuh"
#include "llcomm/dtype.cuh"
#include "llcomm/ptx.cuh"
#include "llcomm/wait.cuh"
#include "llcomm/signature.cuh"

#if LLC_HAS_DEVICE

#define LLC_DT_f32 LLCOMM_DTYPE_F32
#define LLC_DT_f16 LLCOMM_DTYPE_F16
#define LLC_DT_bf16 LLCOMM_DTYPE_BF16
#define LLCOMM_KERNEL_NAME(algorithm, protocol, dtype, op) llcomm_##algorithm##_##protocol##_##dtype##_##op
// Channels split the message in pieces aligned to 16 bytes, so every piece starts on a vector boundary.
#define LLCOMM_ALIGN_BYTES 16u

struct LlcCall {
  LlcBlockRole role;
  LlcRange range; // this channel's elements of the message
  const char* input;  // this rank's input, at range.begin
  char* output;       // this rank's output, at range.begin
  llc_u64 bytes;      // range.size() * element bytes
};

// kSigAlg, kSigProtocol: the kernel's signature kind (signature.cuh), for its signature block.
template <int DT, llc_u32 kSigAlg, llc_u32 kSigProtocol>
LLC_DEVICE LlcCall llcBeginCall(const LlcommAllReduceParams& p) {
  LlcCall c;
#if defined(LLCOMM_SIG_BLOCK) || defined(LLCOMM_SIG_BLOCK_EMPTY)
  // The signature block (signature.cuh, llcSignatureBlock): the host launches one per launch after the data blocks
  // (LLCOMM_SIG_BLOCK_EMPTY, an A/B control, leaves it idle). Only these builds have the guard (the default build is
  // one of them); the host must add the block only for them (kernel-table.ts SIGNATURE_BLOCK). On the
  // GPU the block ends with `exit`, not a return: with an early return, even from an empty block, ptxas gave the
  // 16-bit twoshot-sentinel kernels 4-16 bytes of spill (at the 128-register cap); with `exit` the compiler sees one
  // path through the kernel and every data kernel keeps the registers it has without the signature. The host
  // emulation returns an empty call instead (the kernels return at bytes == 0).
  if (blockIdx.x >= p.ranksInLaunch * p.blocksPerRank) {
    llcWaitForPriorGrid();
#if defined(LLCOMM_SIG_BLOCK)
    llcSignatureBlock<kSigAlg, kSigProtocol, DT>(p);
#endif
#if defined(LLCOMM_HOST_EMULATION)
    c.bytes = 0;
    return c;
#else
    asm volatile("exit;");
#endif
  }
#endif
  llcWaitForPriorGrid(); // before any read of the epoch word or the buffers (PDL launches)
  c.role = llcBlockRole(p.blocksPerRank, p.launchRanks);
  constexpr llc_u32 eb = LlcDtype<DT>::kElemBytes;
  c.range = llcPiece(p.count, p.blocksPerRank, c.role.channel, LLCOMM_ALIGN_BYTES / eb);
  c.input = reinterpret_cast<const char*>(p.input[c.role.rank]) + c.range.begin * eb;
  c.output = reinterpret_cast<char*>(p.output[c.role.rank]) + c.range.begin * eb;
  c.bytes = c.range.size() * eb;
  return c;
}

#endif // LLC_HAS_DEVICE
