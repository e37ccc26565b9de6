#!/usr/bin/env bash
# One device call (2026-12-02, fourth session): the two ready candidates, in priority order so that a time limit
# cuts the last. Trees made here first: research/scripts/probe/make-fused-trees.sh and make-scale-trees.sh
# (ab/fused-base, ab/fused-split-early, ab/scale-merged, ab/scale-serialbatch).
#   1. the fused GPU test on ab/fused-split-early (every fused kernel against the unfused composition, bitwise);
#   2. fused A/B, base against split-early, 3 interleaved rounds, 8 ranks, hidden 4096/8192, batch 1-8;
#   3. scale A/B, merged against serialbatch, 8 ranks, 256 KB and 1 MB, the default 1 MB buffer;
#   4. the same at 1 MB with a 4 MB buffer (1 MB in one launch).
set -uo pipefail
cd "$(dirname "$0")/../../.."
out=${OUT:-/tmp/llcomm-s4-first}
mkdir -p "$out"
t0=$(date +%s)
since() { echo "$(( $(date +%s) - t0 ))"; }
mkdir -p "$out/1-gpu-fused" && OUT=$out/1-gpu-fused LLCOMM_KERNELS_DIR=$(realpath ab/fused-split-early) \
  LLCOMM_CACHE_DIR=/tmp/llcomm-cache-fused-early LLCOMM_SKIP_SANITIZER=1 LLCOMM_GPU_TESTS="fused" \
  timeout 150 bash scripts/gpu-test.sh > "$out/1-gpu-fused.log" 2>&1
echo "== 1 (fused GPU test, split-early) rc $? at $(since) s"; tail -4 "$out/1-gpu-fused.log"
OUT=$out timeout 200 bash research/scripts/probe/fused-ab.sh 3 base=ab/fused-base early=ab/fused-split-early -- \
  --ranks 8 --hidden 4096,8192 --batch 1,2,4,8 > "$out/2-fused-ab.log" 2>&1
echo "== 2 (fused A/B) rc $? at $(since) s"
OUT=$out/3 AB_TREES="merged serialbatch" AB_RANKS=8 AB_SIZES=256K,1M AB_BUDGET_S=70 \
  timeout 110 bash research/scripts/probe/scale-ab.sh > "$out/3-scale-ab.log" 2>&1
echo "== 3 (scale A/B, 1 MB buffer) rc $? at $(since) s"
left=$(( 520 - $(since) ))
if [ "$left" -gt 40 ]; then
  OUT=$out/4 AB_TREES="merged serialbatch" AB_RANKS=8 AB_SIZES=256K,1M AB_BUFFER_BYTES=4M AB_BUDGET_S=$(( left - 30 )) \
    timeout "$left" bash research/scripts/probe/scale-ab.sh > "$out/4-scale-ab-bb4M.log" 2>&1
  echo "== 4 (scale A/B, 4 MB buffer) rc $? at $(since) s"
fi
echo "======== fused A/B"; tail -14 "$out/2-fused-ab.log"
echo "======== scale A/B, 1 MB buffer"; tail -10 "$out/3-scale-ab.log"
echo "======== scale A/B, 4 MB buffer"; tail -10 "$out/4-scale-ab-bb4M.log" 2>/dev/null
