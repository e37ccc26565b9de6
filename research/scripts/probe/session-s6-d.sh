#!/usr/bin/env bash
# Session 6, fourth device call (2026-12-02): signature round 6 (research/notes/signature-cost.md): the A/B of the
# slow paths out of line (the product, packages/llcomm/kernels) against them inlined (ab/inl), the deferred build
# both ways (ab/defer, ab/definl), nosig / ctrl / pubonly; then scripts/device-session.sh's gpu-test step runs the
# GPU tests on the product kernels. Here first: bash research/scripts/probe/make-signature-trees.sh (and remove the
# trees this call does not use: the carry limit).
set -uo pipefail
cd "$(dirname "$0")/../../.."
out=${OUT:-/tmp/llcomm-s6-d}
mkdir -p "$out"
OUT=$out/sig AB_VARIANTS="nosig ctrl sig inl pubonly defer definl" AB_BUDGET_S=70 \
  bash research/scripts/probe/signature-ab.sh > "$out/signature-ab.log" 2>&1
echo "signature A/B: rc $?"
sed -n '/call signature:/,$p' "$out/signature-ab.log"
