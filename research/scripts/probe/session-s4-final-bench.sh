#!/usr/bin/env bash
# The closing measurements of 2026-12-02 (one device step, after the GPU test): issue 22's goal table in one run
# (research/scripts/probe/scale-bench.sh at 2-64 virtual ranks, no tune), the 8-rank 256 KB / 1 MB rows again with a
# 4 MB receive buffer (1 MB in one launch), and the fused bench at 8 ranks (its fused-auto column now the library's
# own 'auto'). Outputs in $OUT; the goal table is printed last.
set -uo pipefail
cd "$(dirname "$0")/../../.."
out=${OUT:-/tmp/llcomm-s4-final}
mkdir -p "$out"
llcomm() { node packages/tools/bin/llcomm.js "$@"; }
devs8=0,0,0,0,0,0,0,0
timeout 40 node packages/tools/bin/llcomm.js bench --no-progress --devices $devs8 --algorithms twoshot-sentinel,oneshot-barrier,oneshot-sentinel \
  --dtype bf16 --sizes 256K,1M --buffer-bytes 4M --repeat 3 --iters 300 --warmup 50 \
  --json "$out/bench-v8-bb4M.json" > "$out/bench-v8-bb4M.log" 2>&1
echo "bench 8 ranks, 4 MB buffer: rc $?"
timeout 40 node scripts/bench-fused.mjs --ranks 8 --hidden 4096,8192 --batch 1,2,4,8,16 --out "$out/bench-fused-v8.json" \
  > "$out/bench-fused-v8.log" 2>&1
echo "fused bench: rc $?"
OUT=$out SCALE_TUNE_RANKS="" timeout 150 bash research/scripts/probe/scale-bench.sh > "$out/scale-bench.log" 2>&1
echo "scale bench: rc $?"
echo "== fused"; sed -n '/^ranks hidden batch/,$p' "$out/bench-fused-v8.log" | grep -v "probes\|check\|parts\|skipped" | head -14
echo "== 8 ranks, 4 MB buffer"; grep -E "^\s*(256K|1M|size|bytes)|twoshot|barrier" "$out/bench-v8-bb4M.log" | head -12
echo "== goal table"; tail -22 "$out/scale-bench.log"
