#!/usr/bin/env bash
# Session 10, first device call (2026-12-03; issue 22, the prologue's instruction count): the working tree's kernels
# (twoshot-sentinel's spread path in 32-bit part arithmetic with one division a role, the pull kernel without a
# spread path, LlBuffer's spread helpers with one division for slot and group and no stage-window division where the
# stage holds every rank) against HEAD's (ab/base: git archive of packages/llcomm/kernels).
# (1) A/B, 3 interleaved rounds, bf16, oneshot-ll / oneshot-sentinel / twoshot-sentinel / oneshot-barrier, 8 B, 8 KB,
#     64 KB at 2-64 virtual ranks of GPU 0 (and 256 KB, 1 MB at 8: the serial and pull paths);
# (2) Nsight Compute's executed instructions per SASS instruction (SourceCounters), one launch: twoshot-sentinel at
#     16 r 64 KB and 32 r 8 KB (new; old: research/results/prologue-h200-2026-12-02/ncu-prologue.tgz) and
#     oneshot-sentinel at 32 r 8 KB (new and old). Counts a warp: research/scripts/probe/sass-executed.py.
# Tables printed last; JSON bundled in $OUT/s10a.json, the CSVs in $OUT/ncu-s10a.tgz.
set -uo pipefail
cd "$(dirname "$0")/../../.."
out=${OUT:-/tmp/llcomm-s10-a}
mkdir -p "$out"
export LLCOMM_CACHE_DIR=${LLCOMM_CACHE_DIR:-/tmp/llcomm-cache} NCCL_NVLS_ENABLE=0
for n in 2 8 16 32 64; do
  devs=$(printf '0,%.0s' $(seq "$n")); devs=${devs%,}
  sizes=8,8K,64K
  [ "$n" = 8 ] && sizes=8,8K,64K,256K,1M
  t0=$(date +%s)
  OUT=$out/v$n timeout 200 bash research/scripts/probe/ab-kernels.sh 3 base=ab/base new=packages/llcomm/kernels -- \
    --devices "$devs" --algorithms oneshot-ll,oneshot-sentinel,twoshot-sentinel,oneshot-barrier --dtype bf16 \
    --sizes "$sizes" --iters 300 --warmup 50 > "$out/ab-v$n.log" 2>&1
  echo "ab $n ranks: rc $? $(( $(date +%s) - t0 )) s"
done
res=/tmp/ncu-s10a
rm -rf "$res" && mkdir -p "$res"
for c in new:twoshot:16:64K new:twoshot:32:8K new:oneshot_sentinel:32:8K base:oneshot_sentinel:32:8K; do
  IFS=: read -r tree kern n size <<< "$c"
  dir=packages/llcomm/kernels; [ "$tree" = base ] && dir=ab/base
  alg=twoshot-sentinel; [ "$kern" = oneshot_sentinel ] && alg=oneshot-sentinel
  devs=$(printf '0,%.0s' $(seq "$n")); devs=${devs%,}
  tag=$tree-$kern-v$n-$size
  t0=$(date +%s)
  LLCOMM_KERNELS_DIR=$(realpath "$dir") timeout 150 ncu --clock-control none --kernel-name "regex:llcomm_${kern}_" \
    --launch-skip 10 --launch-count 1 --section SourceCounters --export "$res/ncu-$tag" --force-overwrite \
    node packages/tools/bin/llcomm.js bench --devices "$devs" --algorithms "$alg" --dtype bf16 --sizes "$size" \
    --iters 20 --warmup 1 --no-progress > "$res/ncu-$tag.log" 2>&1
  echo "ncu $tag: rc $? $(( $(date +%s) - t0 )) s"
  ncu --import "$res/ncu-$tag.ncu-rep" --page source --csv --print-source sass > "$res/ncu-$tag.source.csv" 2>&1
  rm -f "$res/ncu-$tag.ncu-rep"
done
tar -czf "$out/ncu-s10a.tgz" -C /tmp ncu-s10a
export BUNDLE="$out/s10a.json"
node -e 'const fs = require("fs"); const docs = process.argv.slice(1).filter((f) => fs.existsSync(f)).map((f) => ({ file: f, doc: JSON.parse(fs.readFileSync(f, "utf8")) }));
  fs.writeFileSync(process.env.BUNDLE, JSON.stringify({ docs }))' "$out"/v*/ab/*.json
echo "== executed SASS instructions a warp"
python3 research/scripts/probe/sass-executed.py "$res"/*.source.csv
echo "== ab (median us over rounds)"
for n in 2 8 16 32 64; do sed -n '/^case/,$p' "$out/ab-v$n.log" | grep -v "^$" | cut -c1-120; done
