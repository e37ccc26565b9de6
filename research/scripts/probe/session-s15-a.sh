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
out=${OUT:-/tmp/llcomm-s15-a}
mkdir -p "$out/ab" "$out/sass"
export NCCL_NVLS_ENABLE=0 LLCOMM_TEST_BACKEND=cuda
export LLCOMM_CACHE_DIR=${LLCOMM_CACHE_DIR:-/tmp/llcomm-cache}
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
# compute-sanitizer on the fused GPU test's main matrix only (--test-name-pattern model-exact: every fused algorithm,
# 2 and 8 ranks, the reduced shapes; the split kernels' cases push at 1 row, C = 1 at 16), on the product kernels or
# a tree ($2: a folder under ab15/, or "product").
sanitize() { # $1: tool, $2: tree
  local env=() tag=$1-$2
  [ "$2" = product ] || env=(LLCOMM_KERNELS_DIR=$(realpath ab15/$2) LLCOMM_CACHE_DIR=/tmp/llcomm-cache-15-$2)
  env "${env[@]}" LLCOMM_GPU_NO_NCCL=1 LLCOMM_GPU_REDUCED=1 LLCOMM_GPU_RESULTS="$out/san-$tag.jsonl" \
    LLCOMM_GPU_CASE_PREFIX=sanitizer-$tag timeout "${SAN_LIMIT_S:-110}" \
    compute-sanitizer --tool "$1" --error-exitcode 9 --target-processes all \
    node --test --test-name-pattern=model-exact packages/llcomm/dist/test/gpu/fused.test.js > "$out/san-$tag.log" 2>&1
  local rc=$?
  echo "sanitizer $tag: rc $rc, cases passed $(grep -c '"passed":true' "$out/san-$tag.jsonl" 2>/dev/null), failed $(grep -c '"passed":false' "$out/san-$tag.jsonl" 2>/dev/null); $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$out/san-$tag.log" | tail -n 1)"
}
sanitize synccheck product
variants=${AB_VARIANTS:-bar push direct}
for ((r = 1; r <= ${AB_ROUNDS:-1}; r++)); do
  for v in $variants; do
    case $v in
      bar) env=(LLCOMM_FUSED_SPLIT_PUSH=0) ;;
      push) env=(LLCOMM_FUSED_SPLIT_PUSH=1) ;;
      *) env=(LLCOMM_KERNELS_DIR=$(realpath ab15/$v) LLCOMM_CACHE_DIR=/tmp/llcomm-cache-15-$v) ;;
    esac
    env "${env[@]}" timeout 100 node scripts/bench-fused.mjs \
      --ranks 8 --hidden 4096,8192 --batch 1,2,4,8,16 --dtype bf16 --out "$out/ab/$v-r$r.json" > "$out/ab/$v-r$r.log" 2>&1
    echo "$v round $r: rc $?"
  done
done
node research/scripts/probe/fused-ab-table.mjs "$out/ab" $variants | tee "$out/table.txt"
# the direct candidate: the whole fused GPU test (no sanitizer), then synccheck; then racecheck of the product
LLCOMM_KERNELS_DIR=$(realpath ab15/direct) LLCOMM_CACHE_DIR=/tmp/llcomm-cache-15-direct LLCOMM_GPU_NO_NCCL=1 \
  LLCOMM_GPU_RESULTS="$out/gpu-direct.jsonl" LLCOMM_GPU_CASE_PREFIX=direct timeout 110 \
  node --test packages/llcomm/dist/test/gpu/fused.test.js > "$out/gpu-direct.log" 2>&1
echo "gpu-test direct (fused.test.js): rc $?, cases passed $(grep -c '"passed":true' "$out/gpu-direct.jsonl" 2>/dev/null), failed $(grep -c '"passed":false' "$out/gpu-direct.jsonl" 2>/dev/null)"
sanitize synccheck direct
sanitize racecheck product
