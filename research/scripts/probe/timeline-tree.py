#!/usr/bin/env python3
"""Makes a kernel tree with the kernel-timeline probe (research/scripts/probe/fused-timeline.mjs): every kernel of
the table sources records, per block, its entry and exit (%globaltimer, ns) and up to 13 in-kernel marks (thread
0's) into a ring
in rank 0's receive buffer (plain region, channel 15, half 0, 64 KiB in: the ring and oneshot-barrier kernels, which
use that region, are not run by the probe). A research build only, never the product: the tree is a copy.
Usage: timeline-tree.py SRC DST  (SRC: a packages/llcomm/kernels tree)."""
import re
import shutil
import sys

src, dst = sys.argv[1], sys.argv[2]
shutil.rmtree(dst, ignore_errors=True)
shutil.copytree(src, dst)

HEADER = r'''// Kernel-timeline probe (research build, research/scripts/probe/timeline-tree.py): see that script.
#pragma once
#include "llcomm/abi.cuh"
#include "llcomm/fused_abi.cuh"
#include "llcomm/atomic_lines.cuh"
#if LLC_HAS_DEVICE && !defined(LLCOMM_HOST_EMULATION)
#define LLC_TL_CAPACITY 2048u /* records of 128 bytes */
#define LLC_TL_OFFSET 65536ull
__shared__ unsigned long long llcTlShared[16]; // 0 entry, 1..11 marks, 12 / 13 clock64 at entry / record, 14 max exit, 15 exit count
LLC_DEVICE llc_u64 llcTlNow() {
  llc_u64 t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
LLC_DEVICE unsigned long long* llcTimelineBase(const LlcommAllReduceParams& p) {
  return reinterpret_cast<unsigned long long*>(p.recvBuf[0] + p.plain.offset + 30ull * p.plain.channelHalfBytes +
                                               LLC_TL_OFFSET);
}
LLC_DEVICE unsigned long long* llcTimelineBase(const LlcommFusedNormParams& p) {
  // deviceBufferLayout: ll (2P a half), sentinel (P), ll128 (2 ceil(P / n / 124) lines of 128 B), plain (P); 16
  // channels x 2 halves each.
  const llc_u64 P = p.sentinel.channelHalfBytes;
  const llc_u64 perOwner = LLCOMM_LINE_DATA_WORDS * 4ull;
  const llc_u64 ll128Half = 2ull * ((P / p.nranks + perOwner - 1ull) / perOwner) * LLCOMM_LINE_BYTES;
  const llc_u64 plain = p.sentinel.offset + 32ull * P + 32ull * ll128Half;
  return reinterpret_cast<unsigned long long*>(p.recvBuf[0] + plain + 30ull * P + LLC_TL_OFFSET);
}
template <class P>
LLC_DEVICE unsigned long long* llcTimelineBase(const P&) { return nullptr; }
#define LLC_TL_MARK(i)                                        \
  do {                                                        \
    if (threadIdx.x == 0) llcTlShared[(i)] = llcTlNow();      \
  } while (0)
// The latest thread of the block at this point (every thread that passes it; the slot starts at 0).
#define LLC_TL_MAX(i) atomicMax(&llcTlShared[(i)], static_cast<unsigned long long>(llcTlNow()))
struct LlcTimelineScope {
  unsigned long long* ring;
  llc_u32 tag;
  LLC_DEVICE LlcTimelineScope(unsigned long long* r, llc_u32 tg) : ring(r), tag(tg) {
    if (threadIdx.x < 16) llcTlShared[threadIdx.x] = 0;
    __syncthreads(); // at the kernel's first instruction: every thread is here
    if (threadIdx.x == 0) {
      llcTlShared[0] = llcTlNow();
      llcTlShared[12] = static_cast<unsigned long long>(clock64()); // mark 12: the SM clock at entry
    }
  }
  // Every thread at its exit (whatever return it took): the block's last one writes the record.
  LLC_DEVICE ~LlcTimelineScope() {
    atomicMax(&llcTlShared[14], static_cast<unsigned long long>(llcTlNow()));
    __threadfence_block();
    const unsigned long long n = atomicAdd(&llcTlShared[15], 1ull);
    if (ring == nullptr || n != blockDim.x - 1u) return;
    __threadfence_block();
    llcTlShared[13] = static_cast<unsigned long long>(clock64()); // mark 13: the SM clock at the record
    const unsigned long long idx = atomicAdd(ring, 1ull) % LLC_TL_CAPACITY;
    unsigned long long* rec = ring + 16u + 16u * idx;
    rec[0] = tag | (static_cast<unsigned long long>(blockIdx.x) << 8) | (static_cast<unsigned long long>(gridDim.x) << 32);
    rec[1] = llcTlShared[0];
    for (int i = 1; i < 14; ++i) rec[1 + i] = llcTlShared[i];
    rec[15] = atomicMax(&llcTlShared[14], 0ull);
  }
};
#else
#define LLC_TL_MARK(i) \
  do {                 \
  } while (0)
#define LLC_TL_MAX(i) \
  do {                \
  } while (0)
#endif
'''
open(f'{dst}/llcomm/timeline.cuh', 'w').write(HEADER)

def edit(path, fn):
    p = f'{dst}/{path}'
    s = open(p).read()
    t = fn(s)
    assert t != s, f'{path}: nothing changed'
    open(p, 'w').write(t)

# Every kernel includes allreduce_common.cuh (directly or through fused_split.cuh).
edit('llcomm/allreduce_common.cuh', lambda s: s.replace('#pragma once\n', '#pragma once\n#include "llcomm/timeline.cuh"\n', 1))

TAGS = {'oneshot_ll': 1, 'oneshot_sentinel': 2, 'oneshot_barrier': 3, 'twoshot_sentinel': 4, 'twoshot_atomic': 5,
        'ring': 6, 'rmsnorm': 7, 'fused_rmsnorm_oneshot': 8, 'fused_rmsnorm_twoshot': 9, 'fused_rmsnorm_split': 10,
        'fused_rmsnorm_split_ll': 11, 'allreduce_many': 12}
for name, tag in TAGS.items():
    # the wrapper's body: `(const __grid_constant__ X p) {  \` then the call line
    def wrap(s, tag=tag):
        return re.sub(r'(const __grid_constant__ \w+ p\) \{ *\\\n)', lambda m: m.group(1) +
                      f'    LlcTimelineScope llcTl_(llcTimelineBase(p), {tag}u);                                               \\\n', s)
    edit(f'allreduce/{name}.cu', wrap)

# Marks. Split (fused_split.cuh): 1 sends issued, 2 receive + residual + q done, 3 first cluster barrier passed,
# 4 inverse RMS visible (__syncthreads), 5 output stored; 9 and 10 (added in session 13): the block's latest
# thread at 2 and at 5 (LLC_TL_MAX), so that a barrier's wait for the block's own slowest thread shows.
def split_marks(s):
    s = s.replace('  if constexpr ((kProbe & LLC_SPLIT_PROBE_XCHG_ONLY) != 0) {', '  LLC_TL_MARK(1);\n  if constexpr ((kProbe & LLC_SPLIT_PROBE_XCHG_ONLY) != 0) {', 1)
    s = s.replace('  // Units past `units` are never read.', '  LLC_TL_MARK(2);\n  LLC_TL_MAX(9);\n  // Units past `units` are never read.', 1)
    s = s.replace('  // Per row: the reference\'s level-1 and total sums', '  LLC_TL_MARK(3);\n  // Per row: the reference\'s level-1 and total sums', 1)
    s = s.replace('  __syncthreads(); // invs is visible to every thread of the block\n', '  __syncthreads(); // invs is visible to every thread of the block\n  LLC_TL_MARK(4);\n', 1)
    s = s.replace('  ch.blockAdvanceEpoch(); // after every recv of this block (ll_buffer.cuh contract)\n  if constexpr (kBarrier)', '  LLC_TL_MARK(5);\n  LLC_TL_MAX(10);\n  ch.blockAdvanceEpoch(); // after every recv of this block (ll_buffer.cuh contract)\n  if constexpr (kBarrier)', 1)
    assert s.count('LLC_TL_MARK') == 5, s.count('LLC_TL_MARK')
    return s
edit('llcomm/fused_split.cuh', split_marks)

# Two-shot spread (fused_rmsnorm_twoshot.cu): 1 reduce-scatter sends issued, 2 owner's sums in shared memory,
# 3 all-gather received and added, 4 residual rows complete (__syncthreads), 5 norm pass done.
def twoshot_marks(s):
    a = s.index('__device__ __forceinline__ void fusedTwoshotSpread')
    b = s.index('__device__ __forceinline__ void fusedRmsNormTwoshot')
    body = s[a:b]
    body = body.replace('  // The reduce\'s stage, then the owner\'s canonicalized sums', '  LLC_TL_MARK(1);\n  // The reduce\'s stage, then the owner\'s canonicalized sums', 1)
    body = body.replace('    __syncthreads(); // uniform (mineSlots is): the sums are in `sums`\n', '    __syncthreads(); // uniform (mineSlots is): the sums are in `sums`\n    LLC_TL_MARK(2);\n', 1)
    body = re.sub(r'(\n  __syncthreads\(\); // the block\'s residual rows are complete)', r'\n  LLC_TL_MARK(3);\1', body, count=1)
    body = re.sub(r'(  __syncthreads\(\); // the block\'s residual rows are complete[^\n]*\n)', r'\1  LLC_TL_MARK(4);\n', body, count=1)
    body = body.replace('  ch.blockAdvanceEpoch(); // after every recv of this block (ll_buffer.cuh contract)\n}', '  LLC_TL_MARK(5);\n  ch.blockAdvanceEpoch(); // after every recv of this block (ll_buffer.cuh contract)\n}', 1)
    assert body.count('LLC_TL_MARK') == 5, body.count('LLC_TL_MARK')
    return s[:a] + body + s[b:]
edit('allreduce/fused_rmsnorm_twoshot.cu', twoshot_marks)

# The norm passes (rmsnorm.cuh llcRmsNormRowFrom): 6 q stored, 7 first __syncthreads passed,
# 8 inverse RMS done (thread 0 forms it), 9 second __syncthreads passed, 10 output stores issued; 11 (added in
# session 13): the block's latest thread at 6.
def norm_marks(s):
    # (one function since f5a3d8a; the 2026-12-04 runs marked llcRmsNormRow and llcRmsNormRowCached alike)
    for fn in ('LLC_DEVICE void llcRmsNormRowFrom(',):
        a = s.index(fn)
        b = s.index('\n}\n', a)
        body = s[a:b]
        body = body.replace("  red[t] = q;\n  __syncthreads(); // every thread's partial is in shared memory\n",
                            "  red[t] = q;\n  LLC_TL_MARK(6);\n  LLC_TL_MAX(11);\n  __syncthreads(); // every thread's partial is in shared memory\n  LLC_TL_MARK(7);\n", 1)
        # (nt in HEAD's kernels, kNt in fused-patches/norm-unrolled.patch: the compile-time thread count)
        body = re.sub(r"(  llcNormInverse\(red, t, k?[nN]t, hidden, eps\);\n)(  __syncthreads\(\); // the row's inverse RMS is visible to every thread\n)",
                      r"\1  LLC_TL_MARK(8);\n\2  LLC_TL_MARK(9);\n", body, count=1)
        body = body.replace("  __syncthreads(); // `red` is read by every thread before the next row overwrites it",
                            "  LLC_TL_MARK(10);\n  __syncthreads(); // `red` is read by every thread before the next row overwrites it", 1)
        assert body.count('LLC_TL_MARK') == 5, (fn, body.count('LLC_TL_MARK'))
        s = s[:a] + body + s[b:]
    return s.replace('#include "llcomm/ll_buffer.cuh"\n', '#include "llcomm/ll_buffer.cuh"\n#include "llcomm/timeline.cuh"\n', 1)
edit('llcomm/rmsnorm.cuh', norm_marks)

# The split gather (fused_split.cuh): 6 level-1 sums stored (the lane's loads of the cluster's q's done), 7 inverse
# RMS stored (lane 0), 8 second cluster arrive issued.
def split_gather_marks(s):
    s = s.replace('    level1[32u * warp + lane] = a;\n', '    level1[32u * warp + lane] = a;\n    LLC_TL_MARK(6);\n', 1)
    s = s.replace('      invs[rowL] = rsqrtf(__fadd_rn(__fdiv_rn(total, static_cast<float>(p.hidden)), eps));\n',
                  '      invs[rowL] = rsqrtf(__fadd_rn(__fdiv_rn(total, static_cast<float>(p.hidden)), eps));\n      LLC_TL_MARK(7);\n', 1)
    # (right after the second arrive, whatever its form: one release in HEAD's kernels, release or relaxed by warp in
    # fused-patches/split-relaxed-arrive.patch)
    s = s.replace('  __syncthreads(); // invs is visible', '  LLC_TL_MARK(8);\n  __syncthreads(); // invs is visible', 1)
    assert all(s.count(f'LLC_TL_MARK({i})') == 1 for i in (6, 7, 8))
    return s
edit('llcomm/fused_split.cuh', split_gather_marks)

# RMSNorm reference (rmsnorm.cu): 1 residual rows written (__syncthreads passed).
edit('allreduce/rmsnorm.cu', lambda s: s.replace('  __syncthreads(); // the row\'s residual is written (and visible to every thread of the block)\n',
                                                 '  __syncthreads(); // the row\'s residual is written (and visible to every thread of the block)\n  LLC_TL_MARK(1);\n', 1))
print(f'{dst} ready')
