#!/usr/bin/env bash
# Issue 21, session 15 (2026-12-07): the split kernels' push exchange as kernels of their own
# (allreduce/fused_rmsnorm_split{,_ll}_push.cu, fused_split.cuh kPush), launched by the host where C > 1 and a
# cluster's rows fit (fused-launcher.ts fusedSplitPushes); C = 1 keeps the barrier kernel, whose PTX is HEAD's.
# Session 14's one-kernel version (push2/push3) branched on %cluster_nctarank around the barriers, ptxas emitted
# WARPSYNC.COLLECTIVE fallbacks, and synccheck failed on f16, 8 ranks, 16 x 4096 (C = 1).
# Predictions (written before the run):
#   - SASS: no MEMBAR and no WARPSYNC.COLLECTIVE in the push kernels; the barrier kernels as HEAD's (2 MEMBAR each).
#   - synccheck and racecheck of the fused reduced matrix clean (251 cases each).
#   - A/B (LLCOMM_FUSED_SPLIT_PUSH=0 against the default, same build, interleaved rounds, 8 ranks bf16): split
#     -0.35..-0.50 us at 4096 / 8192 batch 1-4 (push2 measured -0.41..-0.50 against HEAD); 4096 x 16 (C = 1: the
#     barrier kernel in both) within +-0.05 us, i.e. session 14's +0.64 us there gone.
# Steps: SASS counts, sanitizers (SAN_TOOLS, via session-s14-a.sh), then AB_ROUNDS rounds of the A/B and its table.
set -uo pipefail
cd "$(dirname "$0")/../../.."
out=${OUT:-/tmp/llcomm-s15-a}
mkdir -p "$out/ab" "$out/sass"
export NCCL_NVLS_ENABLE=0 LLCOMM_TEST_BACKEND=cuda
export LLCOMM_CACHE_DIR=${LLCOMM_CACHE_DIR:-/tmp/llcomm-cache}
k=packages/llcomm/kernels
for f in fused_rmsnorm_split fused_rmsnorm_split_ll fused_rmsnorm_split_push fused_rmsnorm_split_ll_push; do
  nvcc -arch sm_90 -cubin -std=c++17 -I $k $k/allreduce/$f.cu -o /tmp/$f.cubin > /dev/null 2>&1 &&
    cuobjdump -sass /tmp/$f.cubin > "$out/sass/$f.sass" 2>&1
  awk '/Function :/ { fn = $3 } /MEMBAR/ { m[fn]++ } /CGABAR_ARV/ { c[fn]++ } /WARPSYNC/ { w[fn]++ } /SYNCS/ { y[fn]++ }
    END { for (f in y) printf "sass %s: MEMBAR %d, cluster arrive %d, WARPSYNC %d, SYNCS %d\n", f, m[f], c[f], w[f], y[f]
          for (f in c) if (!(f in y)) printf "sass %s: MEMBAR %d, cluster arrive %d, WARPSYNC %d, SYNCS 0\n", f, m[f], c[f], w[f] }' \
    "$out/sass/$f.sass"
done
if [ -n "${SAN_TOOLS:-synccheck racecheck}" ]; then
  mkdir -p "$out/san"
  OUT="$out/san" SAN_TOOLS="${SAN_TOOLS:-synccheck racecheck}" SKIP_BENCH=1 bash research/scripts/probe/session-s14-a.sh
fi
for ((r = 1; r <= ${AB_ROUNDS:-1}; r++)); do
  for v in bar push; do
    LLCOMM_FUSED_SPLIT_PUSH=$([ $v = push ] && echo 1 || echo 0) timeout 120 node scripts/bench-fused.mjs \
      --ranks 8 --hidden 4096,8192 --batch 1,2,4,8,16 --dtype bf16 --out "$out/ab/$v-r$r.json" > "$out/ab/$v-r$r.log" 2>&1
    echo "$v round $r: rc $?"
  done
done
node research/scripts/probe/fused-ab-table.mjs "$out/ab" bar push | tee "$out/table.txt"
