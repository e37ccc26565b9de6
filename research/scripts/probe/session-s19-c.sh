#!/usr/bin/env bash
# Issue 21, session 19 (2026-12-07): the goal cells after the planner-pairs merge (bbe108f; its GPU test passed in
# session-s19-a.sh, 1246/1246): two runs of the kernel bench against every llcomm AllReduce + RMSNorm
# (--unfused-all; 8 ranks, bf16, hidden 4096 / 8192, batch 1-16), as session-s18-b.sh.
# Predictions (written before the run): 4096 x 4 0.78-0.79 (split 5.57 against unfused 7.0 in s19-a), 8192 x 4
# 0.82-0.83 (split-twoshot 7.30 against 8.85); the batch 1, 2, 8, 16 cells as at 9216fd6 within 0.01 (their plans
# did not change); 8 or 9 of 10 cells (9 only if 4096 x 2, 0.7997 / 0.7989 at 9216fd6, stays under 0.8 twice).
# Revised in session 20, after 3a9cbf4 made the signature block the default check (written before any run): the
# unfused side's AllReduce loses the in-block check's cost (round 11, 8 ranks bf16: oneshot-ll -0.16 us at 8 KB,
# -0.36 at 64 KB; oneshot-sentinel -0.05 at 8 KB, -0.13 at 64 KB), the fused kernels carry no signature and do not
# change, so every ratio rises by about 0.01-0.03: 4096 x 1 0.85-0.87, 4096 x 2 0.80-0.82 (fails), 4096 x 4 and
# 4096 x 8 0.79-0.81 (at the edge), 8192 x 4 0.83-0.85, 8192 x 8 0.80-0.82, the batch 16 cells 0.78-0.80, 8192 x 1-2
# 0.75-0.77: 5 to 7 of 10 (was 8).
set -uo pipefail
cd "$(dirname "$0")/../../.."
source research/scripts/probe/fused-ab-lib.sh
fused_session_init /tmp/llcomm-s19-c
fused_goal_runs 140
echo "== summary"; cat "$summary"
