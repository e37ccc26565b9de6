#!/usr/bin/env bash
# Issue 21 and the per-process empty call, session 22 (2026-12-08; no device was lent that session: run this as the
# next session's first call: `S22A_PART=tests bash research/scripts/probe/session-s22-a.sh`, then
# `S22A_PART=ab bash …` as a second call; S22A_FAST=1 for 2 A/B rounds and the short sigc test).
# 1. The per-process GPU tests of session 22's host changes: multiprocess-signature (3 new cases: an empty call
#    against one with data, both ways, and a call refused on one rank (no such dtype): MISMATCH on every other rank,
#    the refusal on it; the warm-up makes the empty and the refused call on every rank alike first; three cases then
#    recover() on every rank and make the main call again: exact everywhere) and
#    multiprocess-fused (the fused call per process; the many section, never run on a GPU before, now with an empty
#    group [0, 0] and the host view comm.allReduceMany, auto and forced, on every group), then multiprocess (its
#    new case: test/process/chaos.ts's long run with failures planted on purpose, 80 calls at 2 processes).
# 2. What the signature cluster costs a fused call (session-s21-c.sh's step 3, not run in session 21): bench-fused
#    with and without LLCOMM_FUSED_SIG_IN_PROCESS=1, 8 ranks, bf16, 4096 / 8192, batch 1-16, 2 interleaved rounds
#    (3 without S22A_FAST).
# 3. The in-process fused GPU test with LLCOMM_FUSED_SIG_IN_PROCESS=1 (its main matrix only under S22A_FAST).
# Predictions (written before any run): 1 passes every case; each mismatched per-process call fails on every rank
#   with MISMATCH well before 2 x timeout (4 s), detectedBy device (the refused rank: UNSUPPORTED_DTYPE); the many section's per-process outputs bitwise
#   equal to the in-process call's, the empty group one launch per process and none in process. 2: sigc / push on
#   the auto column 1.00-1.02 where the plan does not change, up to +0.3 us at batch 4-8 where the per-process
#   planner bound takes a cluster. 3 passes every case.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source research/scripts/probe/fused-ab-lib.sh
fused_session_init /tmp/llcomm-s22-a
deadline=${S22A_DEADLINE_S:-590}
# (at most 8 files come back: the per-case lines are in the summary's JSON too)
trap 'tar czf "$out/ab.tgz" -C "$out" ab && rm -rf "$out/ab"' EXIT
# S22A_PART=tests: step 1 only (its own call when the A/B does not fit the same 10 minutes); S22A_PART=ab: 2 and 3.
if [ "${S22A_PART:-all}" != ab ]; then
  for group in multiprocess-signature multiprocess-fused multiprocess; do
    t0=$SECONDS
    left=$(( deadline - SECONDS - 20 )); left=$(( left > 300 ? 300 : left ))
    OUT="$out/gpu-$group" LLCOMM_GPU_TESTS="$group" LLCOMM_SKIP_SANITIZER=1 LLCOMM_GPU_TEST_TIMEOUT_S=$left \
      timeout $((left + 15)) bash scripts/gpu-test.sh > "$out/gpu-test-$group.txt" 2>&1
    say "gpu tests $group: rc $?, $((SECONDS - t0)) s; $(grep TOTAL "$out/gpu-test-$group.txt")"
    rm -f "$out/gpu-$group/gpu-cases.jsonl"
  done
  [ "${S22A_PART:-all}" = tests ] && { echo "== summary"; cat "$summary"; exit 0; }
  [ $((deadline - SECONDS)) -ge 200 ] || { say "A/B skipped: $((deadline - SECONDS)) s left"; echo "== summary"; cat "$summary"; exit 0; }
fi
fused_ab_round 1 22 push sigc
fused_ab_round 2 22 sigc push
[ -n "${S22A_FAST:-}" ] || [ $((deadline - SECONDS)) -lt 220 ] || fused_ab_round 3 22 push sigc
AB_COMPARE=fused-auto node research/scripts/probe/fused-ab-table.mjs "$out/ab" push sigc > "$out/ab-table.txt" 2>&1
echo "== sigc / push (auto column)"; cat "$out/ab-table.txt"
t0=$SECONDS
left=$(( deadline - SECONDS )); left=$(( left > 150 ? 150 : left < 1 ? 1 : left ))
[ "$left" -ge 40 ] || { say "gpu-test sigc: skipped, $left s left"; echo "== summary"; cat "$summary"; exit 0; }
LLCOMM_FUSED_SIG_IN_PROCESS=1 LLCOMM_CACHE_DIR=/tmp/llcomm-cache-sigc LLCOMM_GPU_NO_NCCL=1 \
  LLCOMM_GPU_RESULTS="$out/gpu-sigc.jsonl" LLCOMM_GPU_CASE_PREFIX=sigc timeout $left \
  node --test ${S22A_FAST:+--test-name-pattern=model-exact} packages/llcomm/dist/test/gpu/fused.test.js > "$out/gpu-sigc.log" 2>&1
say "gpu-test sigc (fused.test.js, LLCOMM_FUSED_SIG_IN_PROCESS=1): rc $?, $((SECONDS - t0)) s, cases passed $(grep -c '"passed":true' "$out/gpu-sigc.jsonl"), failed $(grep -c '"passed":false' "$out/gpu-sigc.jsonl")"
echo "== summary"; cat "$summary"
