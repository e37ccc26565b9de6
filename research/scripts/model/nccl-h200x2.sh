#!/bin/sh
# NCCL's AllReduce in NCCL's own cost form (src/model/nccl-model.ts, docs/model.md §1 "NCCL"), fitted to two H200s
# and written to bench/results/model-nccl-h200x2-2026-11-29.txt:
#   npm run build && sh scripts/model/nccl-h200x2.sh > bench/results/model-nccl-h200x2-2026-11-29.txt
# Each section starts with its command. None writes the table: data/latency/platforms.json's h200 `nccl` block was
# written by section 1's command with --write added (its gb200 block copies the fit, see the sources).
# About 5 seconds of one core.
set -eu
OLD_BENCH=bench/results/cuda-h200x2-bench-2gpu-2026-11-29.json
BENCH=bench/results/cuda-h200x2-bench-2gpu-2026-11-29b.json
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

echo "\$ npm run build && sh scripts/model/nccl-h200x2.sh > bench/results/model-nccl-h200x2-2026-11-29.txt"
echo "# (at $(git rev-parse --short HEAD 2>/dev/null || echo 'an unknown commit'); every section below starts with its own command)"
echo

run() {
  echo "\$ $*"
  "$@"
  echo
}

echo "# 1. in-sample and held out: NCCL's cost form fitted to the 44 nccl rows of $BENCH (cf18cd4: 2 ranks, bf16 and f32, 8 B-16 MB)"
echo "#    fitted: ringLLBaseUs, ringLL128BaseUs, ringSimpleBaseUs (each where rows are assigned to it), busGBs; every other constant is a prior"
run node bin/llcomm.js model --calibrate "$BENCH" --algorithms nccl --residuals

echo "# 2. out-of-sample: the committed constants (section 1's fit) predict the 44 nccl rows of $OLD_BENCH (a0bea25, the earlier run on the same machine kind), nothing fitted"
run node bin/llcomm.js model --calibrate "$OLD_BENCH" --algorithms nccl --fit none --residuals

echo "# 3. for comparison: the same fit on $OLD_BENCH's own rows"
run node bin/llcomm.js model --calibrate "$OLD_BENCH" --algorithms nccl

echo "# 4. before: the seed form (ring LL hops + libraryOverheadUs) on the nccl rows of $BENCH: the committed table without its h200 nccl block, nothing fitted"
node -e '
const fs = require("node:fs")
const t = JSON.parse(fs.readFileSync("data/latency/platforms.json", "utf8"))
delete t.platforms.h200.nccl
fs.writeFileSync(process.argv[1], JSON.stringify(t, null, 2))
' "$TMP/platforms-without-nccl.json"
echo "\$ (data/latency/platforms.json without platforms.h200.nccl, as \$TMP/platforms-without-nccl.json)"
run node bin/llcomm.js model --table "$TMP/platforms-without-nccl.json" --calibrate "$BENCH" --algorithms nccl --fit none

echo "# 5. nccl-symmetric stays in the seed form (its kernels are not ring/tree x LL/LL128/Simple; note 128K -> 256K measured): nothing fitted"
run node bin/llcomm.js model --calibrate "$BENCH" --algorithms nccl-symmetric --fit none --residuals

echo "# 6. predictions with the committed tables: NCCL's choice per GPU count and size, against llcomm's kernels (constants' sources omitted)"
echo "\$ node bin/llcomm.js model --platform h200 --gpus 2,4,8 --sizes 8,4K,64K,1M,16M | grep -v '^constant '"
node bin/llcomm.js model --platform h200 --gpus 2,4,8 --sizes 8,4K,64K,1M,16M | grep -v '^constant ' | grep -v '^$' || true
echo
echo "\$ node bin/llcomm.js model --platform gb200 --gpus 2..72 --sizes 8,4K,64K,1M,16M | grep -v '^constant '"
node bin/llcomm.js model --platform gb200 --gpus 2..72 --sizes 8,4K,64K,1M,16M | grep -v '^constant ' | grep -v '^$' || true
