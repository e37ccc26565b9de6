#!/usr/bin/env bash
# Round 9 of the signature A/B (issue 18; research/notes/signature-cost.md, round 9): trees derived from round 8's
# candidate (signature-patches/round8-defer-late-default.patch applied to f1d3304's kernels, ab/dlate), each an A/B
# build only (none checks what the product checks):
#   ab/dlate  round 8's candidate: deferred check, branch-free verdict after the sends, slow path after the last barrier
#   ab/duse   dnocmp's shape (the deferred loads, no comparison, no slow path) but the packets' difference stored to an
#             unused sender slot (63) of this rank's own signature region after the sends: the checker then waits for
#             its loads, which dnocmp's empty asm may not make it do (a load whose value nothing uses)
#   ab/dtiny  ab/dlate with the slow path replaced by one store of the verdict to that slot: the verdict's wait and
#             branch, without the slow path's code
#   ab/dend   ab/dlate with the verdict formed after the last barrier too (deferCheck empty, the packets live to the
#             end): the loads' round trip off the sends-to-receives stretch
# Run from the repository root; then research/scripts/probe/signature-ab.sh with AB_VARIANTS naming them.
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
base=$(mktemp -d /tmp/llcomm-round9.XXXXXX)
trap 'rm -rf "$base"' EXIT
git archive f1d3304 packages/llcomm/kernels | tar -x -C "$base"
(cd "$base" && patch -s -p1 < "$OLDPWD/research/scripts/probe/signature-patches/round8-defer-late-default.patch")
mkdir -p ab
for t in dlate duse dtiny dend; do rm -rf "ab/$t" && cp -a "$base/packages/llcomm/kernels" "ab/$t"; done
python3 - <<'PY'
import re
def edit(path, old, new, count=1):
    s = open(path).read()
    assert s.count(old) == count, (path, old[:60], s.count(old))
    open(path, 'w').write(s.replace(old, new))
spare = ('llcStoreRelaxedSys(reinterpret_cast<llc_u32*>(llcSignatureSlot(p.scratch[me], ch.index, 0, '
         'LLCOMM_MAX_RANKS - 1)), ')
# duse: NOCOMPARE (the default then defines no LATE), its difference stored instead of handed to an empty asm.
edit('ab/duse/llcomm/abi.cuh', '#pragma once\n', '#pragma once\n#define LLCOMM_SIG_DEFER_NOCOMPARE 1 // ab/duse (make-round9-trees.sh)\n')
edit('ab/duse/llcomm/signature.cuh', '  asm volatile("" ::"l"(differs));\n  return;\n',
     '  if (k + 1 < p.nranks) ' + spare + 'static_cast<llc_u32>(differs | (differs >> 32)));\n  return;\n')
# dtiny: the slow path replaced by one store of the verdict.
edit('ab/dtiny/llcomm/signature.cuh', '''  if (x.pending) {
    const llc_u32 slot = ch.prev & LLCOMM_SIG_EPOCH_MASK, k = blockDim.x - 1 - threadIdx.x;''',
     '''  if (x.pending) ''' + spare + '''x.pending);
  if (false) {
    const llc_u32 slot = ch.prev & LLCOMM_SIG_EPOCH_MASK, k = blockDim.x - 1 - threadIdx.x;''')
# dend: the verdict formed in deferEnd (after the last barrier); deferCheck leaves the packets alone.
edit('ab/dend/llcomm/signature.cuh', '''  const bool checkable = k + 1 < p.nranks && ch.prev != 0 && llcSignatureArrived(x.own, ch.prev);
  const bool settled = x.peer.a == x.own.a && x.peer.b == x.own.b && k + blockDim.x + 1 >= p.nranks;
  llc_u32 pending = checkable && !settled ? 1u : 0u;
#if !defined(LLCOMM_HOST_EMULATION)
  asm volatile("" : "+r"(pending));
#endif
  x.pending = pending;
  return;''', '''  (void)k;
  return;''')
edit('ab/dend/llcomm/signature.cuh', '''#if defined(LLCOMM_SIG_DEFER_LATE)
  if (x.pending) {''', '''#if defined(LLCOMM_SIG_DEFER_LATE)
  {
    const llc_u32 kk = blockDim.x - 1 - threadIdx.x;
    const bool checkable = kk + 1 < p.nranks && ch.prev != 0 && llcSignatureArrived(x.own, ch.prev);
    const bool settled = x.peer.a == x.own.a && x.peer.b == x.own.b && kk + blockDim.x + 1 >= p.nranks;
    x.pending = checkable && !settled ? 1u : 0u;
  }
  if (x.pending) {''')
PY
for t in dlate duse dtiny dend; do
  for f in oneshot_ll oneshot_sentinel twoshot_sentinel; do
    spill=$(nvcc -arch=sm_90 -cubin -std=c++17 -Xptxas -v -I "ab/$t" "ab/$t/allreduce/$f.cu" -o /dev/null 2>&1 |
      grep -oE "[0-9]+ bytes stack frame" | awk '{s += $1} END {print s + 0}')
    echo "ab/$t $f: stack bytes over its kernels $spill"
  done
done
