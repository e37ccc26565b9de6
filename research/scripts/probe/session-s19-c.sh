#!/usr/bin/env bash
# Issue 21, session 19 (2026-12-07): the goal cells after the planner-pairs merge (bbe108f; its GPU test passed in
# session-s19-a.sh, 1246/1246): two runs of the kernel bench against every llcomm AllReduce + RMSNorm
# (--unfused-all; 8 ranks, bf16, hidden 4096 / 8192, batch 1-16), as session-s18-b.sh.
# Predictions (written before the run): 4096 x 4 0.78-0.79 (split 5.57 against unfused 7.0 in s19-a), 8192 x 4
# 0.82-0.83 (split-twoshot 7.30 against 8.85); the batch 1, 2, 8, 16 cells as at 9216fd6 within 0.01 (their plans
# did not change); 8 or 9 of 10 cells (9 only if 4096 x 2, 0.7997 / 0.7989 at 9216fd6, stays under 0.8 twice).
set -uo pipefail
cd "$(dirname "$0")/../../.."
source research/scripts/probe/fused-ab-lib.sh
fused_session_init /tmp/llcomm-s19-c
fused_goal_runs 150
echo "== summary"; cat "$summary"
