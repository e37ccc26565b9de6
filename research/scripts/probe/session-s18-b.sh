#!/usr/bin/env bash
# Issue 21, session 18's second GPU call (2026-12-07): the product as committed after session-s18-a.sh's A/B (what
# was merged, if anything, is in research/notes/fused-probes.md, session 18), checked and measured as session 17's
# close was: the whole fused GPU test, then two runs of the kernel bench against every llcomm AllReduce + RMSNorm
# (--unfused-all; 8 ranks, bf16, hidden 4096 / 8192, batch 1-16). The predictions are written in the notes before the
# run.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source research/scripts/probe/fused-ab-lib.sh
fused_session_init /tmp/llcomm-s18-b
fused_gpu_test_product
for r in 1 2; do
  timeout 120 node scripts/bench-fused.mjs --ranks 8 --hidden 4096,8192 --batch 1,2,4,8,16 --dtype bf16 \
    --unfused-all --out "$out/bench-unfused-all-r$r.json" > "$out/bench-unfused-all-r$r.log" 2>&1
  say "bench unfused-all run $r: rc $?"
done
echo "== best fused / fastest unfused (run 1 / run 2)"
node -e '
const fs = require("fs"), [a, b] = process.argv.slice(1).map((f) => JSON.parse(fs.readFileSync(f, "utf8")).rows)
for (let i = 0; i < a.length; i++)
  console.log(a[i].ranks, a[i].hidden, a[i].rows, a[i].ratioBestStrict.toFixed(3), b[i].ratioBestStrict.toFixed(3),
    "auto", (a[i].us["fused-auto"] / a[i].unfusedFastest).toFixed(3), a[i].fusedAuto)
' "$out/bench-unfused-all-r1.json" "$out/bench-unfused-all-r2.json"
echo "== summary"; cat "$summary"
