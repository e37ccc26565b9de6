#!/usr/bin/env bash
# One device-call step (scripts/device-session.sh step script:research/scripts/probe/session-scale.sh) for issue 22's
# merge of the spread path and issue 18's signature cost on it, in this order, so that a time limit cuts the last:
#   1. scale-bench.sh without tune: the product kernels at 2, 8, 16, 32 and 64 virtual ranks (goal table);
#   2. scale-ab.sh: the base / spread (85a723b + patch) / merged trees at 16, 32 and 64 ranks (AB_BUDGET_S 50;
#      SESSION_SCALE_AB=0 skips it);
#   3. signature-ab.sh: nosig / sig / pubonly (AB_BUDGET_S 30) on the default cases (twoshot-sentinel's 8-rank
#      cases now take the spread path);
#   4. scale-bench.sh tune only: `llcomm tune` at 8, 16, 32 and 64 virtual ranks.
# Needs ab/ from research/scripts/probe/make-scale-trees.sh and make-signature-trees.sh (made here before the call).
set -uo pipefail
cd "$(dirname "$0")/../../.."
out=${OUT:-/tmp/llcomm-session-scale}
mkdir -p "$out"
t0=$(date +%s)
OUT=$out SCALE_TUNE_RANKS="" bash research/scripts/probe/scale-bench.sh 2>&1 | tee "$out/1-scale-bench.log" | tail -25
echo "== 1 done at $(( $(date +%s) - t0 )) s"
if [ "${SESSION_SCALE_AB:-1}" != 0 ]; then
  OUT=$out/ab AB_BUDGET_S=50 bash research/scripts/probe/scale-ab.sh > "$out/2-scale-ab.log" 2>&1
  tail -30 "$out/2-scale-ab.log"
fi
echo "== 2 done at $(( $(date +%s) - t0 )) s"
OUT=$out/ab AB_BUDGET_S=30 AB_VARIANTS="nosig sig pubonly" bash research/scripts/probe/signature-ab.sh > "$out/3-signature-ab.log" 2>&1
tail -34 "$out/3-signature-ab.log"
echo "== 3 done at $(( $(date +%s) - t0 )) s"
OUT=$out SCALE_RANKS="" SCALE_TUNE_RANKS=8,16,32,64 SCALE_TUNE_ITERS=150 bash research/scripts/probe/scale-bench.sh \
  > "$out/4-tune.log" 2>&1
tail -3 "$out/4-tune.log"
echo "== 4 done at $(( $(date +%s) - t0 )) s"
