#!/usr/bin/env bash
# Issue 21, session 18's second GPU call (2026-12-07): the product as committed after session-s18-a.sh's A/B (what
# was merged, if anything, is in research/notes/fused-probes.md, session 18), checked and measured as session 17's
# close was: the whole fused GPU test, then two runs of the kernel bench against every llcomm AllReduce + RMSNorm
# (--unfused-all; 8 ranks, bf16, hidden 4096 / 8192, batch 1-16). The predictions are written in the notes before the
# run.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source research/scripts/probe/fused-ab-lib.sh
fused_session_init /tmp/llcomm-s18-b
fused_gpu_test_product
fused_goal_runs 120
echo "== summary"; cat "$summary"
