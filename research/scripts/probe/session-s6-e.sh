#!/usr/bin/env bash
# Session 6, fifth device call (2026-12-02): signature round 7 (research/notes/signature-cost.md): the checks after
# the kernel's last __syncthreads (ab/end) beside nosig / ctrl / sig / pubonly / dnocmp. Here first:
# bash research/scripts/probe/make-signature-trees.sh (and remove the trees this call does not use: the carry limit).
set -uo pipefail
cd "$(dirname "$0")/../../.."
out=${OUT:-/tmp/llcomm-s6-e}
mkdir -p "$out"
OUT=$out/sig AB_VARIANTS="nosig ctrl sig pubonly end dnocmp" AB_BUDGET_S=60 \
  bash research/scripts/probe/signature-ab.sh > "$out/signature-ab.log" 2>&1
echo "signature A/B: rc $?"
sed -n '/call signature:/,$p' "$out/signature-ab.log"
