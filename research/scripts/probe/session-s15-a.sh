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
#   - direct (ab15/direct = fused-patches/split-push-direct.patch, carried; the A/B only): each unit's q pushed from
#     its register into every block of the cluster, this one included, inside the receive loop (the cluster wait
#     for the mbarrier init moved to just after the relaxed arrive, before the receives), so no __syncthreads and
#     no re-read of the q's before the pushes. Prediction: split -0.1..-0.2 us against push at batch 1-4 (session
#     14's timeline: the __syncthreads and the pushes took 0.48 us after q where relx's barrier took 0.32).
# Steps: SASS counts, synccheck (product), AB_ROUNDS rounds of the A/B and its table, the direct tree's fused GPU test
# and synccheck, then racecheck (product).
set -uo pipefail
cd "$(dirname "$0")/../../.."
source research/scripts/probe/fused-ab-lib.sh
fused_session_init /tmp/llcomm-s15-a
mkdir -p "$out/sass"
k=packages/llcomm/kernels
for kf in $k/fused_rmsnorm_split $k/fused_rmsnorm_split_ll $k/fused_rmsnorm_split_push $k/fused_rmsnorm_split_ll_push \
  ab15/direct/fused_rmsnorm_split_push; do
  kd=$(dirname $kf) f=$(basename $kf)
  tag=$([ $kd = $k ] && echo $f || echo direct-$f)
  nvcc -arch sm_90 -cubin -std=c++17 -I $kd $kd/allreduce/$f.cu -o /tmp/$tag.cubin > /dev/null 2>&1 &&
    cuobjdump -sass /tmp/$tag.cubin > "$out/sass/$tag.sass" 2>&1
  awk '/Function :/ { fn = $3 } /MEMBAR/ { m[fn]++ } /CGABAR_ARV/ { c[fn]++ } /WARPSYNC/ { w[fn]++ } /SYNCS/ { y[fn]++ }
    END { for (f in y) printf "sass %s: MEMBAR %d, cluster arrive %d, WARPSYNC %d, SYNCS %d\n", f, m[f], c[f], w[f], y[f]
          for (f in c) if (!(f in y)) printf "sass %s: MEMBAR %d, cluster arrive %d, WARPSYNC %d, SYNCS 0\n", f, m[f], c[f], w[f] }' \
    "$out/sass/$tag.sass"
done
sanitize() { fused_sanitize "$1" "$2" 15; }
sanitize synccheck product
variants=${AB_VARIANTS:-bar push direct}
for ((r = 1; r <= ${AB_ROUNDS:-1}; r++)); do fused_ab_round $r 15 $variants; done
node research/scripts/probe/fused-ab-table.mjs "$out/ab" $variants | tee "$out/table.txt"
# the direct candidate: the whole fused GPU test (no sanitizer), then synccheck; then racecheck of the product
fused_gpu_test direct 15
sanitize synccheck direct
sanitize racecheck product
