#!/usr/bin/env bash
# One device step (2026-12-02, session 8): round 10 of the signature A/B (research/notes/signature-cost.md, round
# 10; trees from make-signature-trees.sh, make-round9-trees.sh (duse) and make-round10-trees.sh).
set -uo pipefail
cd "$(dirname "$0")/../../.."
out=${OUT:-/tmp/llcomm-s8-c}
mkdir -p "$out"
OUT=$out/sig AB_VARIANTS="nosig ctrl sig pubonly duse dafter dusecg" AB_SIZES=8,8K,64K \
  AB_ALGORITHMS=oneshot-ll,twoshot-sentinel,oneshot-sentinel,oneshot-barrier AB_BUDGET_S=${AB_BUDGET_S:-150} \
  bash research/scripts/probe/signature-ab.sh > "$out/signature-ab.log" 2>&1
echo "signature A/B: rc $?"
echo "== signature A/B"; sed -n '/call signature:/,$p' "$out/signature-ab.log" | tail -n 70
