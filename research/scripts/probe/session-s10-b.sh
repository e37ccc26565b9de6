#!/usr/bin/env bash
# Session 10, second device call (2026-12-03; issue 22): the first call's candidate cost oneshot-ll +0.3 / +0.8 /
# +1.8 us at 16 / 32 / 64 ranks, 8 B, and twoshot-sentinel's serial path +0.1-0.24 us at 2 ranks. Trees (ab/):
# base = HEAD; new = the working tree (the serial path's 64-bit split assigned before the epoch, in the !spread
# branch); A = new with LlBuffer::blockRecvReduceSpread as in HEAD (window division, t % slots); Awin = new with only
# that function's stage-window division restored. 3 interleaved rounds, bf16, oneshot-ll / oneshot-sentinel /
# twoshot-sentinel, 8 B / 8 KB / 64 KB, 2, 16, 32, 64 virtual ranks of GPU 0; then Nsight Compute on oneshot-ll at
# 64 r 8 B (base, new). Tables last; JSON in $OUT/s10b.json, the CSVs in $OUT/ncu-s10b.tgz.
set -uo pipefail
cd "$(dirname "$0")/../../.."
out=${OUT:-/tmp/llcomm-s10-b}
mkdir -p "$out"
export LLCOMM_CACHE_DIR=${LLCOMM_CACHE_DIR:-/tmp/llcomm-cache} NCCL_NVLS_ENABLE=0
for n in 2 16 32 64; do
  devs=$(printf '0,%.0s' $(seq "$n")); devs=${devs%,}
  t0=$(date +%s)
  OUT=$out/v$n timeout 200 bash research/scripts/probe/ab-kernels.sh 3 base=ab/base new=ab/new A=ab/A Awin=ab/Awin -- \
    --devices "$devs" --algorithms oneshot-ll,oneshot-sentinel,twoshot-sentinel --dtype bf16 \
    --sizes 8,8K,64K --iters 300 --warmup 50 > "$out/ab-v$n.log" 2>&1
  echo "ab $n ranks: rc $? $(( $(date +%s) - t0 )) s"
done
# Nsight Compute, one launch each: oneshot-ll at 64 r 8 B, base and new (executed instructions and stall samples)
res=/tmp/ncu-s10b
rm -rf "$res" && mkdir -p "$res"
devs=$(printf '0,%.0s' $(seq 64)); devs=${devs%,}
for tree in base new; do
  tag=$tree-oneshot_ll-v64-8
  LLCOMM_KERNELS_DIR=$(realpath ab/$tree) timeout 150 ncu --clock-control none --kernel-name "regex:llcomm_oneshot_ll_" \
    --launch-skip 10 --launch-count 1 --section SourceCounters --section WarpStateStats --export "$res/ncu-$tag" \
    --force-overwrite node packages/tools/bin/llcomm.js bench --devices "$devs" --algorithms oneshot-ll --dtype bf16 \
    --sizes 8 --iters 20 --warmup 1 --no-progress > "$res/ncu-$tag.log" 2>&1
  echo "ncu $tag: rc $?"
  ncu --import "$res/ncu-$tag.ncu-rep" --page source --csv --print-source sass > "$res/ncu-$tag.source.csv" 2>&1
  rm -f "$res/ncu-$tag.ncu-rep"
done
tar -czf "$out/ncu-s10b.tgz" -C /tmp ncu-s10b
echo "== executed SASS instructions a warp"
python3 research/scripts/probe/sass-executed.py "$res"/*.source.csv
export BUNDLE="$out/s10b.json"
node -e 'const fs = require("fs"); const docs = process.argv.slice(1).filter((f) => fs.existsSync(f)).map((f) => ({ file: f, doc: JSON.parse(fs.readFileSync(f, "utf8")) }));
  fs.writeFileSync(process.env.BUNDLE, JSON.stringify({ docs }))' "$out"/v*/ab/*.json
echo "== ab (median us over rounds)"
for n in 2 16 32 64; do sed -n '/^case/,$p' "$out/ab-v$n.log" | grep -v "^$" | cut -c1-120; done
