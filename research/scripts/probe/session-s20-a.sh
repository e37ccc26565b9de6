#!/usr/bin/env bash
# Issue 18, for the session after session-s19-b.sh, only if round 11 won there (research/notes/signature-cost.md,
# "If round 11 wins": sigblk median <= pubonly + 0.01, no case more than 0.02 above sig's, its GPU signature test
# passing). Prepared 2026-12-07 (session 19) without a GPU. Before bundling, here:
#   git apply research/scripts/probe/signature-patches/round11-sigblock-default.patch && npx tsc -b &&
#   CI=true bash .ci/run (fresh clone) && bash research/scripts/probe/make-signature-trees.sh &&
#   bash scripts/device-bundle.sh        (carry "ab": nosig ctrl inblk pubonly xblk are used)
# On the GPU: the product with the signature block as the default build.
# 1. The A/B: sig (the product: the block) against nosig (no check, no block), inblk (the in-block check, the product
#    before), pubonly, xblk; 8 B / 8 KB / 64 KB, bf16 and f32, 2 and 8 virtual ranks, 3 rounds: the issue's ratio.
# 2. The GPU tests that the signature touches: signature (mismatch matrix, determinism, f32 accumulation),
#    multiprocess-signature, multiprocess, correctness, back-to-back, public-api; racecheck on the reduced matrix.
# Predictions: sig as sigblk in session-s19-b.sh within 0.01 (the same kernels, now the default); inblk as the old
#   sig (1.03-1.05); every GPU test passes (multiprocess-signature: detectedBy device on every rank).
set -uo pipefail
cd "$(dirname "$0")/../../.."
out=${OUT:-/tmp/llcomm-s20-a}
mkdir -p "$out"
export LLCOMM_CACHE_DIR=${LLCOMM_CACHE_DIR:-/tmp/llcomm-cache} NCCL_NVLS_ENABLE=0
grep -q 'define LLCOMM_SIG_BLOCK 1' packages/llcomm/kernels/llcomm/abi.cuh || { echo "the patch is not applied"; exit 2; }
for t in nosig ctrl inblk pubonly xblk; do test -d "ab/$t" || { echo "ab/$t missing"; exit 2; }; done
t0=$SECONDS
AB_VARIANTS="nosig ctrl sig inblk pubonly xblk" AB_SIZES=8,8K,64K AB_BUDGET_S=100 OUT="$out/sigab" \
  timeout 240 bash research/scripts/probe/signature-ab.sh > "$out/signature-ab.txt" 2>&1
echo "signature A/B: rc $?, $((SECONDS - t0)) s, WRONG rows: $(grep -c WRONG "$out/sigab/ab-tables.log")" | tee "$out/summary.txt"
t0=$SECONDS
OUT="$out/gpu" LLCOMM_GPU_TESTS="signature multiprocess-signature multiprocess correctness back-to-back public-api" \
  LLCOMM_SANITIZER_TOOLS=racecheck LLCOMM_GPU_TEST_TIMEOUT_S=260 timeout 330 bash scripts/gpu-test.sh > "$out/gpu-test-run.txt" 2>&1
echo "gpu tests: rc $?, $((SECONDS - t0)) s" | tee -a "$out/summary.txt"
tar czf "$out/sigab.tgz" -C "$out" sigab && rm -rf "$out/sigab"
sed -n '/^call signature/,$p' "$out/signature-ab.txt"
tail -12 "$out/gpu-test-run.txt"
cat "$out/summary.txt"
