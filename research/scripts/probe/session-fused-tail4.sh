#!/usr/bin/env bash
# Fourth device call of session 12 (2026-12-04) on issue 21. Call 3 (session-fused-tail3.sh): the split kernel's
# early input load alone (t3ei) -0.1..-0.17 us at batch 1-4 with no loss at 8-16 (now in the working tree); the
# two-shot's early input loads +0.15..+0.3 (dropped; the working tree keeps its row cache). The timeline put the
# split tail at ~1.9 us (4096 x 1: barrier 0.45, DSMEM gather 0.54, total 0.16, arrive 0.23, output 0.41) and the
# norm passes' inverse RMS at ~0.6 us.
# Trees (`bash research/scripts/probe/session-fused-tail4.sh make` here, from fused-patches/):
#   ab/base = HEAD's kernels; ab/wt = the working tree's; ab/pre = wt + split-outprefetch.patch (the split output
#   pass's first item, residual and weights, loaded after the first cluster barrier, before the gather); ab/warm = wt
#   + warm-tail-params.patch (p.out[me] and p.weight[me], rank-indexed kernel parameters first read in the tail,
#   read at the kernel's start so that their constant-cache lines are there: split, two-shot, one-shot and the
#   RMSNorm kernel); ab/prewarm = both; ab/timeline = prewarm with the timeline probe.
# Steps: 1. fused GPU test on ab/prewarm; 2. 3 interleaved A/B rounds (8 and 16 virtual ranks, bf16, hidden 4096 /
# 8192, batch 1, 2, 4, 8, 16); 3. the timeline at 8 ranks on ab/timeline; tables last.
# Prediction (before the run): pre -0.2..-0.35 us on split at batch 1-8 (the output's round trip behind the gather);
# warm: if the tails' rank-indexed parameter reads miss the constant cache, -0.1..-0.4 on every fused kernel and on
# RMSNorm alone; if they do not (as the prologue's warmparams found for the AllReduce kernels), nothing.
set -uo pipefail
cd "$(dirname "$0")/../../.."
pd=research/scripts/probe/fused-patches
if [ "${1:-}" = make ]; then
  rm -rf ab/* && mkdir -p ab
  tmp=$(mktemp -d) && git archive HEAD packages/llcomm/kernels | tar -x -C "$tmp" && mv "$tmp/packages/llcomm/kernels" ab/base && rm -rf "$tmp"
  for t in wt pre warm prewarm; do cp -a packages/llcomm/kernels ab/$t; done
  (cd ab/pre && patch -p1 -s < ../../$pd/split-outprefetch.patch) || exit 1
  (cd ab/warm && patch -p1 -s < ../../$pd/warm-tail-params.patch) || exit 1
  (cd ab/prewarm && patch -p1 -s < ../../$pd/split-outprefetch.patch && patch -p1 -s < ../../$pd/warm-tail-params.patch) || exit 1
  python3 research/scripts/probe/timeline-tree.py ab/prewarm ab/timeline
  for t in wt pre warm prewarm timeline; do
    for f in fused_rmsnorm_twoshot fused_rmsnorm_split rmsnorm; do
      nvcc -arch=sm_90 -cubin -std=c++17 -I ab/$t ab/$t/allreduce/$f.cu -o /tmp/$t-$f.cubin -Xptxas -v 2>&1 |
        grep -E 'spill' | sort | uniq -c | sed "s|^|$t $f: |"
    done
  done
  exit 0
fi
out=${OUT:-/tmp/llcomm-fused-tail4}
mkdir -p "$out/ab"
t0=$(date +%s)
export NCCL_NVLS_ENABLE=0
mkdir -p "$out/gpu" && OUT=$out/gpu LLCOMM_KERNELS_DIR=$(realpath ab/prewarm) LLCOMM_CACHE_DIR=/tmp/llcomm-cache-prewarm \
  LLCOMM_SKIP_SANITIZER=1 LLCOMM_GPU_TESTS="fused" timeout 150 bash scripts/gpu-test.sh > "$out/1-gpu-fused.log" 2>&1
echo "== 1 fused GPU test on ab/prewarm: exit $? at $(( $(date +%s) - t0 )) s"
tail -6 "$out/1-gpu-fused.log"
for ((r = 1; r <= ${AB_ROUNDS:-3}; r++)); do
  if [ "$(( $(date +%s) - t0 ))" -ge 360 ]; then echo "round $r and later: past 360 s, skipped"; break; fi
  for v in base wt pre warm prewarm; do
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
node research/scripts/probe/fused-ab-table.mjs "$out/ab" base wt pre warm prewarm | tee "$out/table.txt"
