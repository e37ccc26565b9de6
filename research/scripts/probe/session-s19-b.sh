#!/usr/bin/env bash
# Issue 18, session 19 (2026-12-07): round 11 of the call signature's cost (research/notes/signature-cost.md), one
# device call. Before bundling, here: bash research/scripts/probe/make-signature-trees.sh (ab/nosig, ab/ctrl,
# ab/pubonly, ab/sigblk, ab/xblk are used; carry "ab"; the other trees may be removed to save carry room).
# The candidate (sigblk): the data blocks are nosig's (no signature code in them at all; ptxas registers per kernel
# equal nosig's for every one-shot and two-shot sentinel kernel, oneshot-ll's ll16 +6), and one more block per
# launch (LLCOMM_SIG_BLOCK, kernels/llcomm/signature.cuh llcSignatureBlock; the host adds it with LLCOMM_SIG_BLOCK=1
# from the tree's ab.env) publishes and checks every launch rank's packet with an epoch word of its own. A launch of
# R ranks x B blocks takes R x B + 1 blocks, so the launch shapes are nosig's (8 x 16 + 1 = 129 on 132 SMs).
# xblk: the same extra block, returning at once (the cost of the block alone).
# Predictions (ratio to nosig, median over the cases; written before the run):
#   ctrl 0.98-1.02; sig (the product) 1.03-1.05 as in rounds 8-10 (H200 then, H100 now); pubonly ~1.01;
#   xblk 1.00-1.01 (one CTA per launch that exits at once);
#   sigblk 1.00-1.02, max <= 1.05: nothing of the check is in the data blocks' code, and the signature block's poll
#   ends before the data blocks do (its peers' packets go out at their kernels' start, beside the first data).
#   Falsified if sigblk >= 1.03: then the cost is the check's own traffic or wait, not its code in the data path.
#   The GPU signature test on ab/sigblk (mismatch matrix, determinism, f32 accumulation): every case passes.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source research/scripts/probe/signature-round11-lib.sh
sig11_init /tmp/llcomm-s19-b nosig ctrl pubonly sigblk xblk
sig11_ab "nosig ctrl sig pubonly sigblk xblk"
t0=$SECONDS
LLCOMM_SIG_BLOCK=1 LLCOMM_KERNELS_DIR=$(realpath ab/sigblk) LLCOMM_GPU_NO_NCCL=1 LLCOMM_GPU_RESULTS="$out/gpu-sigblk.jsonl" \
  LLCOMM_GPU_CASE_PREFIX=sigblk timeout 200 node --test packages/llcomm/dist/test/gpu/signature.test.js > "$out/gpu-sigblk.log" 2>&1
echo "gpu signature test on ab/sigblk: rc $?, $((SECONDS - t0)) s, passed $(grep -c '"passed":true' "$out/gpu-sigblk.jsonl"), failed $(grep -c '"passed":false' "$out/gpu-sigblk.jsonl")" | tee -a "$out/summary.txt"
grep '"passed":false' "$out/gpu-sigblk.jsonl" | head -5 | cut -c1-400
sig11_finish
