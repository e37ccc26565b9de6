#!/usr/bin/env bash
# Session 7, second A/B call (2026-12-02): bspread (the block-wide broadcast of twoshot-sentinel's spread path,
# research/notes/scale-2026-12-01.md, session 7). Here first: phase-probe.sh make phase d1632b4; make phase-bsp;
# ab/scale-merged = d1632b4's kernels, ab/scale-bsp = the working tree's.
set -uo pipefail
cd "$(dirname "$0")/../../.."
PHASE_TREES="phase phase-bsp" PHASE_CASES="16:65536 32:8192 8:8192 64:8192" bash research/scripts/probe/phase-probe.sh
AB_TREES="merged bsp" AB_RANKS=8,16,32,64 AB_SIZES=8,8K,64K AB_ROUNDS=3 AB_ITERS=200 AB_BUDGET_S=240 \
  AB_ALGORITHMS=twoshot-sentinel,oneshot-sentinel,oneshot-ll,oneshot-barrier bash research/scripts/probe/scale-ab.sh \
  | tee "${OUT:-/tmp}/ab-table.txt"
