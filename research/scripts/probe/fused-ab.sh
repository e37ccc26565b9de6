#!/usr/bin/env bash
# A/B of kernel source trees with the fused bench (scripts/bench-fused.mjs) on the GPU machine: the same shapes for
# each tree (LLCOMM_KERNELS_DIR; one NVRTC cache per tree), in interleaved rounds (A B A B …) so that clock drift
# falls on every tree alike. From the repository root, after `npm run build` and make-fused-trees.sh:
#   bash research/scripts/probe/fused-ab.sh ROUNDS label=dir [label=dir …] -- <bench-fused.mjs arguments>
# e.g. bash research/scripts/probe/fused-ab.sh 5 base=ab/fused-base early=ab/fused-split-early -- \
#        --ranks 8 --hidden 4096,8192 --batch 1,2,4,8
# Writes $OUT/fused-ab/<label>-r<round>.json (and .log) and prints, last, the median over rounds of the split
# columns and of unfused per shape and tree, and each tree's fused-split / base fused-split (the first tree is the base).
set -uo pipefail
out=${OUT:-/tmp/llcomm-fused-ab}/fused-ab
mkdir -p "$out"
rounds=$1; shift
variants=()
while [ "$1" != "--" ]; do variants+=("$1"); shift; done
shift
export NCCL_NVLS_ENABLE=0
# AB_DEADLINE (optional, seconds since the epoch): no round starts after it, so a caller's time limit never cuts the
# medians below (a round that did not start is missing from them).
for ((r = 1; r <= rounds; r++)); do
  if [ -n "${AB_DEADLINE:-}" ] && [ "$(date +%s)" -ge "$AB_DEADLINE" ]; then echo "round $r and later: past AB_DEADLINE, skipped"; break; fi
  for v in "${variants[@]}"; do
    label=${v%%=*} dir=${v#*=}
    LLCOMM_KERNELS_DIR=$(realpath "$dir") LLCOMM_CACHE_DIR=/tmp/llcomm-cache-fused-$label \
      timeout 300 node scripts/bench-fused.mjs "$@" --out "$out/$label-r$r.json" > "$out/$label-r$r.log" 2>&1 ||
      echo "$label round $r: exit $?"
  done
done
node -e '
const fs = require("fs"), dir = process.argv[1], labels = process.argv.slice(2)
const med = (a) => { const s = [...a].sort((x, y) => x - y); return s[Math.floor(s.length / 2)] }
const cols = ["fused-split", "fused-split-ll", "fused-auto", "unfused"]
const rows = new Map()
for (const f of fs.readdirSync(dir).filter((f) => f.endsWith(".json"))) {
  const label = f.replace(/-r\d+\.json$/, "")
  for (const r of JSON.parse(fs.readFileSync(`${dir}/${f}`, "utf8")).rows) {
    const key = `${r.ranks} ${r.hidden} ${r.rows}`
    if (!rows.has(key)) rows.set(key, {})
    for (const c of cols) if (c in r.us) ((rows.get(key)[label] ??= {})[c] ??= []).push(r.us[c])
  }
}
console.log(["ranks hidden batch".padEnd(19), ...labels.map((l) => `${l}: split split-ll auto unfused`.padStart(38)), ...labels.slice(1).map((l) => `${l}/${labels[0]}`.padStart(14))].join(" "))
for (const [key, v] of rows) {
  const m = (l, c) => (v[l]?.[c] ? med(v[l][c]) : undefined)
  const f = (x) => (x === undefined ? "-" : x.toFixed(2)).padStart(7)
  console.log([key.padEnd(19), ...labels.map((l) => cols.map((c) => f(m(l, c))).join(" ").padStart(38)),
    ...labels.slice(1).map((l) => (m(l, "fused-split") && m(labels[0], "fused-split") ? (m(l, "fused-split") / m(labels[0], "fused-split")).toFixed(3) : "-").padStart(14))].join(" "))
}
' "$out" $(for v in "${variants[@]}"; do echo "${v%%=*}"; done)
