#!/usr/bin/env bash
# A/B of kernel source trees on the GPU machine: the same bench cases for each tree (LLCOMM_KERNELS_DIR), in
# interleaved rounds (A B C A B C …) so that clock drift falls on every variant alike. Usage:
#   [AB_TAG=name] bash scripts/probe/ab-kernels.sh ROUNDS label=dir [label=dir …] -- <llcomm bench arguments>
# Writes $OUT/ab/<label>-r<round>-<case>.json and prints the median over rounds of each row, per variant, last.
set -uo pipefail
out=${OUT:-/tmp/llcomm-ab}/ab
mkdir -p "$out"
rounds=$1; shift
variants=()
while [ "$1" != "--" ]; do variants+=("$1"); shift; done
shift
export LLCOMM_CACHE_DIR=${LLCOMM_CACHE_DIR:-/tmp/llcomm-cache} NCCL_NVLS_ENABLE=0
for ((r = 1; r <= rounds; r++)); do
  for v in "${variants[@]}"; do
    label=${v%%=*} dir=${v#*=}
    # a tree's ab.env (VAR=value words): host settings that belong to that tree's runs only (ab/sigblk)
    envs=()
    if [ -f "$dir/ab.env" ]; then read -r -a envs < "$dir/ab.env"; fi
    env ${envs[@]+"${envs[@]}"} LLCOMM_KERNELS_DIR=$(realpath "$dir") timeout 120 node packages/tools/bin/llcomm.js bench --no-progress "$@" --json "$out/$label-r$r${AB_TAG:+-$AB_TAG}.json" \
      > "$out/$label-r$r${AB_TAG:+-$AB_TAG}.log" 2>&1 || echo "$label round $r: exit $?"
  done
done
node -e '
const fs = require("fs"), dir = process.argv[1], labels = process.argv.slice(2)
const med = (a) => { const s = [...a].sort((x, y) => x - y); return s[Math.floor(s.length / 2)] }
const rows = new Map()
for (const f of fs.readdirSync(dir).filter((f) => f.endsWith(".json"))) {
  const label = f.replace(/-r\d+(-[^.]*)?\.json$/, "")
  const doc = JSON.parse(fs.readFileSync(`${dir}/${f}`, "utf8"))
  for (const r of doc.rows) {
    const key = `${r.algorithm} ${r.dtype} ${r.ranks} ${r.bytes}`
    if (!rows.has(key)) rows.set(key, {})
    ;(rows.get(key)[label] ??= []).push(r.medianUs)
    if (r.wrong) console.log(`WRONG ${label} ${key}: ${r.wrong}`)
  }
}
console.log(["case".padEnd(36), ...labels.map((l) => l.padStart(10))].join(" "))
for (const [key, v] of rows) console.log([key.padEnd(36), ...labels.map((l) => (v[l] ? med(v[l]).toFixed(2) : "-").padStart(10))].join(" "))
' "$out" $(for v in "${variants[@]}"; do echo "${v%%=*}"; done)
