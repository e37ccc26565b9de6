#!/usr/bin/env bash
# One device call for issue 21 (session 12, 2026-12-04): the fused two-shot's norm pass from a shared-memory row
# cache (the working tree's fused_rmsnorm_twoshot.cu + rmsnorm.cuh llcRmsNormRowCached: the residual as stored kept
# in the stage, the all-gather's first member's residual loaded before its poll, the weights before the sum of
# squares) against HEAD's kernels, and the same with fused-patches/split-early.patch on the split kernel.
# Trees (made here by `bash research/scripts/probe/session-fused-tail.sh make`, untracked, they travel):
#   ab/base   = HEAD's packages/llcomm/kernels, ab/tail = the working tree's, ab/tailse = ab/tail + split-early.
# On the GPU machine: 1. the fused GPU test on ab/tailse (both changes; bitwise against the unfused composition);
# 2. AB_ROUNDS (3) interleaved rounds of scripts/bench-fused.mjs per tree, 8 and 16 virtual ranks, bf16, hidden
# 4096 / 8192, batch 1, 4, 8, 16; no round starts after 430 s; the medians table last (fused-ab-table.mjs).
# Prediction (written before the run): two-shot -0.5..-1.1 us at every shape (two global round trips of the norm
# pass and the all-gather's residual load off the critical path); split-early -0.2..-0.3 at batch 1-2, +0.5..+0.8
# at batch 8-16 (as measured 12-02); one-shot, unfused unchanged.
set -uo pipefail
cd "$(dirname "$0")/../../.."
if [ "${1:-}" = make ]; then
  rm -rf ab/base ab/tail ab/tailse && mkdir -p ab
  tmp=$(mktemp -d) && git archive HEAD packages/llcomm/kernels | tar -x -C "$tmp" && mv "$tmp/packages/llcomm/kernels" ab/base && rm -rf "$tmp"
  cp -a packages/llcomm/kernels ab/tail && cp -a packages/llcomm/kernels ab/tailse
  (cd ab/tailse && patch -p1 -s < ../../research/scripts/probe/fused-patches/split-early.patch) || exit 1
  for t in base tail tailse; do
    for f in fused_rmsnorm_twoshot fused_rmsnorm_split; do
      nvcc -arch=sm_90 -cubin -std=c++17 -I ab/$t ab/$t/allreduce/$f.cu -o /tmp/$t-$f.cubin -Xptxas -v 2>&1 |
        grep -E 'spill' | sort | uniq -c | sed "s|^|$t $f: |"
    done
  done
  exit 0
fi
out=${OUT:-/tmp/llcomm-fused-tail}
mkdir -p "$out/ab"
t0=$(date +%s)
export NCCL_NVLS_ENABLE=0
mkdir -p "$out/gpu" && OUT=$out/gpu LLCOMM_KERNELS_DIR=$(realpath ab/tailse) LLCOMM_CACHE_DIR=/tmp/llcomm-cache-tailse \
  LLCOMM_SKIP_SANITIZER=1 LLCOMM_GPU_TESTS="fused" timeout 150 bash scripts/gpu-test.sh > "$out/1-gpu-fused.log" 2>&1
echo "== 1 fused GPU test on ab/tailse: exit $? at $(( $(date +%s) - t0 )) s"
tail -6 "$out/1-gpu-fused.log"
for ((r = 1; r <= ${AB_ROUNDS:-3}; r++)); do
  if [ "$(( $(date +%s) - t0 ))" -ge 430 ]; then echo "round $r and later: past 430 s, skipped"; break; fi
  for v in base tail tailse; do
    s=$(date +%s)
    LLCOMM_KERNELS_DIR=$(realpath ab/$v) LLCOMM_CACHE_DIR=/tmp/llcomm-cache-$v timeout 200 node scripts/bench-fused.mjs \
      --ranks 8,16 --hidden 4096,8192 --batch 1,4,8,16 --dtype bf16 --out "$out/ab/$v-r$r.json" > "$out/ab/$v-r$r.log" 2>&1
    echo "$v round $r: rc $? $(( $(date +%s) - s )) s"
  done
done
node research/scripts/probe/fused-ab-table.mjs "$out/ab" base tail tailse | tee "$out/table.txt"
