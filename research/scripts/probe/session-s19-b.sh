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
out=${OUT:-/tmp/llcomm-s19-b}
mkdir -p "$out"
export LLCOMM_CACHE_DIR=${LLCOMM_CACHE_DIR:-/tmp/llcomm-cache} NCCL_NVLS_ENABLE=0
for t in nosig ctrl pubonly sigblk xblk; do test -d "ab/$t" || { echo "ab/$t missing"; exit 2; }; done
t0=$SECONDS
AB_VARIANTS="nosig ctrl sig pubonly sigblk xblk" AB_SIZES=8,8K,64K AB_BUDGET_S=100 OUT="$out/sigab" \
  timeout 240 bash research/scripts/probe/signature-ab.sh > "$out/signature-ab.txt" 2>&1
echo "signature A/B: rc $?, $((SECONDS - t0)) s, WRONG rows: $(grep -c WRONG "$out/sigab/ab-tables.log")" | tee "$out/summary.txt"
t0=$SECONDS
LLCOMM_SIG_BLOCK=1 LLCOMM_KERNELS_DIR=$(realpath ab/sigblk) LLCOMM_GPU_NO_NCCL=1 LLCOMM_GPU_RESULTS="$out/gpu-sigblk.jsonl" \
  LLCOMM_GPU_CASE_PREFIX=sigblk timeout 200 node --test packages/llcomm/dist/test/gpu/signature.test.js > "$out/gpu-sigblk.log" 2>&1
echo "gpu signature test on ab/sigblk: rc $?, $((SECONDS - t0)) s, passed $(grep -c '"passed":true' "$out/gpu-sigblk.jsonl"), failed $(grep -c '"passed":false' "$out/gpu-sigblk.jsonl")" | tee -a "$out/summary.txt"
grep '"passed":false' "$out/gpu-sigblk.jsonl" | head -5 | cut -c1-400
tar czf "$out/sigab.tgz" -C "$out" sigab && rm -rf "$out/sigab"
sed -n '/^call signature/,$p' "$out/signature-ab.txt"
cat "$out/summary.txt"
