#!/usr/bin/env bash
# Session 10, fourth device call (2026-12-03; issue 22 item 3): the model's grid on the kernels of e1b554c (the
# spread path's 32-bit arithmetic; bspread's slot broadcast since 4e5f9c1), as the 12-02c grid (session-s6-a.sh):
# 2-64 virtual ranks of GPU 0, bf16 and f32, every llcomm algorithm, 8 B - 1 MB (64 KB at 64 ranks), 2 interleaved
# rounds, the library's defaults (4 MiB buffer, BLOCK_TARGETS, the host's all-gather choice, f32 accumulation).
# Bench documents bundled in $OUT/grid.json ({ docs }).
set -uo pipefail
cd "$(dirname "$0")/../../.."
out=${OUT:-/tmp/llcomm-s10-d}
mkdir -p "$out/grid"
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
for n in ${GRID_RANKS-2 4 8 16 32 64}; do tail -3 "$out/grid-v$n.log"; done
