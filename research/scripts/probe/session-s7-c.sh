#!/usr/bin/env bash
# Session 7, third A/B call (2026-12-02): bspread, + hoist (twoshot-sentinel's first sends' parameters read before
# the epoch load), + weakep (every kernel's epoch word read by a plain load) (research/notes/scale-2026-12-01.md,
# session 7). Trees made here: ab/scale-merged (d1632b4), ab/scale-bsp, ab/scale-hoist (the working tree), ab/scale-hw
# (hoist + weakep); probe trees ab/phase-hoist, ab/phase-hw.
set -uo pipefail
cd "$(dirname "$0")/../../.."
PHASE_TREES="phase-hw" PHASE_CASES="16:65536 32:8192 8:8192 2:8192" bash research/scripts/probe/phase-probe.sh
AB_TREES="bsp hoist hw" AB_RANKS=2,8,16,32,64 AB_SIZES=8,8K,64K AB_ROUNDS=3 AB_ITERS=200 AB_BUDGET_S=260 \
  AB_ALGORITHMS=twoshot-sentinel,oneshot-sentinel,oneshot-ll,oneshot-barrier bash research/scripts/probe/scale-ab.sh \
  | tee "${OUT:-/tmp}/ab-table.txt"
