#!/usr/bin/env bash
# Issue 21, session 21 (2026-12-08), one call:
# 1. The per-process GPU test (multiprocess-fused: the fused call and deviceAllReduceMany (merged as d58ecf1)
#    per process, each bitwise against the in-process call, and a mismatched call on one rank).
# 2. The in-process fused GPU test with LLCOMM_FUSED_SIG_IN_PROCESS=1 (the fused kernels launched with the
#    per-process build's signature cluster in process; kernel-table.ts FUSED_SIGNATURE_IN_PROCESS): every case passes.
# 3. What the signature cluster costs a fused call: bench-fused with and without LLCOMM_FUSED_SIG_IN_PROCESS=1 (push
#    = the product, sigc = the signature cluster and the per-process planner bound ranksPerDevice x (G + 1) <=
#    clusterLimit), 8 ranks, bf16, hidden 4096 / 8192, batch 1-16, 3 interleaved rounds.
# S21C_FAST=1 (when device time is short): 2 rounds, and the sigc GPU test (run last) on its main matrix only.
# Predictions (written before the run): 1 and 2 pass every case. 3: sigc / push on the auto column 1.00-1.02 where
#   the plan does not change (the check block runs beside the data blocks, as the all-reduce signature block's
#   1.008), and up to +0.3 us at batch 4-8 where the planner bound takes a cluster from a rank's split plan.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source research/scripts/probe/fused-ab-lib.sh
fused_session_init /tmp/llcomm-s21-c
# (at most 8 files come back: the per-case lines are in the summary's JSON too)
trap 'tar czf "$out/ab.tgz" -C "$out" ab && rm -rf "$out/ab" "$out/gpu/gpu-cases.jsonl"' EXIT
t0=$SECONDS
OUT="$out/gpu" LLCOMM_GPU_TESTS="multiprocess-fused" LLCOMM_SKIP_SANITIZER=1 LLCOMM_GPU_TEST_TIMEOUT_S=200 \
  timeout 215 bash scripts/gpu-test.sh > "$out/gpu-test-run.txt" 2>&1
say "gpu tests multiprocess-fused: rc $?, $((SECONDS - t0)) s; $(grep TOTAL "$out/gpu-test-run.txt")"
fused_ab_round 1 21 push sigc
fused_ab_round 2 21 sigc push
[ -n "${S21C_FAST:-}" ] || fused_ab_round 3 21 push sigc
AB_COMPARE=fused-auto node research/scripts/probe/fused-ab-table.mjs "$out/ab" push sigc > "$out/ab-table.txt" 2>&1
echo "== sigc / push (auto column)"; cat "$out/ab-table.txt"
t0=$SECONDS
left=$(( ${S21C_DEADLINE_S:-600} - SECONDS )); left=$(( left > 150 ? 150 : left < 1 ? 1 : left ))
LLCOMM_FUSED_SIG_IN_PROCESS=1 LLCOMM_CACHE_DIR=/tmp/llcomm-cache-sigc LLCOMM_GPU_NO_NCCL=1 \
  LLCOMM_GPU_RESULTS="$out/gpu-sigc.jsonl" LLCOMM_GPU_CASE_PREFIX=sigc timeout $left \
  node --test ${S21C_FAST:+--test-name-pattern=model-exact} packages/llcomm/dist/test/gpu/fused.test.js > "$out/gpu-sigc.log" 2>&1
say "gpu-test sigc (fused.test.js, LLCOMM_FUSED_SIG_IN_PROCESS=1): rc $?, $((SECONDS - t0)) s, cases passed $(grep -c '"passed":true' "$out/gpu-sigc.jsonl"), failed $(grep -c '"passed":false' "$out/gpu-sigc.jsonl")"
echo "== summary"; cat "$summary"
