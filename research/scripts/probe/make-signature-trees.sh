#!/usr/bin/env bash
# Makes the kernel trees that research/scripts/probe/signature-ab.sh compares (untracked, not ignored: they travel
# to the GPU machine with the working tree; delete ab/ afterwards). Each is a copy of packages/llcomm/kernels/ with
# one A/B define at the top of llcomm/abi.cuh (the first header every kernel includes, so wait.cuh and
# signature.cuh both see it); none of these defines is part of the ABI:
#   ab/nosig    LLCOMM_NO_SIGNATURE: the LlcCallSignature steps empty and blockBarrier the plain epoch-flag barrier
#               (oneshot-barrier keeps its two barriers): the kernels without the signature, the baseline.
#   ab/ctrl     the same as ab/nosig, byte for byte (same cubin through the cache): the A/B's own noise floor.
#   ab/r1       LLCOMM_SIG_ARM_PLAIN: round 1's armed look, whose address arithmetic the compiler may hoist before the
#               poll loops (the product build, packages/llcomm/kernels, passes it through an empty asm).
#   ab/noarm    LLCOMM_SIG_NO_ARM: the data waits never look at the signature (measures what arming costs).
#   ab/pubonly  LLCOMM_SIG_PUBLISH_ONLY: the packet stores only, no check, no arm (splits the cost: publish / rest).
#   ab/publow   LLCOMM_SIG_PUBLISH_LOW: threads 0..nranks-1 store the packets (round 0's publishers), checkers unchanged.
#   ab/r2       LLCOMM_SIG_R2: round 2's placement of the serial paths' check (now the default: the same as
#               packages/llcomm/kernels, a second control).
#   ab/tail     LLCOMM_SIG_TAIL: round 3's tail check (measured slower; research/notes/signature-cost.md).
#   ab/defer    LLCOMM_SIG_DEFERRED: kernel e checks epoch e - 1's packets (loaded at its start, compared after its
#               sends; no wait on the critical path), 4 signature slots by epoch mod 4 (the region has room for 4 in
#               every build: abi.cuh, abi.ts), the last launch of each channel left to the host (round 4).
#   ab/nowait   LLCOMM_SIG_NOWAIT: the current-epoch checks look once, never poll (round 5: what the wait costs).
#   ab/dnoload  the deferred build with LLCOMM_SIG_DEFER_NOLOAD: its check's code, no loads (round 5).
#   ab/dnocmp   the deferred build with LLCOMM_SIG_DEFER_NOCOMPARE: its loads, no comparison code (round 5).
# Round 6 (the slow paths out of line) is research/scripts/probe/signature-patches/round6-cold-slow-paths.patch:
# apply it to a copy of the kernels (its LLCOMM_SIG_INLINE_SLOW builds them inlined again); measured no gain for
# the product placement (research/notes/signature-cost.md, round 6), so the product kernels do not carry it. Round 7
# (the checks after the kernel's last __syncthreads, LLCOMM_SIG_END, ab/end) is signature-patches/
# round7-checks-at-end.patch, against f5cebbe's kernels: measured slower (round 7), not carried either.
# Research notes: research/notes/signature-cost.md (round 2).
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
make_tree() { # name define [define...]
  local name=$1
  shift
  rm -rf "ab/$name" && mkdir -p ab
  cp -a packages/llcomm/kernels "ab/$name"
  python3 - "ab/$name/llcomm/abi.cuh" "$name" "$@" <<'PY'
import sys
p, name, defines = sys.argv[1], sys.argv[2], sys.argv[3:]
s = open(p).read()
anchor = '#pragma once\n'
assert s.count(anchor) == 1, 'abi.cuh: #pragma once not found'
lines = ''.join(f'#define {d} 1 // ab/{name} (make-signature-trees.sh)\n' for d in defines)
open(p, 'w').write(s.replace(anchor, anchor + lines))
PY
  for define in "$@"; do grep -q "^#define $define 1" "ab/$name/llcomm/abi.cuh"; done
}
# Each knob must still be in the source it switches (a renamed knob would silently build the product kernels).
grep -q 'defined(LLCOMM_NO_SIGNATURE)' packages/llcomm/kernels/llcomm/signature.cuh
grep -q 'defined(LLCOMM_SIG_PUBLISH_ONLY)' packages/llcomm/kernels/llcomm/signature.cuh
grep -q 'defined(LLCOMM_SIG_NO_ARM)' packages/llcomm/kernels/llcomm/signature.cuh
grep -q 'defined(LLCOMM_SIG_PUBLISH_LOW)' packages/llcomm/kernels/llcomm/signature.cuh
grep -q 'defined(LLCOMM_SIG_ARM_PLAIN)' packages/llcomm/kernels/llcomm/wait.cuh
grep -q 'defined(LLCOMM_SIG_R2)' packages/llcomm/kernels/llcomm/signature.cuh
grep -q 'defined(LLCOMM_SIG_TAIL)' packages/llcomm/kernels/llcomm/signature.cuh
grep -q 'defined(LLCOMM_SIG_DEFERRED)' packages/llcomm/kernels/llcomm/signature.cuh
grep -q 'defined(LLCOMM_SIG_BLOCK)' packages/llcomm/kernels/llcomm/signature.cuh
grep -q 'defined(LLCOMM_SIG_DEFERRED)' packages/llcomm/kernels/llcomm/abi.cuh
grep -q 'defined(LLCOMM_SIG_DEFERRED)' packages/llcomm/kernels/llcomm/channel.cuh
grep -q 'defined(LLCOMM_SIG_NOWAIT)' packages/llcomm/kernels/llcomm/signature.cuh
grep -q 'defined(LLCOMM_SIG_DEFER_NOLOAD)' packages/llcomm/kernels/llcomm/signature.cuh
grep -q 'defined(LLCOMM_SIG_DEFER_NOCOMPARE)' packages/llcomm/kernels/llcomm/signature.cuh
# Every tree says in its ab.env whether the host adds the signature block (ab-kernels.sh applies it to that
# variant's runs), and the knobs of the in-block check name LLCOMM_SIG_IN_BLOCKS (abi.cuh refuses them with the block),
# so the trees are the same whichever check is the default.
host_block() { local v=$1; shift; for t in "$@"; do echo "LLCOMM_SIG_BLOCK=$v" > "ab/$t/ab.env"; done; }
make_tree nosig LLCOMM_NO_SIGNATURE
make_tree inblk LLCOMM_SIG_IN_BLOCKS # the in-block check
make_tree r1 LLCOMM_SIG_IN_BLOCKS LLCOMM_SIG_ARM_PLAIN
make_tree noarm LLCOMM_SIG_IN_BLOCKS LLCOMM_SIG_NO_ARM
make_tree pubonly LLCOMM_SIG_PUBLISH_ONLY
make_tree publow LLCOMM_SIG_IN_BLOCKS LLCOMM_SIG_PUBLISH_LOW
make_tree r2 LLCOMM_SIG_IN_BLOCKS LLCOMM_SIG_R2
make_tree tail LLCOMM_SIG_IN_BLOCKS LLCOMM_SIG_TAIL
make_tree defer LLCOMM_SIG_DEFERRED
make_tree nowait LLCOMM_SIG_IN_BLOCKS LLCOMM_SIG_NOWAIT
make_tree dnoload LLCOMM_SIG_DEFERRED LLCOMM_SIG_DEFER_NOLOAD
make_tree dnocmp LLCOMM_SIG_DEFERRED LLCOMM_SIG_DEFER_NOCOMPARE
# round 11: the signature block (its data blocks written as nosig's) and the same block left empty (its cost alone)
make_tree sigblk LLCOMM_NO_SIGNATURE LLCOMM_SIG_BLOCK
make_tree xblk LLCOMM_NO_SIGNATURE LLCOMM_SIG_BLOCK_EMPTY
host_block 0 nosig inblk r1 noarm pubonly publow r2 tail defer nowait dnoload dnocmp
host_block 1 sigblk xblk
rm -rf ab/ctrl && cp -a ab/nosig ab/ctrl
cmp -s ab/nosig/llcomm/abi.cuh ab/ctrl/llcomm/abi.cuh
echo "ab/{nosig,ctrl,inblk,r1,noarm,pubonly,publow,r2,tail,defer,sigblk,xblk,nowait,dnoload,dnocmp} ready ($(find ab/nosig -type f | wc -l) files each)"
