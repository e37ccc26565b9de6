#!/usr/bin/env bash
# One device call for the split-late and split-push candidates (research/notes/fused-probes.md, "split-late and
# split-push"), in priority order so that a time limit cuts the last:
#   1. the fused GPU test (packages/llcomm/dist/test/gpu/fused.test.js: every fused kernel against the unfused
#      composition, bitwise) on the most promising tree, split-push (LLCOMM_KERNELS_DIR=ab/fused-split-push; ~50 s);
#   2. the interleaved A/B, ab/fused-base, -split-early, -split-late, -split-push, AB_ROUNDS rounds (default 3) of
#      scripts/bench-fused.mjs --ranks 8 --hidden 4096,8192 --batch 1,2,4,8,16 (research/scripts/probe/fused-ab.sh),
#      no round starting after 400 s from the start (AB_DEADLINE) and the whole call cut at 480 s, so the medians
#      print (a round after round 1 is 4 bench runs of ~3-6 s each with the NVRTC caches warm).
# Budget: the first round of each tree compiles its kernels (NVRTC, one cache per tree); the note's estimate is
# ~2.5 s per tree-round at batch 1-8 plus batch 16 (two launches at 8192) plus node start and compile, so 3 rounds of
# 4 trees should end well inside 480 s; the deadline guards the rest.
# Needs ab/fused-base, ab/fused-split-early, ab/fused-split-late, ab/fused-split-push
# (`bash research/scripts/probe/make-fused-trees.sh split-early split-late split-push` here before the call: they
# travel with the working tree). Every output is in $OUT.
set -uo pipefail
cd "$(dirname "$0")/../../.."
out=${OUT:-/tmp/llcomm-session-fused-s4}
mkdir -p "$out"
t0=$(date +%s)
gpuTree=${GPU_TREE:-split-push}
mkdir -p "$out/1-gpu-fused" && OUT=$out/1-gpu-fused LLCOMM_KERNELS_DIR=$(realpath ab/fused-$gpuTree) \
  LLCOMM_CACHE_DIR=/tmp/llcomm-cache-fused-push LLCOMM_SKIP_SANITIZER=1 LLCOMM_GPU_TESTS="fused" \
  timeout 150 bash scripts/gpu-test.sh > "$out/1-gpu-fused.log" 2>&1
echo "== 1 ($gpuTree) exit $?"
tail -8 "$out/1-gpu-fused.log"
echo "== 1 done at $(( $(date +%s) - t0 )) s"
AB_DEADLINE=$(( t0 + 400 )) OUT=$out timeout $(( 480 - ($(date +%s) - t0) )) \
  bash research/scripts/probe/fused-ab.sh "${AB_ROUNDS:-3}" \
  base=ab/fused-base early=ab/fused-split-early late=ab/fused-split-late push=ab/fused-split-push -- \
  --ranks 8 --hidden 4096,8192 --batch 1,2,4,8,16 > "$out/2-fused-ab.log" 2>&1
tail -14 "$out/2-fused-ab.log"
echo "== 2 done at $(( $(date +%s) - t0 )) s"
