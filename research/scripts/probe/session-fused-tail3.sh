#!/usr/bin/env bash
# Third device call of session 12 (2026-12-04) on issue 21. The second (session-fused-tail2.sh) showed, with the
# kernel timeline at 8 virtual ranks, that the fused kernels' first send comes 1.2-1.6 us after their entry (the
# epoch load, then the input load, one after the other), and that the norm tails take 1.0-1.4 us; the batched sum
# loops (llcSumInOrder) made the RMSNorm kernel slower (2.62 -> 2.65 us at 4096, 4.29 -> 4.40 at 8192 x 16): dropped.
# Trees (`bash research/scripts/probe/session-fused-tail3.sh make` here): ab/base = HEAD's kernels; ab/t3 = the
# working tree's (the two-shot's row cache + its first input batch and own word loaded before the epoch, as
# twoshot_sentinel.cu); ab/t3ei = t3 + split-early.patch with its shared-memory stage off (only the early input load
# of the split kernel: its static shared memory stays 18.7 KB); ab/t3se = t3 + the whole split-early.patch;
# ab/timeline = t3ei with the kernel-timeline probe and the finer norm marks (timeline-tree.py).
# Steps: 1. fused GPU test on ab/t3ei; 2. 3 interleaved A/B rounds (8 and 16 virtual ranks, bf16, hidden 4096 /
# 8192, batch 1, 2, 4, 8, 16); 3. the kernel timeline at 8 ranks on ab/timeline; tables last.
# Prediction (before the run): two-shot -0.3..-0.5 us at every shape (one round trip before the first send);
# split with the early input only -0.2..-0.35 at batch 1-2 (split-early's gain there was -0.26..-0.32) and no loss at
# batch 4-8 (if the loss was the 43 KB of shared memory); t3se as split-early before.
set -uo pipefail
cd "$(dirname "$0")/../../.."
if [ "${1:-}" = make ]; then
  rm -rf ab/* && mkdir -p ab
  tmp=$(mktemp -d) && git archive HEAD packages/llcomm/kernels | tar -x -C "$tmp" && mv "$tmp/packages/llcomm/kernels" ab/base && rm -rf "$tmp"
  for t in t3 t3ei t3se; do cp -a packages/llcomm/kernels ab/$t; done
  for t in t3ei t3se; do (cd ab/$t && patch -p1 -s < ../../research/scripts/probe/fused-patches/split-early.patch) || exit 1; done
  python3 - ab/t3ei/llcomm/fused_split.cuh <<'PY'
import sys
p = sys.argv[1]
s = open(p).read()
old = 'constexpr bool kEarlyStage = kPk == 1u && (kProbe & LLC_SPLIT_PROBE_XCHG_ONLY) == 0;'
assert s.count(old) == 1
open(p, 'w').write(s.replace(old, 'constexpr bool kEarlyStage = false && kPk == 1u; // t3ei: the early input load only'))
PY
  python3 research/scripts/probe/timeline-tree.py ab/t3ei ab/timeline
  for t in base t3 t3ei t3se timeline; do
    for f in fused_rmsnorm_twoshot fused_rmsnorm_split; do
      nvcc -arch=sm_90 -cubin -std=c++17 -I ab/$t ab/$t/allreduce/$f.cu -o /tmp/$t-$f.cubin -Xptxas -v 2>&1 |
        grep -E 'spill' | sort | uniq -c | sed "s|^|$t $f: |"
    done
  done
  exit 0
fi
out=${OUT:-/tmp/llcomm-fused-tail3}
mkdir -p "$out/ab"
t0=$(date +%s)
export NCCL_NVLS_ENABLE=0
mkdir -p "$out/gpu" && OUT=$out/gpu LLCOMM_KERNELS_DIR=$(realpath ab/t3ei) LLCOMM_CACHE_DIR=/tmp/llcomm-cache-t3ei \
  LLCOMM_SKIP_SANITIZER=1 LLCOMM_GPU_TESTS="fused" timeout 150 bash scripts/gpu-test.sh > "$out/1-gpu-fused.log" 2>&1
echo "== 1 fused GPU test on ab/t3ei: exit $? at $(( $(date +%s) - t0 )) s"
tail -6 "$out/1-gpu-fused.log"
for ((r = 1; r <= ${AB_ROUNDS:-3}; r++)); do
  if [ "$(( $(date +%s) - t0 ))" -ge 360 ]; then echo "round $r and later: past 360 s, skipped"; break; fi
  for v in base t3 t3ei t3se; do
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
node research/scripts/probe/fused-ab-table.mjs "$out/ab" base t3 t3ei t3se | tee "$out/table.txt"
