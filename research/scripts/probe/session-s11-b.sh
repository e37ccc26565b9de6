#!/usr/bin/env bash
# Session 11, second device call (2026-12-03; issue 22 items 1 and 3). v3 (the working tree, committed) = v2 (owners
# with data only, loads and polls batched 8 owners at a time; session-s11-a.sh) + a single-owner all-gather path
# (the 2-rank case, and small calls: no 8-wide poll arithmetic where one owner is left).
# (1) A/B, 3 interleaved rounds, base (ab/base: the kernels before, 23c0378) / v2 (ab/v2) / v3, twoshot-atomic and
#     oneshot-barrier, bf16 and f32, 8 B / 8 KB / 64 KB at 2-64 virtual ranks (and 256 KB, 1 MB at 8);
# (2) the goal table of issue 22 on the product kernels (scale-bench.sh: every barrier-free algorithm beside
#     oneshot-barrier, bf16, 3 rounds in one process per rank count) and `llcomm tune` at 16, 32 and 64 ranks;
# (3) the model's grid (session-s10-d.sh: 2-64 virtual ranks, bf16 and f32, every algorithm, 8 B - 1 MB, 2 rounds).
# JSON bundled at the top of $OUT (s11b-ab.json, scale-bench.json, tune-scale.json, grid.json); tables last.
set -uo pipefail
cd "$(dirname "$0")/../../.."
out=${OUT:-/tmp/llcomm-s11-b}
mkdir -p "$out"
export LLCOMM_CACHE_DIR=${LLCOMM_CACHE_DIR:-/tmp/llcomm-cache} NCCL_NVLS_ENABLE=0
for n in 2 8 16 32 64; do
  devs=$(printf '0,%.0s' $(seq "$n")); devs=${devs%,}
  sizes=8,8K,64K
  [ "$n" = 8 ] && sizes=8,8K,64K,256K,1M
  t0=$(date +%s)
  OUT=$out/ab/v$n timeout 200 bash research/scripts/probe/ab-kernels.sh 3 base=ab/base v2=ab/v2 v3=packages/llcomm/kernels -- \
    --devices "$devs" --algorithms twoshot-atomic,oneshot-barrier --dtype bf16,f32 --sizes "$sizes" \
    --iters 300 --warmup 50 > "$out/ab-v$n.log" 2>&1
  echo "ab $n ranks: rc $? $(( $(date +%s) - t0 )) s"
done
BUNDLE="$out/s11b-ab.json" node -e 'const fs = require("fs"); const docs = process.argv.slice(1).map((f) => ({ file: f, doc: JSON.parse(fs.readFileSync(f, "utf8")) }));
  fs.writeFileSync(process.env.BUNDLE, JSON.stringify({ docs }))' "$out"/ab/v*/ab/*.json
mkdir -p "$out/scale" "$out/grid"
OUT=$out/scale bash research/scripts/probe/scale-bench.sh > "$out/scale-bench.log" 2>&1
echo "scale-bench: rc $?"
cp "$out/scale/scale-bench.json" "$out/scale/tune-scale.json" "$out/" 2>/dev/null
OUT=$out/grid GRID_STEP_S=75 bash research/scripts/probe/session-s10-d.sh > "$out/grid.log" 2>&1
echo "grid: rc $?"
cp "$out/grid/grid.json" "$out/" 2>/dev/null
tail -8 "$out/grid.log"
echo "== goal table (product kernels)"
tail -24 "$out/scale-bench.log"
echo "== ab (median us over rounds)"
for n in 2 8 16 32 64; do sed -n '/^case/,$p' "$out/ab-v$n.log" | grep -v "^$" | grep -v oneshot-barrier | cut -c1-120; done
