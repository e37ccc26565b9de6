#!/usr/bin/env bash
# One device step (2026-12-02, session 5): the eager launch overhead after a35047a (issue 17: eager deviceAllReduce
# against the C loop in the same process, 8 repetitions), then the block-scale sweep at 16 and 32 virtual ranks
# (issue 22: research/scripts/probe/block-scale-sweep.sh).
set -uo pipefail
cd "$(dirname "$0")/../../.."
out=${OUT:-/tmp/llcomm-s5-second}
mkdir -p "$out"
OUT=$out bash scripts/launch-overhead/run.sh --reps 8 > "$out/launch-overhead.log" 2>&1 || echo "launch-overhead: exit $?"
OUT=$out/sweep SWEEP_SCALES=0.0625,0.125,0.25,0.5,1,2 SWEEP_BUDGET_S=110 bash research/scripts/probe/block-scale-sweep.sh > "$out/block-scale.log" 2>&1
echo "== launch overhead (in-process table)"; sed -n '/in-process: case/,$p' "$out/launch-overhead.log"
echo "== block-scale sweep"; grep -E "round|budget|exit" "$out/block-scale.log"; sed -n '/scale A\/B: median/,$p' "$out/block-scale.log"
