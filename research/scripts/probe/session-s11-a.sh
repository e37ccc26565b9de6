#!/usr/bin/env bash
# Session 11, first device call (2026-12-03; issue 22 item 1, twoshot-atomic). Session 10's A/B of the 12-01 batch
# patch (research/results/atomic-batch-h200-2026-12-03/) won 1.2-2x at 8-64 ranks from 8 KB but lost at 2 ranks
# (8 KB 7.03 -> 10.31 us) and at 8 B from 16 ranks (64 ranks 16.77 -> 20.63). v2 (the working tree) visits only the
# owners with data (parts 0 .. active - 1: one owner at 8 B), batches the loads and polls over those, and drops the
# per-owner 64-bit piece arithmetic. Trees, made here before the call: ab/base = HEAD's kernels, ab/batch = HEAD +
# scale-patches/batch-twoshot-atomic.patch, v2 = packages/llcomm/kernels.
# (1) A/B, 3 interleaved rounds, bf16 and f32, twoshot-atomic beside oneshot-barrier (the control), 8 B / 8 KB /
#     64 KB at 2-64 virtual ranks of GPU 0 (and 256 KB, 1 MB at 8);
# (2) Nsight Compute executed instructions a warp, one launch: twoshot-atomic bf16 at 2 ranks 8 KB (base, batch, v2)
#     and 16 ranks 8 KB (base, v2).
# Tables last; JSON bundled in $OUT/s11a.json, the CSVs in $OUT/ncu-s11a.tgz.
set -uo pipefail
cd "$(dirname "$0")/../../.."
out=${OUT:-/tmp/llcomm-s11-a}
mkdir -p "$out"
export LLCOMM_CACHE_DIR=${LLCOMM_CACHE_DIR:-/tmp/llcomm-cache} NCCL_NVLS_ENABLE=0
for n in 2 8 16 32 64; do
  devs=$(printf '0,%.0s' $(seq "$n")); devs=${devs%,}
  sizes=8,8K,64K
  [ "$n" = 8 ] && sizes=8,8K,64K,256K,1M
  t0=$(date +%s)
  OUT=$out/v$n timeout 200 bash research/scripts/probe/ab-kernels.sh 3 base=ab/base batch=ab/batch v2=packages/llcomm/kernels -- \
    --devices "$devs" --algorithms twoshot-atomic,oneshot-barrier --dtype bf16,f32 --sizes "$sizes" \
    --iters 300 --warmup 50 > "$out/ab-v$n.log" 2>&1
  echo "ab $n ranks: rc $? $(( $(date +%s) - t0 )) s"
done
res=/tmp/ncu-s11a
rm -rf "$res" && mkdir -p "$res"
for c in base:2 batch:2 v2:2 base:16 v2:16; do
  IFS=: read -r tree n <<< "$c"
  dir=packages/llcomm/kernels; [ "$tree" != v2 ] && dir=ab/$tree
  devs=$(printf '0,%.0s' $(seq "$n")); devs=${devs%,}
  tag=$tree-atomic-v$n-8K
  t0=$(date +%s)
  LLCOMM_KERNELS_DIR=$(realpath "$dir") timeout 150 ncu --clock-control none --kernel-name "regex:llcomm_twoshot_atomic_" \
    --launch-skip 10 --launch-count 1 --section SourceCounters --export "$res/ncu-$tag" --force-overwrite \
    node packages/tools/bin/llcomm.js bench --devices "$devs" --algorithms twoshot-atomic --dtype bf16 --sizes 8K \
    --iters 20 --warmup 1 --no-progress > "$res/ncu-$tag.log" 2>&1
  echo "ncu $tag: rc $? $(( $(date +%s) - t0 )) s"
  ncu --import "$res/ncu-$tag.ncu-rep" --page source --csv --print-source sass > "$res/ncu-$tag.source.csv" 2>&1
  rm -f "$res/ncu-$tag.ncu-rep"
done
tar -czf "$out/ncu-s11a.tgz" -C /tmp ncu-s11a
export BUNDLE="$out/s11a.json"
node -e 'const fs = require("fs"); const docs = process.argv.slice(1).filter((f) => fs.existsSync(f)).map((f) => ({ file: f, doc: JSON.parse(fs.readFileSync(f, "utf8")) }));
  fs.writeFileSync(process.env.BUNDLE, JSON.stringify({ docs }))' "$out"/v*/ab/*.json
echo "== executed SASS instructions a warp"
python3 research/scripts/probe/sass-executed.py "$res"/*.source.csv
echo "== ab (median us over rounds)"
for n in 2 8 16 32 64; do sed -n '/^case/,$p' "$out/ab-v$n.log" | grep -v "^$" | cut -c1-120; done
