#!/usr/bin/env bash
# Session 6, first device call (2026-12-02): at the 4 MiB default receive buffer (options.ts DEFAULT_BUFFER_BYTES),
# (1) the model's grid on the current kernels: 2-64 virtual ranks of GPU 0, bf16 and f32, every llcomm algorithm,
#     8 B - 1 MB (64 KB at 64 ranks), 2 interleaved rounds (the refit's data, issue 22 item 3; ring and twoshot-atomic
#     at 16 bits with the default f32 accumulation, issue 18 item 4);
# (2) issue 22's goal table (scale-bench.sh) and `llcomm tune` at 8, 16, 32 and 64 virtual ranks on it.
# Bench documents bundled in $OUT/grid.json ({ docs }) and $OUT/scale-bench.json; the goal table is printed last.
set -uo pipefail
cd "$(dirname "$0")/../../.."
out=${OUT:-/tmp/llcomm-s6-a}
mkdir -p "$out/grid"
llcomm() { node packages/tools/bin/llcomm.js "$@"; }
for n in ${GRID_RANKS-2 4 8 16 32 64}; do
  devs=$(printf '0,%.0s' $(seq "$n")); devs=${devs%,}
  sizes=8,64,512,2K,4K,8K,16K,32K,64K,128K,256K,512K,1M
  [ "$n" -ge 64 ] && sizes=8,64,512,2K,4K,8K,16K,32K,64K
  t0=$(date +%s)
  timeout "${GRID_STEP_S:-75}" node packages/tools/bin/llcomm.js bench --no-progress --devices "$devs" --sizes "$sizes" \
    --dtype bf16,f32 --repeat 2 --iters 300 --warmup 50 --json "$out/grid/grid-v$n.json" > "$out/grid-v$n.log" 2>&1
  echo "grid $n ranks: rc $? $(( $(date +%s) - t0 )) s"
done
export BUNDLE="$out/grid.json"
node -e 'const fs = require("fs"); const docs = process.argv.slice(1).map((f) => JSON.parse(fs.readFileSync(f, "utf8")));
  fs.writeFileSync(process.env.BUNDLE, JSON.stringify({ docs }))' "$out"/grid/grid-v*.json
OUT=$out SCALE_TUNE_RANKS=8,16,32,64 SCALE_TUNE_ITERS=150 timeout 300 bash research/scripts/probe/scale-bench.sh > "$out/scale-bench.log" 2>&1
echo "scale bench: rc $?"
echo "== goal table"; grep -E "^bench|^tune" "$out/scale-bench.log"; tail -22 "$out/scale-bench.log"
