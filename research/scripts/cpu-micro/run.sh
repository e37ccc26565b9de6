#!/usr/bin/env bash
# Runs the CPU micro-measurements behind bench/NOTES.md (second session of 2026-11-29) and writes
# bench/results/cpu-micro-<date>.json with machine, commit, date and command. Needs `npm run build` first.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-bench/results/cpu-micro-$(date -u +%Y-%m-%d).json}
atomics=$(node scripts/cpu-micro/atomics-cost.mjs)
work=$(node scripts/cpu-micro/rank-work.mjs)
sim="["
for w in 0 10 40; do for mode in oneshot barrier; do
  sim+="$(W=$w MODE=$mode node scripts/cpu-micro/wake-sim.mjs),"
done; done
sim="${sim%,}]"
node -e '
const os = require("node:os")
const [atomics, work, sim, out, commit] = process.argv.slice(1)
const doc = { machine: { hostname: os.hostname(), cpuModel: os.cpus()[0]?.model, cores: os.availableParallelism(), loadAverage1m: os.loadavg()[0] },
  commit, date: new Date().toISOString(), command: "scripts/cpu-micro/run.sh", node: process.version,
  atomicsCost: JSON.parse(atomics), oneshotSentinelRankWork: JSON.parse(work), wakeSim: JSON.parse(sim) }
require("node:fs").writeFileSync(out, JSON.stringify(doc, null, 2) + "\n")
console.log(JSON.stringify(doc, null, 2))' "$atomics" "$work" "$sim" "$out" "$(git rev-parse --short HEAD)"
