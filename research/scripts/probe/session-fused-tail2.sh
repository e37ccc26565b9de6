#!/usr/bin/env bash
# Second device call of session 12 (2026-12-04) on issue 21. The first (session-fused-tail.sh) measured the fused
# two-shot's row cache: -0.1..-0.2 us at batch 16 (predicted -0.5..-1.1), +0.14 at batch 1; split-early -0.26..-0.32
# at batch 1, +0.4..+0.7 at batch 4-8. This one adds llcomm/rmsnorm.cuh llcSumInOrder (the level-1 sums and the
# total of every norm with their shared loads issued 8 at a time: the PTX had a rolled loop of a load and its
# dependent add, 15 + 31 terms) to every kernel that normalizes, the reference RMSNorm kernel included.
# Trees (`bash research/scripts/probe/session-fused-tail2.sh make` here): ab/base = HEAD's kernels, ab/tail2 = the
# working tree's, ab/tail2se = + fused-patches/split-early.patch, ab/timeline = the working tree's with the
# kernel-timeline probe (timeline-tree.py).
# Steps: 1. fused GPU test on ab/tail2se; 2. 3 interleaved A/B rounds (8 and 16 virtual ranks, bf16, hidden 4096 /
# 8192, batch 1, 2, 4, 8, 16); 3. the kernel timeline (fused-timeline.mjs) at 8 ranks on ab/timeline; tables last.
# Prediction (before the run): the sum loops -0.2..-0.4 us on every fused kernel that normalizes in a block
# (one-shot, two-shot) and on the RMSNorm kernel (so unfused too), about -0.1 on split (its total only).
set -uo pipefail
cd "$(dirname "$0")/../../.."
if [ "${1:-}" = make ]; then
  rm -rf ab/base ab/tail ab/tailse ab/tail2 ab/tail2se ab/timeline && mkdir -p ab
  tmp=$(mktemp -d) && git archive HEAD packages/llcomm/kernels | tar -x -C "$tmp" && mv "$tmp/packages/llcomm/kernels" ab/base && rm -rf "$tmp"
  cp -a packages/llcomm/kernels ab/tail2 && cp -a packages/llcomm/kernels ab/tail2se
  (cd ab/tail2se && patch -p1 -s < ../../research/scripts/probe/fused-patches/split-early.patch) || exit 1
  python3 research/scripts/probe/timeline-tree.py packages/llcomm/kernels ab/timeline
  exit 0
fi
out=${OUT:-/tmp/llcomm-fused-tail2}
mkdir -p "$out/ab"
t0=$(date +%s)
export NCCL_NVLS_ENABLE=0
mkdir -p "$out/gpu" && OUT=$out/gpu LLCOMM_KERNELS_DIR=$(realpath ab/tail2se) LLCOMM_CACHE_DIR=/tmp/llcomm-cache-tail2se \
  LLCOMM_SKIP_SANITIZER=1 LLCOMM_GPU_TESTS="fused" timeout 150 bash scripts/gpu-test.sh > "$out/1-gpu-fused.log" 2>&1
echo "== 1 fused GPU test on ab/tail2se: exit $? at $(( $(date +%s) - t0 )) s"
tail -6 "$out/1-gpu-fused.log"
for ((r = 1; r <= ${AB_ROUNDS:-3}; r++)); do
  if [ "$(( $(date +%s) - t0 ))" -ge 360 ]; then echo "round $r and later: past 360 s, skipped"; break; fi
  for v in base tail2 tail2se; do
    s=$(date +%s)
    LLCOMM_KERNELS_DIR=$(realpath ab/$v) LLCOMM_CACHE_DIR=/tmp/llcomm-cache-$v timeout 200 node scripts/bench-fused.mjs \
      --ranks 8,16 --hidden 4096,8192 --batch 1,2,4,8,16 --dtype bf16 --out "$out/ab/$v-r$r.json" > "$out/ab/$v-r$r.log" 2>&1
    echo "$v round $r: rc $? $(( $(date +%s) - s )) s"
  done
done
s=$(date +%s)
LLCOMM_KERNELS_DIR=$(realpath ab/timeline) LLCOMM_CACHE_DIR=/tmp/llcomm-cache-timeline timeout 150 node \
  research/scripts/probe/fused-timeline.mjs --ranks 8 --shapes 4096x1,4096x4,4096x16,8192x1,8192x16 \
  --json "$out/timeline-v8.json" > "$out/timeline-v8.log" 2>&1
echo "== 3 timeline: rc $? $(( $(date +%s) - s )) s"
cat "$out/timeline-v8.log"
node research/scripts/probe/fused-ab-table.mjs "$out/ab" base tail2 tail2se | tee "$out/table.txt"
