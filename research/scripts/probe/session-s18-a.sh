#!/usr/bin/env bash
# Issue 21, prepared in session 17 for the next session's first GPU call (2026-12-07).
# 1. The fused GPU test as refactored at a01d1f8 (gpuCase / forEachRankCount / fusedAgainstUnfused), not yet run on a
#    GPU: every test of packages/llcomm/test/gpu/fused.test.ts, the adversarial one included.
# 2. The codegen lead of session 17 (research/notes/fused-probes.md): the split push kernel compiled from the same
#    source with an unused lambda that captures `me` (fused-patches/split-mecap.patch: its PTX is the `self` trees'
#    byte for byte, the split-twoshot kernel's is unchanged) ran 0.08-0.23 us faster in all 8 split cells of session
#    17's second A/B. Here three interleaved rounds, push (product) against mecap.
# Predictions (written before the run): the fused GPU test passes as before (996 + 90 adversarial cases);
# mecap - push on the split column -0.08..-0.23 us at 4096 / 8192 batch 1-8, 0 at batch 16 (C = 1: the barrier
# kernel, whose PTX the patch does not change). If it holds, the next step is to find the instruction order that
# matters (SASS of both) and write it on purpose; the dead lambda is never shipped.
# 3. (added at the start of session 18, before the run) `opaque`: the same effect written on purpose. recvReduce gets a
#    template flag kFreshBound: the accumulate loop's `r < nranks` takes nranks through an empty asm, so the compiler
#    computes each member's bound after the poll loop instead of keeping the predicates of the pending mask alive
#    across it (the PTX difference of mecap's split push kernel, whose other differences are a reloaded nranks and a
#    reordered compare). Only the split kernels' data-slot recvReduce, 16-bit dtypes only (f32 spills 12 bytes with
#    it, as mecap's f32 kernel does). Prediction: opaque = mecap within 0.05 us on the split column.
# 4. (added likewise) `scale0.5`: the product with LLCOMM_TARGET_BYTES_PER_BLOCK_SCALE=0.5, so the split planner wants
#    twice the blocks a row (4096 x 1: clusters of 8 instead of 4, 64 slots a block). The push kernels' block counts
#    were never re-chosen on the H100. Prediction: split at 4096 x 1-2 within +-0.1 us of push (the exchange's
#    polls spread over twice the SMs against a larger cluster's pushes); not a gain of 0.4.
# Build the trees first (here, before bundling: PREPARE_ONLY=1): the script does it when ab15/mecap or ab15/opaque is missing.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source research/scripts/probe/fused-ab-lib.sh
if [ ! -d ab15/mecap ]; then
  mkdir -p ab15 && cp -r packages/llcomm/kernels ab15/mecap &&
    (cd ab15/mecap && patch -p4 < ../../research/scripts/probe/fused-patches/split-mecap.patch) || exit 1
fi
if [ ! -d ab15/opaque ]; then
  cp -r packages/llcomm/kernels ab15/opaque &&
    (cd ab15/opaque && patch -p4 < ../../research/scripts/probe/fused-patches/split-fresh-bound.patch) || exit 1
fi
[ -n "${PREPARE_ONLY:-}" ] && exit 0
fused_session_init /tmp/llcomm-s18-a
trap 'tar czf "$out/ab.tgz" -C "$out" ab && rm -rf "$out/ab"' EXIT
LLCOMM_GPU_RESULTS="$out/gpu-fused.jsonl" LLCOMM_GPU_CASE_PREFIX=product LLCOMM_GPU_NO_NCCL=1 timeout 250 \
  node --test packages/llcomm/dist/test/gpu/fused.test.js > "$out/gpu-fused.log" 2>&1
say "gpu-test fused.test.js (refactored): rc $?, cases passed $(grep -c '"passed":true' "$out/gpu-fused.jsonl"), failed $(grep -c '"passed":false' "$out/gpu-fused.jsonl")"
# Rounds stop early when the call's 600 s would not hold another (a round of four runs is about 100-200 s).
fused_ab_round 1 18 push mecap opaque scale0.5
[ $SECONDS -lt 440 ] && fused_ab_round 2 18 scale0.5 opaque mecap push
# the opaque tree's whole fused GPU test (so that, if it is merged, the merged kernels' PTX is a GPU-tested tree's)
[ $SECONDS -lt 450 ] && fused_gpu_test opaque 18
[ $SECONDS -lt 440 ] && fused_ab_round 3 18 push opaque mecap scale0.5
AB_COMPARE=fused-split node research/scripts/probe/fused-ab-table.mjs "$out/ab" push mecap opaque scale0.5 > "$out/ab-table.txt" 2>&1
echo "== A/B (split column: mecap / push)"; cut -c1-400 "$out/ab-table.txt"
echo "== summary"; cat "$summary"
