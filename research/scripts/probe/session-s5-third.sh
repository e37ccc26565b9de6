#!/usr/bin/env bash
# One device step (2026-12-02, session 5): the block-scale sweep at 2, 8 and 64 virtual ranks (issue 22: does a
# smaller TARGET_BYTES_PER_BLOCK, which won at 16 and 32 ranks, hurt or help elsewhere?).
set -uo pipefail
cd "$(dirname "$0")/../../.."
out=${OUT:-/tmp/llcomm-s5-third}
mkdir -p "$out"
OUT=$out/r2-8 SWEEP_RANKS=2,8 SWEEP_SIZES=8K,64K,256K,1M SWEEP_SCALES=0.125,0.25,0.5,1 SWEEP_BUDGET_S=100 \
  bash research/scripts/probe/block-scale-sweep.sh > "$out/r2-8.log" 2>&1
OUT=$out/r64 SWEEP_RANKS=64 SWEEP_SIZES=8K,64K SWEEP_SCALES=0.125,0.25,0.5,1 SWEEP_ROUNDS=2 SWEEP_BUDGET_S=60 \
  bash research/scripts/probe/block-scale-sweep.sh > "$out/r64.log" 2>&1
for f in r2-8 r64; do echo "== $f"; grep -E "round|budget|exit" "$out/$f.log"; sed -n '/scale A\/B: median/,$p' "$out/$f.log" | cut -c1-140; done
