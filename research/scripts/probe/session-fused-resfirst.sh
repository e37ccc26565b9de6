#!/usr/bin/env bash
# For the next device call on issue 21 (written 2026-12-03, session 11; not run yet): the fused two-shot's spread path
# (f1dd9b7) against fused-patches/twoshot-spread-resfirst.patch (the all-gather's first member's residual slot loaded
# before the poll, so its load overlaps the wait; no spills, ptxas sm_90; fused emulator 4/4 on the patched tree).
# Prediction: -0.1..-0.3 us at 8 ranks batch 16 (one residual load round trip a thread off the critical path), nothing
# below batch 8 (the split and one-shot kernels are untouched). Trees made here: ab/base = this tree's kernels,
# ab/resfirst = the same + the patch. 3 interleaved rounds of scripts/bench-fused.mjs, 8 and 16 virtual ranks, bf16,
# hidden 4096 and 8192, batch 4, 8, 16, 32; the fused-2s column (and auto) per tree printed last; JSON in $OUT.
set -uo pipefail
cd "$(dirname "$0")/../../.."
out=${OUT:-/tmp/llcomm-fused-resfirst}
mkdir -p "$out"
rm -rf ab/base ab/resfirst && mkdir -p ab
cp -r packages/llcomm/kernels ab/base && cp -r packages/llcomm/kernels ab/resfirst
(cd ab/resfirst && patch -p1 < ../../research/scripts/probe/fused-patches/twoshot-spread-resfirst.patch) || exit 1
export LLCOMM_CACHE_DIR=${LLCOMM_CACHE_DIR:-/tmp/llcomm-cache} NCCL_NVLS_ENABLE=0
for r in 1 2 3; do
  for v in base resfirst; do
    t0=$(date +%s)
    LLCOMM_KERNELS_DIR=$(realpath ab/$v) timeout 120 node scripts/bench-fused.mjs --ranks 8,16 --hidden 4096,8192 \
      --batch 4,8,16,32 --dtype bf16 --out "$out/$v-r$r.json" > "$out/$v-r$r.log" 2>&1
    echo "$v round $r: rc $? $(( $(date +%s) - t0 )) s"
  done
done
node -e '
const fs = require("fs"), dir = process.argv[1]
const med = (a) => { const s = [...a].sort((x, y) => x - y); return s[Math.floor(s.length / 2)] }
const cells = new Map()
for (const f of fs.readdirSync(dir).filter((f) => f.endsWith(".json"))) {
  const v = f.replace(/-r\d+\.json$/, "")
  for (const r of JSON.parse(fs.readFileSync(`${dir}/${f}`, "utf8")).rows) {
    const key = `${r.ranks} ${r.hidden} ${r.rows}`
    const c = cells.get(key) ?? {}
    for (const k of ["fused-twoshot", "fused-auto", "unfused"]) ((c[`${v} ${k}`] ??= [])).push(r.us[k])
    cells.set(key, c)
  }
}
console.log("ranks hidden batch | base 2s  resfirst 2s | base auto  resfirst auto | unfused")
for (const [key, c] of cells) {
  const m = (k) => (c[k] ? med(c[k]).toFixed(2) : "-").padStart(8)
  console.log(`${key.padEnd(17)} | ${m("base fused-twoshot")} ${m("resfirst fused-twoshot")} | ${m("base fused-auto")} ${m("resfirst fused-auto")} | ${m("base unfused")}`)
}' "$out"
