#!/usr/bin/env bash
# The session's last device step (scripts/device-session.sh step script:research/scripts/probe/session-final.sh), in
# priority order so that a time limit cuts the last:
#   1. the per-process GPU tests on the product kernels (multiprocess, multiprocess-signature): the per-process
#      eager deviceAllReduce now goes through the shared eager-call cache;
#   2. the A/B of twoshot-sentinel's spread path: ab/scale-merged (the product) against ab/scale-spread2 (the candidate
#      patch), 16/32/64 virtual ranks, 8 KB / 64 KB (research/scripts/probe/scale-ab.sh, AB_BUDGET_S 45);
#   3. the correctness and signature GPU tests on the candidate's kernels (LLCOMM_KERNELS_DIR=ab/scale-spread2);
#   4. the launch-overhead comparison, 4 repetitions (with the bare koffi row).
# Needs ab/scale-merged and ab/scale-spread2 (research/scripts/probe/make-scale-trees.sh here before the call).
# Every output is in $OUT (session-logs.tgz brings it back).
set -uo pipefail
cd "$(dirname "$0")/../../.."
out=${OUT:-/tmp/llcomm-session-final}
mkdir -p "$out"
t0=$(date +%s)
mkdir -p "$out/1-product" && OUT=$out/1-product LLCOMM_SKIP_SANITIZER=1 LLCOMM_GPU_TESTS="multiprocess multiprocess-signature" \
  timeout 170 bash scripts/gpu-test.sh > "$out/1-product.log" 2>&1
tail -6 "$out/1-product.log"
echo "== 1 done at $(( $(date +%s) - t0 )) s"
OUT=$out/ab AB_TREES="merged spread2" AB_BUDGET_S=45 timeout 100 bash research/scripts/probe/scale-ab.sh > "$out/2-scale-ab.log" 2>&1
tail -22 "$out/2-scale-ab.log"
echo "== 2 done at $(( $(date +%s) - t0 )) s"
mkdir -p "$out/3-spread2" && OUT=$out/3-spread2 LLCOMM_KERNELS_DIR=$(realpath ab/scale-spread2) LLCOMM_SKIP_SANITIZER=1 \
  LLCOMM_GPU_TESTS="correctness signature" timeout 200 bash scripts/gpu-test.sh > "$out/3-spread2.log" 2>&1
tail -12 "$out/3-spread2.log"
echo "== 3 done at $(( $(date +%s) - t0 )) s"
mkdir -p "$out/4-launch" && OUT=$out/4-launch timeout 90 bash scripts/launch-overhead/run.sh --reps 4 > "$out/4-launch.log" 2>&1
tail -20 "$out/4-launch.log"
echo "== 4 done at $(( $(date +%s) - t0 )) s"
