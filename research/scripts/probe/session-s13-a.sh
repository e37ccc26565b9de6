#!/usr/bin/env bash
# Issue 21, written in session 13 (2026-12-04) for the next device call (this session had none: no machine was lent).
# Candidates (same bits by construction: the same adds in the same order), as patches on HEAD's kernels:
#   inv = fused-patches/norm-unrolled.patch: the norm passes' inverse RMS with its shared loads unrolled
#         (llcNormThreads: the thread count a compile-time constant on the GPU) and the split gather without a branch
#         per load;
#   rlx = inv + fused-patches/split-relaxed-arrive.patch: the split's second cluster arrive relaxed in the warps that
#         read no other block's shared memory (release in the rest).
# Against HEAD's kernels (base). Then the kernel timeline with the SM clock and the blocks' latest-thread marks
# (timeline-tree.py) on base and rlx, and the SASS of the barriers.
# The patches are against da712b8's kernels (HEAD's through session 13); `make` stops if they no longer apply.
# Here: `bash research/scripts/probe/session-s13-a.sh make` (ab/base, ab/inv, ab/rlx, ab/tl-base, ab/tl-rlx; untracked,
# they travel); on the GPU machine, the fused GPU test on the candidate first:
#   LLCOMM_KERNELS_DIR=$(realpath ab/rlx) LLCOMM_GPU_TESTS=fused LLCOMM_SKIP_SANITIZER=1 GPU_TEST_LIMIT_S=200 \
#     SCRIPT_LIMIT_S=400 STEPS="gpu-test script:research/scripts/probe/session-s13-a.sh launch-overhead" \
#     bash scripts/device-session.sh
# (launch-overhead: issue 17's eager ratio in the same call, ~40 s at its default 6 repetitions. It measures
# oneshot-ll and the empty kernel, whose sources the candidate patches do not touch, so the exported
# LLCOMM_KERNELS_DIR gives it the same cubins as the product's.)
# Prediction (written before any run): the RMSNorm kernel -0.2..-0.35 us (the ~0.6 us of inverse RMS in the
# 2026-12-04 timeline is mostly serial shared loads: 15 load-add pairs in a rolled loop, then 31 in groups of four),
# and so unfused, the fused one-shot and two-shot by the same; split (inv) -0.0..-0.3 (its gather was already issued
# all at once, but behind a branch per load); rlx a further -0.05..-0.2 at the split shapes (batch 1-4) if the
# release of the second arrive is a membar of its own, paid per warp. Ratios: two-shot cells (4096 b16, 8192 b16) ~-0.005..-0.01;
# split cells worse by ~0.03 unless split gains as much as the RMSNorm kernel.
set -uo pipefail
cd "$(dirname "$0")/../../.."
if [ "${1:-}" = make ]; then
  rm -rf ab && mkdir -p ab
  tmp=$(mktemp -d) && git archive HEAD packages/llcomm/kernels | tar -x -C "$tmp" && mv "$tmp/packages/llcomm/kernels" ab/base && rm -rf "$tmp"
  patches=research/scripts/probe/fused-patches
  cp -a ab/base ab/inv && (cd ab/inv && patch -s -p1 < "../../$patches/norm-unrolled.patch") || exit 1
  cp -a ab/inv ab/rlx && (cd ab/rlx && patch -s -p1 < "../../$patches/split-relaxed-arrive.patch") || exit 1
  for v in base rlx; do python3 research/scripts/probe/timeline-tree.py ab/$v ab/tl-$v; done
  exit 0
fi
out=${OUT:-/tmp/llcomm-s13-a}
mkdir -p "$out/ab" "$out/sass"
t0=$(date +%s)
export NCCL_NVLS_ENABLE=0
# SASS of the barriers and the gather (cuobjdump is on the GPU machine)
for v in base rlx; do
  for f in fused_rmsnorm_split rmsnorm fused_rmsnorm_twoshot; do
    nvcc -arch sm_90 -cubin -std=c++17 -I ab/$v ab/$v/allreduce/$f.cu -o /tmp/$v-$f.cubin > /dev/null 2>&1 &&
      cuobjdump -sass /tmp/$v-$f.cubin > "$out/sass/$v-$f.sass" 2>&1
  done
  for f in fused_rmsnorm_split rmsnorm fused_rmsnorm_twoshot; do
    # per kernel: MEMBAR and cluster-barrier instructions (the relaxed arrive should drop a MEMBAR in the split kernels)
    awk -v t="$v" '/Function :/ { fn = $3 } /MEMBAR/ { m[fn]++ } /CGABAR/ { c[fn]++ }
      END { for (f in c) printf "sass %s %s: MEMBAR %d, cluster barrier %d\n", t, f, m[f], c[f]
            for (f in m) if (!(f in c)) printf "sass %s %s: MEMBAR %d\n", t, f, m[f] }' "$out/sass/$v-$f.sass"
  done
done
for ((r = 1; r <= ${AB_ROUNDS:-3}; r++)); do
  if [ "$(( $(date +%s) - t0 ))" -ge 220 ]; then echo "round $r and later: past 220 s, skipped"; break; fi
  for v in base inv rlx; do
    s=$(date +%s)
    LLCOMM_KERNELS_DIR=$(realpath ab/$v) LLCOMM_CACHE_DIR=/tmp/llcomm-cache-$v timeout 120 node scripts/bench-fused.mjs \
      --ranks 8 --hidden 4096,8192 --batch 1,2,4,8,16 --dtype bf16 --out "$out/ab/$v-r$r.json" > "$out/ab/$v-r$r.log" 2>&1
    echo "$v round $r: rc $? $(( $(date +%s) - s )) s"
  done
done
for v in base rlx; do
  LLCOMM_KERNELS_DIR=$(realpath ab/tl-$v) LLCOMM_CACHE_DIR=/tmp/llcomm-cache-tl-$v timeout 100 node \
    research/scripts/probe/fused-timeline.mjs --ranks 8 --shapes 4096x1,4096x16,8192x1 --json "$out/timeline-$v.json" \
    > "$out/timeline-$v.log" 2>&1
  echo "timeline $v: rc $?"
done
cp "$out/ab/rlx-r3.json" "$out/bench-fused-rlx.json" 2>/dev/null
for v in base rlx; do echo "== timeline $v"; grep -v "^#" "$out/timeline-$v.log" | cut -c1-230; done
node research/scripts/probe/fused-ab-table.mjs "$out/ab" base inv rlx | tee "$out/table.txt"
