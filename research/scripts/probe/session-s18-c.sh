#!/usr/bin/env bash
# Issue 21, session 18's third GPU call (2026-12-07): the split kernels in launch shapes the planner does not pick,
# on 9216fd6's kernels, 8 ranks, bf16. The two cells that miss the goal are 4096 x 1 (split, C = 4: one cluster of 4)
# and 8192 x 4 (split-twoshot, C = 4: four clusters of 4, a row each). Session 18's scale runs moved neither plan
# except to C = 8 / C = 2 at 4096 x 1 (+0.10 / +0.46 us). Here the cluster size alone (fused-cluster-sizes.mjs):
# cl2 (8192 x 4: 4 clusters of 2, 8 blocks a rank), cl8 (8192 x 4: 2 clusters of 8, 2 rows each; 8192 x 8: 2
# clusters of 8, 4 rows each, against C = 2). Three interleaved rounds.
# Predictions (written before the run): split-twoshot at 8192 x 4: cl8 within +-0.2 us of push (the same 256-slot
# message a block; the q's pushed to 8 blocks instead of 4), cl2 +0.2..+0.5 (half the blocks, twice the work each);
# 8192 x 8 cl8 within +-0.2; 4096 x 1: cl8 +0.1 as scale0.5's C = 8, cl2 +0.4 as scale2's.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source research/scripts/probe/fused-ab-lib.sh
fused_session_init /tmp/llcomm-s18-c
trap 'tar czf "$out/ab.tgz" -C "$out" ab && rm -rf "$out/ab"' EXIT
fused_ab_round 1 18c push cl2 cl8
fused_ab_round 2 18c cl8 cl2 push
fused_ab_round 3 18c push cl8 cl2
AB_COMPARE=fused-split-twoshot node research/scripts/probe/fused-ab-table.mjs "$out/ab" push cl2 cl8 > "$out/ab-table-2s.txt" 2>&1
AB_COMPARE=fused-split node research/scripts/probe/fused-ab-table.mjs "$out/ab" push cl2 cl8 > "$out/ab-table.txt" 2>&1
grep -h "fused-cluster-sizes" "$out"/ab/*.log | sort | uniq -c
echo "== split-twoshot: X / push (last two columns: cl2, cl8)"; awk -F'|' '{print $1 "|" $(NF-1) "|" $NF}' "$out/ab-table-2s.txt"
echo "== split: X / push"; awk -F'|' '{print $1 "|" $(NF-1) "|" $NF}' "$out/ab-table.txt"
echo "== summary"; cat "$summary"
