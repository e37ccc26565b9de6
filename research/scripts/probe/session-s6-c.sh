#!/usr/bin/env bash
# Session 6, third device call (2026-12-02): the signature A/B of round 5, the empty checks (research/notes/
# signature-cost.md, round 5): nosig, ctrl, sig, pubonly, defer and the three round-5 trees (nowait, dnoload, dnocmp),
# 2 and 8 virtual ranks, 3 interleaved rounds. Here first: bash research/scripts/probe/make-signature-trees.sh.
set -uo pipefail
cd "$(dirname "$0")/../../.."
out=${OUT:-/tmp/llcomm-s6-c}
mkdir -p "$out"
OUT=$out/sig AB_VARIANTS="nosig ctrl sig pubonly defer nowait dnoload dnocmp" AB_BUDGET_S=75 \
  bash research/scripts/probe/signature-ab.sh > "$out/signature-ab.log" 2>&1
echo "signature A/B: rc $?"
sed -n '/call signature:/,$p' "$out/signature-ab.log"
