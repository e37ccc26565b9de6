// The fused kernels' call signature, per process only (issue 21: a per-process fused call whose ranks disagree on
// rows, hidden, dtype, eps, flags or the kernel must end with MISMATCH on every rank, not with wrong data or a
// TIMEOUT). Built only with LLCOMM_FUSED_SIG_CLUSTER, which the per-process communicator passes to NVRTC
// (kernel-table.ts KernelBuildOptions.fusedSignatureCluster) when it uses the signature block (LLCOMM_SIG_BLOCK, the
// default). The in-process build expands LLCOMM_FUSED_SIGNATURE_CLUSTER to nothing: its PTX is that of the kernels
// without it (there one host call launches every rank with the same arguments, so a mismatch cannot happen).
// The same define covers allReduceMany (allreduce/allreduce_many.cu, LlcommAllReduceManyParams, words from
// encodeManySignature, algorithm code LLCOMM_SIG_ALG_ALLREDUCE_MANY): the cluster below is a template over any params
// struct with the fields it reads (ranksInLaunch, blocksPerRank, scratch, errorWord, timeoutNs, nranks, launchRanks,
// signature). allReduceMany launches are not cluster launches: its signature "cluster" is one block (grid R x B + 1).
//
// The shape: the host launches one extra *cluster* per launch after the R x B data blocks (grid R x B + C, C the
// launch's cluster size, 1 for the one-shot and two-shot kernels: the split kernels are cluster launches whose grid
// must be a multiple of C, so one extra block does not fit them). The cluster's first block runs the signature block
// (signature.cuh llcSignatureBlockWords, with the words the host packed into p.signature); its other blocks return at
// once (they touch no distributed shared memory, and no data cluster waits for them). The data blocks are unchanged:
// their waits (LlBuffer / LlcWaiter::keepWaiting, and the split kernels' cluster waits through the same waiter) read
// the error word at every deadline check, so a MISMATCH recorded by the signature block ends them at their next
// check, as in the all-reduce kernels. Co-residency: each rank's launch takes C more blocks (one more cluster); the
// planner counts it (fused-launcher.ts planFusedSplit's signatureCluster) and launchFor checks the grid with it.
#pragma once
#include "llcomm/fused_abi.cuh"

#if defined(LLCOMM_FUSED_SIG_CLUSTER)
#include "llcomm/ptx.cuh"
#include "llcomm/signature.cuh"
#if !defined(LLCOMM_SIG_BLOCK)
#error "LLCOMM_FUSED_SIG_CLUSTER uses the signature block's epoch word and slots: build with LLCOMM_SIG_BLOCK"
#endif

#if LLC_HAS_DEVICE
// Every thread of a block past the data blocks calls it and then returns: the first such block is the signature
// block, the rest of the signature cluster does nothing. Params: LlcommFusedNormParams or LlcommAllReduceManyParams
// (any struct with the fields read here).
template <class Params>
LLC_DEVICE void llcFusedSignatureCluster(const Params& p) {
  llcWaitForPriorGrid(); // before any read of the epoch word (PDL launches), as the data blocks
  if (blockIdx.x != p.ranksInLaunch * p.blocksPerRank) return;
  llcSignatureBlockWords(p.scratch, p.errorWord, p.timeoutNs, p.nranks, p.ranksInLaunch, p.launchRanks, p.signature[0],
                         p.signature[1]);
}
#endif

// At the top of every fused RMSNorm and allReduceMany kernel entry: the signature cluster's blocks take this branch (the data blocks'
// roles, llcBlockRole, are defined for blockIdx.x < ranksInLaunch x blocksPerRank only).
#define LLCOMM_FUSED_SIGNATURE_CLUSTER(p)                                                                          \
  if (blockIdx.x >= (p).ranksInLaunch * (p).blocksPerRank) {                                                       \
    llcFusedSignatureCluster(p);                                                                                    \
    return;                                                                                                         \
  }
#else
#define LLCOMM_FUSED_SIGNATURE_CLUSTER(p)
#endif
