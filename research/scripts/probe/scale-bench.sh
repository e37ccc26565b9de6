#!/usr/bin/env bash
# Issue 22 on the GPU machine, one device call (step script:research/scripts/probe/scale-bench.sh of
# scripts/device-session.sh): the product kernels (no A/B trees) at 2, 8, 16, 32 and 64 virtual ranks of GPU 0, bf16,
# every barrier-free algorithm beside oneshot-barrier, in one bench process per rank count (--repeat rounds
# interleaved inside it); then `llcomm tune` at 16, 32 and 64 virtual ranks. The bench documents go to
# $OUT/bench/scale-v<N>.json and, bundled, to $OUT/scale-bench.json ({ docs: [...] }: the device tool brings back few
# files); the tuning table to $OUT/tune-scale.json; the last lines are the goal table (best barrier-free /
# oneshot-barrier).
# Knobs: SCALE_RANKS ("2 8 16 32 64"), SCALE_REPEAT (3), SCALE_ITERS (300), SCALE_WARMUP (50), SCALE_TUNE_RANKS
# ("16,32,64"; empty: no tune), SCALE_TUNE_ITERS (200).
set -uo pipefail
cd "$(dirname "$0")/../../.."
out=${OUT:-/tmp/llcomm-scale-bench}
mkdir -p "$out/bench"
llcomm() { node packages/tools/bin/llcomm.js "$@"; }
algs=oneshot-ll,oneshot-sentinel,oneshot-barrier,twoshot-sentinel,twoshot-atomic
for n in ${SCALE_RANKS-2 8 16 32 64}; do
  devs=$(printf '0,%.0s' $(seq "$n")); devs=${devs%,}
  sizes=8,8K,64K
  [ "$n" = 8 ] && sizes=8,8K,64K,256K,1M
  t0=$(date +%s)
  llcomm bench --no-progress --devices "$devs" --algorithms "$algs" --dtype bf16 --sizes "$sizes" \
    --repeat "${SCALE_REPEAT:-3}" --iters "${SCALE_ITERS:-300}" --warmup "${SCALE_WARMUP:-50}" \
    --json "$out/bench/scale-v$n.json" > "$out/scale-v$n.log" 2>&1
  echo "bench $n ranks: rc $? $(( $(date +%s) - t0 )) s"
done
if [ -n "${SCALE_TUNE_RANKS-16,32,64}" ]; then
  devs=$(printf '0,%.0s' $(seq 64)); devs=${devs%,}
  t0=$(date +%s)
  llcomm tune --no-progress --devices "$devs" --ranks "${SCALE_TUNE_RANKS:-16,32,64}" --min 8 --max 1M --dtype bf16 \
    --iters "${SCALE_TUNE_ITERS:-200}" --warmup 50 --out "$out/tune-scale.json" > "$out/tune.log" 2>&1
  echo "tune ${SCALE_TUNE_RANKS:-16,32,64} ranks: rc $? $(( $(date +%s) - t0 )) s"
fi
export BUNDLE="$out/scale-bench.json"
if ls "$out"/bench/scale-v*.json > /dev/null 2>&1; then
  node -e 'const fs = require("fs"); const docs = process.argv.slice(1).map((f) => JSON.parse(fs.readFileSync(f, "utf8")));
    fs.writeFileSync(process.env.BUNDLE, JSON.stringify({ docs }))' "$out"/bench/scale-v*.json
  node research/scripts/probe/scale-goals.mjs "$out"/bench/scale-v*.json
fi
