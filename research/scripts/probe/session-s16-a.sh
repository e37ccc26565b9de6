#!/usr/bin/env bash
# Issue 21, session 16 (2026-12-07): what session 15 could not run (research/scripts/probe/session-s15-a.sh), in the
# order of what matters if the call is cut short.
# Predictions (written before the run):
#   - direct (ab15/direct: fused-patches/split-push-direct.patch rebased on aa6ee66; each unit's q st.async'd from
#     its register into every block of its cluster, its own included, the cluster wait for the mbarrier init moved
#     to the start) against push: split -0.1..-0.2 us at batch 1-4 (C = 4), 4096 and 8192; batch 8 (C = 2) -0.05..-0.1;
#     batch 16 (C = 1) unchanged. Risk: the early cluster wait costs the barrier's latency before the receives.
#   - unfused-all (every llcomm AllReduce + RMSNorm): the fastest unfused differs from 'auto''s at 8192 x 4 (the
#     one-shot barrier 6.4 us where twoshot-sentinel ran 5.7 at batch 8): best fused / fastest unfused there ~0.87
#     rather than 0.82; elsewhere within 0.05 us of 'auto''s unfused.
#   - dearly (ab15/dearly: direct + session 2's split-early residual/weights cache for the push sentinel kernel, in
#     the q area's free words, only where every thread has at most one slot and the grid has at most 64 blocks:
#     4096 b1 / b2, 8192 b1): a further -0.15..-0.25 us there (split-early measured -0.2..-0.3 at those shapes on the
#     H200 in session 2, before the early input load was merged, which took part of that); elsewhere = direct.
#   - SASS: no MEMBAR, no WARPSYNC in the push kernels (product and direct); synccheck / racecheck clean.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source research/scripts/probe/fused-ab-lib.sh
fused_session_init /tmp/llcomm-s16-a
mkdir -p "$out/sass"
variants=${AB_VARIANTS:-push direct dearly bar}
for ((r = 1; r <= ${AB_ROUNDS:-2}; r++)); do fused_ab_round $r 16 $variants; done
node research/scripts/probe/fused-ab-table.mjs "$out/ab" $variants > "$out/ab-table.txt" 2>&1
# the strict baseline: every llcomm AllReduce + RMSNorm, 2 and 8 ranks, batch 1-64 (product kernels)
timeout 200 node scripts/bench-fused.mjs --ranks 8,2 --hidden 4096,8192 --batch 1,2,4,8,16,32,64 --dtype bf16 \
  --unfused-all --out "$out/bench-fused-unfused-all.json" > "$out/bench-fused-unfused-all.log" 2>&1
say "bench unfused-all: rc $?"
k=packages/llcomm/kernels
for kf in $k/fused_rmsnorm_split_push $k/fused_rmsnorm_split_ll_push ab15/direct/fused_rmsnorm_split_push \
  ab15/dearly/fused_rmsnorm_split_push; do
  kd=$(dirname $kf) f=$(basename $kf)
  tag=$([ $kd = $k ] && echo $f || echo $(basename $kd)-$f)
  nvcc -arch sm_90 -cubin -std=c++17 -I $kd $kd/allreduce/$f.cu -o /tmp/$tag.cubin > /dev/null 2>&1 &&
    cuobjdump -sass /tmp/$tag.cubin > "$out/sass/$tag.sass" 2>&1
  awk -v tag=$tag '/Function :/ { fn = $3 } /MEMBAR/ { m[fn]++ } /WARPSYNC/ { w[fn]++ } /SYNCS/ { y[fn]++ } /STL|LDL/ { l[fn]++ }
    END { for (f in y) printf "sass %s %s: MEMBAR %d, WARPSYNC %d, SYNCS %d, local ld/st %d\n", tag, f, m[f], w[f], y[f], l[f] }' \
    "$out/sass/$tag.sass" | grep -E 'bf16|f32' | head -4 | tee -a "$summary"
done
for tree in ${GPU_TEST_TREES-direct dearly}; do fused_gpu_test $tree 16; done
for x in ${SANITIZE-synccheck:direct synccheck:product racecheck:product}; do fused_sanitize ${x%%:*} ${x#*:} 16; done
echo "== bench unfused-all (tail)"; grep -E '^ +[28] |unfused each' "$out/bench-fused-unfused-all.log" | sed -E 's/ +/ /g' | cut -c1-230
echo "== A/B"; cat "$out/ab-table.txt"
echo "== summary"; cat "$summary"
