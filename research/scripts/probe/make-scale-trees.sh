#!/usr/bin/env bash
# Makes the kernel trees that research/scripts/probe/scale-ab.sh compares (issue 22, first step; analysis and
# predictions in research/notes/scale-2026-12-01.md). Untracked, not ignored: they travel to the GPU machine with the
# working tree; delete ab/ afterwards. Each but ab/scale-merged, the working-tree variants (sigidle, unroll8) and the
# pre-pull variants (serialbatch, pullag, pullgate: SCALE_PREPULL_REF's kernels) is a copy of packages/llcomm/kernels at
# SCALE_BASE_REF (default 85a723b, where the patches were made and measured; its default kernels compile to the PTX of
# 5c0a3a2, the last commit before the spread path was merged) with patches applied (patch -p1 in the tree;
# research/scripts/probe/scale-patches/):
#   ab/scale-base    unchanged
#   ab/scale-batch   twoshot-sentinel: input loads of 4 owners issued before their sends; all-gather polls 8 owners at
#                    once (pollBatch). twoshot-atomic: input words of 8 owners loaded before their red.adds; all-gather
#                    polls 8 owners at once. Same thread-to-slot mapping as the base.
#   ab/scale-spread  twoshot-sentinel: when a part has <= 256 slots (n >= 8), the (slot, peer) pairs of all three
#                    phases spread over the block (reduce by LlBuffer::blockRecvReduceSpread, broadcast by
#                    blockBcastSpread, all-gather receives 4 owners a poll); larger parts take the base code.
#   ab/scale-merged  the working tree's packages/llcomm/kernels (the spread path merged: af2b920, every wait armed;
#                    spread2 merged: fd9724f)
#   (ab/scale-spread2 no longer made: its patch was merged as fd9724f, so it no longer applies to the working tree
#                    and ab/scale-merged is spread2. It was the kernels of af2b920-ad85eac plus
#                    scale-patches/spread2-twoshot-sentinel.patch (issue 22, second step): on the spread path the first input loads issued before the epoch load, the owner's reduce
#                    spread over words (LlBuffer::blockRecvReduceSpreadWords), each reducing thread broadcasting its
#                    word at once (no __syncthreads between the sums and the broadcast), the signature check after
#                    the broadcast.)
#   ab/scale-sigidle the working tree's kernels plus scale-patches/sigidle-twoshot-sentinel.patch (issue 22, 16-32 ranks): in
#                    twoshot-sentinel's spread path the checker threads that poll nothing in the reduce-scatter run the
#                    signature's tryCheck there (beside the pollers); the full check after the broadcast only for what
#                    that left.
#   ab/scale-unroll8 the working tree's kernels plus scale-patches/unroll8-spread-words.patch: blockRecvReduceSpreadWords
#                    sums the ranks 8 at a time, their shared loads first (twoshot-sentinel's owner reduce and
#                    oneshot-sentinel's peer-parallel reduce).
#   (ab/scale-oswords no longer made: merged as ac2b151) scale-patches/oswords-oneshot-sentinel.patch (issue 22, 16 ranks, 8 KB):
#                    oneshot-sentinel's peer-parallel path reduces by words (blockRecvReduceSpreadWords) instead of a
#                    thread a 16-byte slot.
#   ab/scale-serialbatch the kernels of SCALE_PREPULL_REF (below) plus scale-patches/serialbatch-twoshot-sentinel.patch (issue 22,
#                    8 ranks at 256 KB / 1 MB): the serial path only (parts of more than 128 slots at 512 threads;
#                    the spread path as in the working tree): the spread path's send / all-gather mapping with
#                    min(blockDim / slots, n - 1) >= 1 thread groups a slot, 4 owners' input loads before their
#                    sends (the first batch before the epoch load), the all-gather's owners polled 8 at a time
#                    (pollBatch); owner reduce (recvReduce) and signature placement unchanged.
#   ab/scale-pullag  the kernels of SCALE_PREPULL_REF (below) plus scale-patches/pullag-twoshot-sentinel.patch (issue 22, 8 ranks
#                    at 1 MB; research/notes/scale-2026-12-02-pullag.md): the serial path's all-gather pulls: the owner
#                    stores its reduced part once into its own plain region (this epoch's channel half), bar.sync,
#                    releases a per-(channel, half) flag = the epoch in its scratch (the ring flag row's two unused
#                    words); every peer waits for every owner's flag (acquire, armed waiter), bar.sync, and loads the
#                    parts (8 owners in flight a thread). Kernel-only; the spread path and every other kernel unchanged.
#   ab/scale-pullgate the kernels of SCALE_PREPULL_REF (below) plus scale-patches/pullgate-twoshot-sentinel.patch (issue 22; notes in
#                    research/notes/scale-2026-12-02-pullag.md, "pullgate"): pullag chosen per channel by size: the serial
#                    path pulls when (2n - 3) * slotsPerPart >= kTwoshotPullMinSlots = 3072 (48 KB of stores removed a
#                    channel: 8 ranks from 237-slot parts, 4 ranks from 615, 2 ranks from 3072), else it pushes as today.
# Fails (exit 1) when a patch does not apply cleanly (the kernels moved on: regenerate the patches), and checks with
# nvcc, when it is on PATH, that each patched kernel compiles for sm_90 without spills (AB_SKIP_NVCC=1 skips that).
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
patches=research/scripts/probe/scale-patches
declare -A variants=(
  [base]=""
  [batch]="batch-twoshot-sentinel.patch batch-twoshot-atomic.patch"
  [spread]="spread-twoshot-sentinel.patch"
)
ref=${SCALE_BASE_REF:-85a723b}
mkdir -p ab
rm -rf ab/scale-ref ab/scale-merged
mkdir -p ab/scale-ref
git archive "$ref" packages/llcomm/kernels | tar -x -C ab/scale-ref
cp -a packages/llcomm/kernels ab/scale-merged
echo "ab/scale-merged ready (the working tree's kernels)"
# Patches against the working tree's kernels (name -> patches), applied to a copy of ab/scale-merged.
declare -A workingTreeVariants=(
  [sigidle]="sigidle-twoshot-sentinel.patch"
  [unroll8]="unroll8-spread-words.patch"
)
# Patches made against the kernels before twoshot_sentinel.cu got its pull kernel (pullsplit: kPull, the host's
# choice per launch), which they no longer apply to: applied to that commit's kernels (SCALE_PREPULL_REF, default
# aa37220). ab/scale-pullag and ab/scale-pullgate are for reproducing the earlier A/Bs only: the product now has
# both (LLCOMM_TWOSHOT_ALLGATHER=pull is pullag's all-gather on every serial-path launch, auto is pullgate's gate
# chosen by the host; research/scripts/probe/pullsplit-ab.sh compares them in one build).
declare -A prePullVariants=(
  [serialbatch]="serialbatch-twoshot-sentinel.patch"
  [pullag]="pullag-twoshot-sentinel.patch"
  [pullgate]="pullgate-twoshot-sentinel.patch"
)
prePull=${SCALE_PREPULL_REF:-aa37220}
# make_tree NAME SOURCE-KERNELS WHAT PATCH...: ab/scale-NAME = a copy of SOURCE-KERNELS with the patches applied;
# --dry-run first, so a patch that does not apply leaves no half-patched tree; no fuzz, no .orig/.rej files.
make_tree() {
  local dir=ab/scale-$1 src=$2 what=$3
  shift 3
  rm -rf "$dir"
  cp -a "$src" "$dir"
  for f in "$@"; do
    if ! patch -p1 -d "$dir" --dry-run --fuzz=0 --no-backup-if-mismatch -s < "$patches/$f" >/dev/null; then
      echo "make-scale-trees: $patches/$f does not apply to $what's packages/llcomm/kernels: regenerate it" >&2
      rm -rf "$dir"
      exit 1
    fi
    patch -p1 -d "$dir" --fuzz=0 --no-backup-if-mismatch -s < "$patches/$f"
  done
  echo "$dir ready ($what, ${*:-no patches})"
}
for v in "${!workingTreeVariants[@]}"; do
  make_tree "$v" ab/scale-merged "the working tree" ${workingTreeVariants[$v]}
done
rm -rf ab/scale-prepull-ref
mkdir -p ab/scale-prepull-ref
git archive "$prePull" packages/llcomm/kernels | tar -x -C ab/scale-prepull-ref
for v in "${!prePullVariants[@]}"; do
  make_tree "$v" ab/scale-prepull-ref/packages/llcomm/kernels "$prePull" ${prePullVariants[$v]}
done
rm -rf ab/scale-prepull-ref
for v in base batch spread; do
  make_tree "$v" ab/scale-ref/packages/llcomm/kernels "$ref" ${variants[$v]}
done
rm -rf ab/scale-ref
if [ "${AB_SKIP_NVCC:-0}" != 1 ] && command -v nvcc >/dev/null; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  bad=0
  for v in base batch spread merged "${!workingTreeVariants[@]}" "${!prePullVariants[@]}"; do
    for src in twoshot_sentinel twoshot_atomic oneshot_sentinel; do
      # as test/kernels/compile.test.ts: one 512-thread block per SM, so any spill is local-memory traffic
      log=$(nvcc -arch sm_90 -cubin -std=c++17 -Xptxas -v -I ab/scale-$v ab/scale-$v/allreduce/$src.cu -o "$tmp/$v-$src.cubin" 2>&1) || {
        echo "$log" >&2; echo "make-scale-trees: nvcc failed on ab/scale-$v/allreduce/$src.cu" >&2; exit 1; }
      if grep -qi warning <<<"$log"; then echo "$log" >&2; echo "make-scale-trees: nvcc warned on $v/$src" >&2; bad=1; fi
      spills=$(grep -E "spill" <<<"$log" | grep -vc " 0 bytes spill stores, 0 bytes spill loads" || true)
      regs=$(grep -oE "Used [0-9]+ registers" <<<"$log" | awk '{print $2}' | tr '\n' ' ')
      echo "  $v/$src.cu: registers ${regs}(bf16 f16 f32), kernels that spill: $spills"
      [ "$spills" = 0 ] || bad=1
    done
  done
  [ $bad = 0 ] || { echo "make-scale-trees: a variant spills or warns" >&2; exit 1; }
fi
