#!/usr/bin/env bash
# One device step (2026-12-02, session 8): round 9 of the signature A/B (research/notes/signature-cost.md, round 9;
# trees from research/scripts/probe/make-signature-trees.sh and make-round9-trees.sh), after the SASS of the trees
# (sass-signature.sh: nosig, dnocmp, duse, dlate, dend and the product, for the hot-path diff).
set -uo pipefail
cd "$(dirname "$0")/../../.."
out=${OUT:-/tmp/llcomm-s8-b}
mkdir -p "$out"
OUT=$out SASS_TREES="nosig dnocmp duse dlate dend cur" bash research/scripts/probe/sass-signature.sh > "$out/sass.log" 2>&1
echo "sass: rc $?"; cat "$out/sass.log"
OUT=$out/sig AB_VARIANTS="nosig ctrl sig pubonly dnocmp duse dtiny dlate dend" AB_SIZES=8,8K,64K \
  AB_ALGORITHMS=oneshot-ll,twoshot-sentinel,oneshot-sentinel,oneshot-barrier AB_BUDGET_S=${AB_BUDGET_S:-150} \
  bash research/scripts/probe/signature-ab.sh > "$out/signature-ab.log" 2>&1
echo "signature A/B: rc $?"
echo "== signature A/B"; sed -n '/call signature:/,$p' "$out/signature-ab.log" | tail -n 70
