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
grep -q 'define LLCOMM_SIG_BLOCK 1' packages/llcomm/kernels/llcomm/abi.cuh || { echo "the patch is not applied"; exit 2; }
source research/scripts/probe/signature-round11-lib.sh
sig11_init /tmp/llcomm-s20-a nosig ctrl inblk pubonly xblk
sig11_ab "nosig ctrl sig inblk pubonly xblk"
t0=$SECONDS
OUT="$out/gpu" LLCOMM_GPU_TESTS="signature multiprocess-signature multiprocess correctness back-to-back public-api" \
  LLCOMM_SANITIZER_TOOLS=racecheck LLCOMM_GPU_TEST_TIMEOUT_S=260 timeout 330 bash scripts/gpu-test.sh > "$out/gpu-test-run.txt" 2>&1
echo "gpu tests: rc $?, $((SECONDS - t0)) s" | tee -a "$out/summary.txt"
tail -12 "$out/gpu-test-run.txt"
sig11_finish
