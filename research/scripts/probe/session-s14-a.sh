#!/usr/bin/env bash
# Issue 21, session 14 (2026-12-07): one script step for the device call after the merge of
# fused-patches/norm-unrolled.patch into the product kernels (the norm passes' inverse RMS with its shared loads
# unrolled; the split gather without a branch per load). The fused GPU test (node --test) runs as its own step of
# scripts/device-session.sh; this step adds what it does not:
#   1. compute-sanitizer racecheck and synccheck on the fused GPU test's reduced matrix (the merge reorders shared
#      loads in llcNormInverse and the split gather; gpu-test.sh runs the sanitizer on the AllReduce matrix only);
#   2. the fused kernel bench at 2 and 8 virtual ranks, hidden 4096 and 8192, batch 1-64 (issue 21, item 3).
# The GPU machine's command:
#   source .carry/activate && ln -sfn .devnm/node_modules node_modules && cp -a .devdist/. . && \
#     LLCOMM_COMMIT=<sha> LLCOMM_GPU_TESTS="fused fused-decode decode" LLCOMM_SKIP_SANITIZER=1 \
#     STEPS="gpu-test script:research/scripts/probe/session-s14-a.sh launch-overhead decode" bash scripts/device-session.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
out=${OUT:-/tmp/llcomm-s14-a}
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0 LLCOMM_TEST_BACKEND=cuda # the GPU tests skip without it (gpu-test.sh sets it too)
export LLCOMM_CACHE_DIR=${LLCOMM_CACHE_DIR:-/tmp/llcomm-cache}
for tool in ${SAN_TOOLS:-racecheck synccheck}; do
  LLCOMM_GPU_NO_NCCL=1 LLCOMM_GPU_REDUCED=1 LLCOMM_GPU_RESULTS="$out/sanitizer-$tool.jsonl" \
    LLCOMM_GPU_CASE_PREFIX=sanitizer-$tool timeout "${SAN_LIMIT_S:-150}" \
    compute-sanitizer --tool "$tool" --error-exitcode 9 --target-processes all \
    node packages/llcomm/dist/test/gpu/fused.test.js > "$out/sanitizer-$tool.log" 2>&1
  rc=$?
  cases=$(grep -c '"passed":true' "$out/sanitizer-$tool.jsonl" 2>/dev/null)
  failed=$(grep -c '"passed":false' "$out/sanitizer-$tool.jsonl" 2>/dev/null)
  echo "sanitizer $tool: rc $rc, cases passed ${cases:-0}, failed ${failed:-0}; $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$out/sanitizer-$tool.log" | tail -n 1)"
done
[ "${SKIP_BENCH:-0}" = 1 ] && exit 0
timeout "${BENCH_LIMIT_S:-180}" node scripts/bench-fused.mjs --ranks 2,8 --hidden 4096,8192 --batch 1,2,4,8,16,32,64 \
  --dtype bf16 --out "$out/bench-fused-bf16-v2-8.json" > "$out/bench-fused.log" 2>&1
echo "bench-fused rc $?"
grep -v "^#" "$out/bench-fused.log" | tail -n 40
