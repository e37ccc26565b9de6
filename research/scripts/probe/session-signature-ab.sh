#!/usr/bin/env bash
# One device step of a signature A/B round (research/notes/signature-cost.md): signature-ab.sh with the round's
# AB_VARIANTS and AB_BUDGET_S (given by the caller, e.g. session-s6-c.sh), its log in $OUT, the ratio table printed
# last. Here first: bash research/scripts/probe/make-signature-trees.sh (and remove the trees the round does not
# use: the carry limit).
set -uo pipefail
cd "$(dirname "$0")/../../.."
out=${OUT:-/tmp/llcomm-signature-ab}
mkdir -p "$out"
OUT=$out/sig AB_VARIANTS="${AB_VARIANTS:?the round's variants}" AB_BUDGET_S="${AB_BUDGET_S:-60}" \
  bash research/scripts/probe/signature-ab.sh > "$out/signature-ab.log" 2>&1
echo "signature A/B: rc $?"
sed -n '/call signature:/,$p' "$out/signature-ab.log"
