#!/usr/bin/env bash
# Issue 21, prepared in session 18 for the next session's first GPU call (2026-12-07). The planner-pairs candidate:
# fused-patches/planner-pairs.patch (host only: planFusedSplit takes a row per cluster of 2 at 8-15 ranks, 4-7 rows;
# fusedSplitPairsFirst, with its unit test). Session 18 measured the shape through the cl2 preload at 4 rows only
# (bench/results/cuda-h100-split-cluster-size-ab-2026-12-07.txt: split -0.15 us at 4096 x 4, split-twoshot
# -0.19 at 8192 x 4). Before bundling, here: git apply research/scripts/probe/fused-patches/planner-pairs.patch &&
# npx tsc -b && bash scripts/device-bundle.sh (so the carried dist plans with it).
# 1. The whole fused GPU test with the patched planner (its plans at 4-7 rows are new: four to seven clusters of 2).
# 2. Three interleaved rounds at batch 4-7: push (the patched planner) against cl1.4.8 (clusters of 2 excluded: the
#    old planner's choice at 4-7 rows).
# Predictions (written before the run): GPU test passes (more than 1086 cases: session 18 added rows = 4 to its main
# matrix after its last GPU run, its first 4-7-row cases: split-twoshot at 8192 and the new plans); push - cl1.4.8
# on split and split-twoshot -0.15..-0.2 us at batch 4 (both hiddens), -0.1..-0.2 at batch 5-7 (not measured before; 10-14 blocks a rank, not
# a power of two: the block role divides at run time there, which may cost ~0.05). If batch 5-7 lose, narrow the
# rule to 4 rows.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source research/scripts/probe/fused-ab-lib.sh
grep -q fusedSplitPairsFirst packages/llcomm/dist/src/backends/cuda/fused-launcher.js || { echo "the dist lacks the patch"; exit 1; }
fused_session_init /tmp/llcomm-s19-a
trap 'tar czf "$out/ab.tgz" -C "$out" ab && rm -rf "$out/ab"' EXIT
fused_gpu_test_product
export AB_BATCH=4,5,6,7
fused_ab_round 1 19 push cl1.4.8
fused_ab_round 2 19 cl1.4.8 push
fused_ab_round 3 19 push cl1.4.8
AB_COMPARE=fused-split-twoshot node research/scripts/probe/fused-ab-table.mjs "$out/ab" push cl1.4.8 > "$out/ab-table-2s.txt" 2>&1
AB_COMPARE=fused-split node research/scripts/probe/fused-ab-table.mjs "$out/ab" push cl1.4.8 > "$out/ab-table.txt" 2>&1
echo "== split-twoshot: cl1.4.8 / push"; awk -F'|' '{print $1 "|" $NF}' "$out/ab-table-2s.txt"
echo "== split: cl1.4.8 / push"; awk -F'|' '{print $1 "|" $NF}' "$out/ab-table.txt"
echo "== summary"; cat "$summary"
