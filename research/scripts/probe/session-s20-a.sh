#!/usr/bin/env bash
# Issue 18, the GPU step left after session 20 (research/notes/signature-cost.md, "After, round 11"): the signature
# block is the default build since 3a9cbf4. Before bundling, here:
#   bash research/scripts/probe/make-signature-trees.sh && (cd ab && rm -rf r1 noarm publow r2 tail defer nowait \
#   dnoload dnocmp sigblk) && npx tsc -b && bash scripts/device-bundle.sh   (carry "ab": nosig ctrl inblk pubonly xblk)
# 1. The A/B on the product tree: sig (now the block) against nosig (no check, no block), inblk (the in-block check,
#    the product before), pubonly, xblk; 8 B / 8 KB / 64 KB, bf16 and f32, 2 and 8 virtual ranks, 3 rounds: the
#    issue's ratio on the product commit itself.
# 2. The whole of signature.test.js (mismatch matrix, determinism, f32 accumulation: ~40 s on the H200 runs; session
#    20's run on ab/sigblk was cut in its determinism test) and multiprocess-signature, on the product build.
# Predictions: sig as sigblk in session-s20-b.sh (1.008 median, max 1.031) within 0.01 (the same PTX); inblk as the
#   old sig (1.04-1.05); every GPU case passes (multiprocess-signature: MISMATCH on every rank).
set -uo pipefail
cd "$(dirname "$0")/../../.."
grep -q 'define LLCOMM_SIG_BLOCK 1' packages/llcomm/kernels/llcomm/abi.cuh || { echo "abi.cuh does not make the signature block the default (3a9cbf4)"; exit 2; }
source research/scripts/probe/signature-round11-lib.sh
sig11_init /tmp/llcomm-s20-a nosig ctrl inblk pubonly xblk
sig11_ab "nosig ctrl sig inblk pubonly xblk"
t0=$SECONDS
OUT="$out/gpu" LLCOMM_GPU_TESTS="signature multiprocess-signature" LLCOMM_SKIP_SANITIZER=1 \
  LLCOMM_GPU_TEST_TIMEOUT_S=180 timeout 195 bash scripts/gpu-test.sh > "$out/gpu-test-run.txt" 2>&1
echo "gpu tests: rc $?, $((SECONDS - t0)) s" | tee -a "$out/summary.txt"
tail -12 "$out/gpu-test-run.txt"
sig11_finish
