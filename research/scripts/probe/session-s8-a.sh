#!/usr/bin/env bash
# Ran once at e2da90b (round 8); its trees (cur, and sig = the candidate default) are that commit's make-signature-trees.sh and
# kernels (kept as research/scripts/probe/signature-patches/round8-defer-late-default.patch after the revert).
# One device step (2026-12-02, session 8): the signature A/B of round 8 on the four algorithms the signature
# changes or bounds (oneshot-ll, twoshot-sentinel, oneshot-sentinel, oneshot-barrier) at 8 B, 8 KB and 64 KB, bf16
# and f32, 2 and 8 virtual ranks (issue 18's closing table): sig = the product kernels (since round 8 the deferred
# check with its slow path after the last barrier, LLCOMM_SIG_DEFER_LATE), against nosig / ctrl / cur (the
# current-epoch check, the product before) / pubonly / defer (round 4's deferred check, slow path in place) / dnocmp
# (round 5: the loads without the check). research/notes/signature-cost.md, round 8. The product's GPU test is the
# session's gpu-test step.
set -uo pipefail
cd "$(dirname "$0")/../../.."
out=${OUT:-/tmp/llcomm-s8-a}
mkdir -p "$out"
OUT=$out/sig AB_VARIANTS="nosig ctrl cur sig pubonly defer dnocmp" AB_SIZES=8,8K,64K \
  AB_ALGORITHMS=oneshot-ll,twoshot-sentinel,oneshot-sentinel,oneshot-barrier AB_BUDGET_S=${AB_BUDGET_S:-150} \
  bash research/scripts/probe/signature-ab.sh > "$out/signature-ab.log" 2>&1
echo "signature A/B: rc $?"
echo "== signature A/B"; sed -n '/call signature:/,$p' "$out/signature-ab.log" | tail -n 70
