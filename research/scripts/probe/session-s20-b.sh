#!/usr/bin/env bash
# Issue 18, session 20 (2026-12-07): session 19's A/B of round 11 (research/notes/signature-cost.md; its
# session-s19-b.sh never ran, this script replaced it) and, in the same device call, the GPU tests the signature
# touches on the candidate's build, so that one call can decide the flip (device starts fail often; a second call
# may not come). Before bundling, here:
# bash research/scripts/probe/make-signature-trees.sh (ab/nosig, ab/ctrl, ab/pubonly, ab/sigblk, ab/xblk are used).
# 1. The A/B as planned in session 19 (its predictions stand: sigblk median 1.00-1.02, max <= 1.05; xblk 1.00-1.01; sig
#    1.03-1.05; pubonly ~1.01).
# 2. scripts/gpu-test.sh on ab/sigblk with the host's LLCOMM_SIG_BLOCK=1: the build that the flip patch
#    (signature-patches/round11-sigblock-default.patch) makes the default, whose kernel change is only to define
#    LLCOMM_SIG_BLOCK when nothing else is asked for, and whose host change is only SIGNATURE_BLOCK's default. Tests:
#    signature (mismatch matrix, determinism, f32 accumulation), multiprocess-signature, multiprocess, correctness,
#    back-to-back, public-api; racecheck on the reduced correctness matrix. Prediction: every case passes
#    (multiprocess-signature: detected on the device by every rank).
set -uo pipefail
cd "$(dirname "$0")/../../.."
source research/scripts/probe/signature-round11-lib.sh
sig11_init /tmp/llcomm-s20-b nosig ctrl pubonly sigblk xblk
sig11_ab "nosig ctrl sig pubonly sigblk xblk"
t0=$SECONDS
OUT="$out/gpu" LLCOMM_SIG_BLOCK=1 LLCOMM_KERNELS_DIR=$(realpath ab/sigblk) \
  LLCOMM_GPU_TESTS="signature multiprocess-signature multiprocess correctness back-to-back public-api" \
  LLCOMM_SANITIZER_TOOLS=racecheck LLCOMM_GPU_TEST_TIMEOUT_S=210 LLCOMM_SANITIZER_TIMEOUT_S=70 \
  timeout 300 bash scripts/gpu-test.sh > "$out/gpu-test-run.txt" 2>&1
echo "gpu tests on ab/sigblk (LLCOMM_SIG_BLOCK=1): rc $?, $((SECONDS - t0)) s" | tee -a "$out/summary.txt"
tail -12 "$out/gpu-test-run.txt"
sig11_finish
