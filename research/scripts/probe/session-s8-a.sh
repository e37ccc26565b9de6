#!/usr/bin/env bash
# One device step (2026-12-02, session 8): the signature A/B of round 8 (ab/dlate: the deferred check's verdict
# branch-free, its slow path after the kernel's last __syncthreads; research/notes/signature-cost.md, round 8) against
# nosig / ctrl / sig / pubonly / defer / dnocmp, on the four barrier-free and barrier algorithms at 8 B, 8 KB and
# 64 KB (issue 18's closing table), then the GPU tests of the dlate build (LLCOMM_SIG_DEFERRED=1 turns on the host's
# check of the last launch; LLCOMM_KERNELS_DIR=ab/dlate): correctness, signature, multiprocess-signature,
# back-to-back, graph-replay.
set -uo pipefail
cd "$(dirname "$0")/../../.."
out=${OUT:-/tmp/llcomm-s8-a}
mkdir -p "$out"
OUT=$out/sig AB_VARIANTS="nosig ctrl sig pubonly defer dnocmp dlate" AB_SIZES=8,8K,64K \
  AB_ALGORITHMS=oneshot-ll,twoshot-sentinel,oneshot-sentinel,oneshot-barrier AB_BUDGET_S=${AB_BUDGET_S:-200} \
  bash research/scripts/probe/signature-ab.sh > "$out/signature-ab.log" 2>&1
echo "signature A/B: rc $?"
OUT=$out/gpu-dlate LLCOMM_SIG_DEFERRED=1 LLCOMM_KERNELS_DIR=$(realpath ab/dlate) \
  LLCOMM_GPU_TESTS="${DLATE_TESTS:-correctness signature multiprocess-signature back-to-back public-api}" \
  LLCOMM_SKIP_SANITIZER=1 LLCOMM_GPU_TEST_TIMEOUT_S=${DLATE_TEST_S:-240} bash scripts/gpu-test.sh > "$out/gpu-dlate.log" 2>&1
echo "dlate-build GPU tests: rc $?"
cp "$out"/gpu-dlate/gpu-test-*.json.gz "$out/" 2>/dev/null
echo "== dlate-build GPU tests"; tail -n 12 "$out/gpu-dlate.log"
echo "== signature A/B"; sed -n '/call signature:/,$p' "$out/signature-ab.log" | tail -n 80
