#!/usr/bin/env bash
# One device call for the split-early candidate (research/notes/fused-probes.md, "split-early"), in priority order so
# that a time limit cuts the last:
#   1. the fused GPU test (packages/llcomm/dist/test/gpu/fused.test.js: every fused kernel against the unfused
#      composition, bitwise) on the candidate's kernels (LLCOMM_KERNELS_DIR=ab/fused-split-early);
#   2. the interleaved A/B, ab/fused-base against ab/fused-split-early, AB_ROUNDS rounds (default 3) of
#      scripts/bench-fused.mjs --ranks 8 --hidden 4096,8192 --batch 1,2,4,8 (research/scripts/probe/fused-ab.sh).
# Needs ab/fused-base and ab/fused-split-early (research/scripts/probe/make-fused-trees.sh here before the call:
# they travel with the working tree). Every output is in $OUT.
set -uo pipefail
cd "$(dirname "$0")/../../.."
out=${OUT:-/tmp/llcomm-session-fused-early}
mkdir -p "$out"
t0=$(date +%s)
mkdir -p "$out/1-gpu-fused" && OUT=$out/1-gpu-fused LLCOMM_KERNELS_DIR=$(realpath ab/fused-split-early) \
  LLCOMM_CACHE_DIR=/tmp/llcomm-cache-fused-early LLCOMM_SKIP_SANITIZER=1 LLCOMM_GPU_TESTS="fused" \
  timeout 200 bash scripts/gpu-test.sh > "$out/1-gpu-fused.log" 2>&1
tail -8 "$out/1-gpu-fused.log"
echo "== 1 done at $(( $(date +%s) - t0 )) s"
OUT=$out timeout $(( 560 - ($(date +%s) - t0) )) bash research/scripts/probe/fused-ab.sh "${AB_ROUNDS:-3}" \
  base=ab/fused-base early=ab/fused-split-early -- --ranks 8 --hidden 4096,8192 --batch 1,2,4,8 \
  > "$out/2-fused-ab.log" 2>&1
tail -12 "$out/2-fused-ab.log"
echo "== 2 done at $(( $(date +%s) - t0 )) s"
