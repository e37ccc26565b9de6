#!/usr/bin/env bash
# One device step (2026-12-02, session 5, after merging s5-pullsplit and s5-sigdefer): the signature A/B of round 4
# (the deferred check, ab/defer, against nosig / ctrl / sig / pubonly: research/notes/signature-cost.md), then the GPU
# tests of the deferred build (LLCOMM_SIG_DEFERRED=1: correctness, signature, multiprocess-signature, back-to-back,
# fused). The default build's GPU tests are the session's gpu-test step.
set -uo pipefail
cd "$(dirname "$0")/../../.."
out=${OUT:-/tmp/llcomm-s5-a}
mkdir -p "$out"
OUT=$out/sig AB_VARIANTS="nosig ctrl sig defer pubonly" AB_BUDGET_S=45 bash research/scripts/probe/signature-ab.sh > "$out/signature-ab.log" 2>&1
echo "signature A/B: rc $?"
OUT=$out/gpu-defer LLCOMM_SIG_DEFERRED=1 LLCOMM_GPU_TESTS="correctness signature multiprocess-signature back-to-back fused" \
  LLCOMM_SKIP_SANITIZER=1 LLCOMM_GPU_TEST_TIMEOUT_S=230 bash scripts/gpu-test.sh > "$out/gpu-defer.log" 2>&1
echo "deferred-build GPU tests: rc $?"
cp "$out"/gpu-defer/gpu-test-*.json.gz "$out/" 2>/dev/null
echo "== deferred-build GPU tests"; tail -n 12 "$out/gpu-defer.log"
echo "== signature A/B"; sed -n '/call signature:/,$p' "$out/signature-ab.log"
