#!/usr/bin/env bash
# One device step (2026-12-02, session 5): the pullgate candidate (research/notes/scale-2026-12-02-pullag.md) against the product,
# 2 and 8 virtual ranks, 8 B to 1 MB, bf16, with the default 1 MB receive buffer and with 4 MB (1 MB in one launch).
set -uo pipefail
cd "$(dirname "$0")/../../.."
out=${OUT:-/tmp/llcomm-s5-pullgate}
OUT=$out/bb1M AB_TREES="merged pullgate" AB_RANKS=2,8 AB_SIZES=8,8K,64K,256K,1M AB_BUDGET_S=75 AB_ALGORITHMS=twoshot-sentinel,oneshot-barrier \
  bash research/scripts/probe/scale-ab.sh > "$out-bb1M.log" 2>&1
OUT=$out/bb4M AB_TREES="merged pullgate" AB_RANKS=2,8 AB_SIZES=8,8K,64K,256K,1M AB_BUFFER_BYTES=4M AB_BUDGET_S=75 AB_ALGORITHMS=twoshot-sentinel,oneshot-barrier \
  bash research/scripts/probe/scale-ab.sh > "$out-bb4M.log" 2>&1
mkdir -p "$OUT" 2>/dev/null; cp "$out-bb1M.log" "$out-bb4M.log" "${OUT:-/tmp}/" 2>/dev/null
echo "== 1 MB buffer"; sed -n '/scale A\/B: median/,$p' "$out-bb1M.log"
echo "== 4 MB buffer"; sed -n '/scale A\/B: median/,$p' "$out-bb4M.log"
