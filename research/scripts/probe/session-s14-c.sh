#!/usr/bin/env bash
# Issue 21, session 14 (2026-12-07), after session-s14-b.sh: the split kernels' q exchange without a release
# (`push` in llcomm/fused_split.cuh: st.async into the other blocks' shared memory, counted by an mbarrier; the
# cluster barrier once, relaxed, for the mbarrier's init; no MEMBAR.ALL.GPU after the kernel's start) against HEAD's
# two release barriers (ab14/head), with the timing-only probe of relaxed arrives (ab14/relx, no ordering at all) as
# the bound. Prediction (written before the run): push within 0.15 us of relx at the split shapes (8 ranks, hidden
# 4096 / 8192, batch 1-4: relx measured -0.83..-0.96 against head), since it keeps one relaxed cluster barrier at the
# start, an mbarrier wait and a __syncthreads more than relx.
# Second run (TREES="head push push2" TL_TREES="head push2"): push2 = the init and the relaxed arrive after the sends
# instead of at the kernel's start (the first run's timeline had the sends 0.22 us later than head's), C = 1 on the
# barrier path (push lost 0.64 us there at 4096 x 16). Prediction: push2 -0.15..-0.25 us against push at batch 1-4.
# Trees (made here): ab14/head = 31070c0's kernels, ab14/relx = head with both arrives relaxed, ab14/push = the
# candidate (the working tree's kernels), ab14/tl-<tree> = timeline-tree.py copies. Then the timelines of head and push.
set -uo pipefail
cd "$(dirname "$0")/../../.."
out=${OUT:-/tmp/llcomm-s14-c}
mkdir -p "$out/ab"
export NCCL_NVLS_ENABLE=0
trees=${TREES:-head push relx}
for ((r = 1; r <= ${AB_ROUNDS:-3}; r++)); do
  for v in $trees; do
    LLCOMM_KERNELS_DIR=$(realpath ab14/$v) LLCOMM_CACHE_DIR=/tmp/llcomm-cache-14-$v timeout 120 node scripts/bench-fused.mjs \
      --ranks 8 --hidden 4096,8192 --batch 1,2,4,8,16 --dtype bf16 --out "$out/ab/$v-r$r.json" > "$out/ab/$v-r$r.log" 2>&1
    echo "$v round $r: rc $?"
  done
done
for v in ${TL_TREES:-head push}; do
  LLCOMM_KERNELS_DIR=$(realpath ab14/tl-$v) LLCOMM_CACHE_DIR=/tmp/llcomm-cache-14-tl-$v timeout 100 node \
    research/scripts/probe/fused-timeline.mjs --ranks 8 --shapes 4096x1,8192x1,4096x4 --json "$out/timeline-$v.json" \
    > "$out/timeline-$v.log" 2>&1
  echo "timeline $v: rc $?"
done
for v in ${TL_TREES:-head push}; do echo "== timeline $v"; grep -E "fused-split|rmsnorm " "$out/timeline-$v.log" | cut -c1-230; done
# SASS of the candidate's split kernels: no MEMBAR.ALL.GPU expected after the start
mkdir -p "$out/sass"
for v in ${TL_TREES:-head push}; do
  nvcc -arch sm_90 -cubin -std=c++17 -I ab14/$v ab14/$v/allreduce/fused_rmsnorm_split.cu -o /tmp/$v-split.cubin > /dev/null 2>&1 &&
    cuobjdump -sass /tmp/$v-split.cubin > "$out/sass/$v-fused_rmsnorm_split.sass" 2>&1
  awk -v t="$v" '/Function :/ { fn = $3 } /MEMBAR/ { m[fn]++ } /CGABAR_ARV/ { c[fn]++ } /SYNCS/ { y[fn]++ }
    END { for (f in c) printf "sass %s %s: MEMBAR %d, cluster arrive %d, SYNCS %d\n", t, f, m[f], c[f], y[f] }' \
    "$out/sass/$v-fused_rmsnorm_split.sass"
done
node research/scripts/probe/fused-ab-table.mjs "$out/ab" $trees | tee "$out/table.txt"
