#!/usr/bin/env bash
# Session 10, fifth device call (2026-12-03; issue 21, for the next session): (1) the fused-vs-unfused kernel bench at
# 8 virtual ranks on the current kernels (e1b554c's LlBuffer spread helpers are the fused split kernels' too), bf16,
# hidden 4096 and 8192, batch 1, 4, 16; (2) Nsight Compute's executed instructions a warp (SourceCounters, one launch
# each) of the kernels of one 8-rank, hidden-4096, batch-1 step: the fused split kernel (auto's there), and the
# unfused pair, oneshot-ll at 8 KB and the RMSNorm kernel: is the fused kernel's prologue issue-bound as
# twoshot-sentinel's was? JSON in $OUT (fused-8r.json), the CSVs in $OUT/ncu-s10e.tgz; counts printed last.
set -uo pipefail
cd "$(dirname "$0")/../../.."
out=${OUT:-/tmp/llcomm-s10-e}
mkdir -p "$out"
export LLCOMM_CACHE_DIR=${LLCOMM_CACHE_DIR:-/tmp/llcomm-cache} NCCL_NVLS_ENABLE=0
t0=$(date +%s)
timeout 90 node scripts/bench-fused.mjs --ranks 8 --hidden 4096,8192 --batch 1,4,16 --dtype bf16 \
  --out "$out/fused-8r.json" > "$out/fused-8r.log" 2>&1
echo "bench-fused 8 ranks: rc $? $(( $(date +%s) - t0 )) s"
res=/tmp/ncu-s10e
rm -rf "$res" && mkdir -p "$res"
ncu_one() { # tag kernel-regex command...
  local tag=$1 kern=$2; shift 2
  timeout 40 ncu --clock-control none --kernel-name "regex:$kern" --launch-skip 10 --launch-count 1 \
    --section SourceCounters --export "$res/ncu-$tag" --force-overwrite "$@" > "$res/ncu-$tag.log" 2>&1
  echo "ncu $tag: rc $?"
  ncu --import "$res/ncu-$tag.ncu-rep" --page source --csv --print-source sass > "$res/ncu-$tag.source.csv" 2>&1
  rm -f "$res/ncu-$tag.ncu-rep"
}
fused=(node scripts/bench-fused.mjs --ranks 8 --hidden 4096 --batch 1 --dtype bf16 --calls 20 --replays 2 --out /tmp/f.json)
ncu_one fused-split-v8-h4096-b1 '^llcomm_fused_rmsnorm_split_bf16$' "${fused[@]}"
ncu_one rmsnorm-v8-h4096-b1 '^llcomm_rmsnorm_bf16$' "${fused[@]}"
devs=$(printf '0,%.0s' $(seq 8)); devs=${devs%,}
ncu_one oneshot_ll-v8-8K '^llcomm_oneshot_ll_' node packages/tools/bin/llcomm.js bench --devices "$devs" \
  --algorithms oneshot-ll --dtype bf16 --sizes 8K --iters 20 --warmup 1 --no-progress
tar -czf "$out/ncu-s10e.tgz" -C /tmp ncu-s10e
echo "== executed SASS instructions a warp"
python3 research/scripts/probe/sass-executed.py "$res"/*.source.csv
echo "== fused bench"
tail -25 "$out/fused-8r.log"
