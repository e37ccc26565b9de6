#!/usr/bin/env bash
# Session 9, second device call (2026-12-02; issue 22, after the bspread merge 4e5f9c1), one script step:
# (1) the phase probe (ab/phase: the working tree's kernels with LLCOMM_PHASE_PROBE, marks 10 and 11 new: the scratch
#     pointer parameter's arrival and a reload of the epoch word) at 16 r 64 KB, 32 r 8 KB, 8 r 8 KB, 2 r 8 KB;
# (2) the goal algorithms with PDL off and on in one bench process per rank count (--pdl both), 2-64 virtual ranks;
# (3) the block-scale sweep on the merged kernel at 16 and 32 ranks, 8 KB and 64 KB.
# Logs under $OUT; the JSON bundled in $OUT/s9a.json; short tables printed last.
set -uo pipefail
cd "$(dirname "$0")/../../.."
out=${OUT:-/tmp/llcomm-s9-a}
mkdir -p "$out/pdl"
export LLCOMM_CACHE_DIR=${LLCOMM_CACHE_DIR:-/tmp/llcomm-cache} NCCL_NVLS_ENABLE=0
t0=$(date +%s)
OUT=$out/phase PHASE_CASES="16:65536 32:8192 8:8192 2:8192" timeout 150 bash research/scripts/probe/phase-probe.sh > "$out/phase.log" 2>&1
echo "phase probe: rc $? $(( $(date +%s) - t0 )) s"
for n in 2 8 16 32 64; do
  devs=$(printf '0,%.0s' $(seq "$n")); devs=${devs%,}
  t0=$(date +%s)
  timeout 60 node packages/tools/bin/llcomm.js bench --no-progress --devices "$devs" \
    --algorithms oneshot-ll,oneshot-sentinel,twoshot-sentinel,oneshot-barrier --dtype bf16 --sizes 8,8K,64K \
    --pdl both --repeat 3 --iters 300 --warmup 50 --json "$out/pdl/pdl-v$n.json" > "$out/pdl-v$n.log" 2>&1
  echo "pdl bench $n ranks: rc $? $(( $(date +%s) - t0 )) s"
done
t0=$(date +%s)
OUT=$out/sweep SWEEP_RANKS=16,32 SWEEP_SIZES=8K,64K SWEEP_SCALES=0.25,0.5,1,2 SWEEP_BUDGET_S=90 \
  timeout 200 bash research/scripts/probe/block-scale-sweep.sh > "$out/sweep.log" 2>&1
echo "sweep: rc $? $(( $(date +%s) - t0 )) s"
export BUNDLE="$out/s9a.json"
node -e 'const fs = require("fs"); const docs = process.argv.slice(1).filter((f) => fs.existsSync(f)).map((f) => ({ file: f, doc: JSON.parse(fs.readFileSync(f, "utf8")) }));
  fs.writeFileSync(process.env.BUNDLE, JSON.stringify({ docs }))' "$out"/pdl/pdl-v*.json "$out"/phase/json/*.json
echo "== phase"; grep -vE "^twoshot|^half" "$out/phase.log" | cut -c1-110
echo "== pdl"
node research/scripts/probe/pdl-table.mjs "$out"/pdl/pdl-v*.json 2>&1 | tail -40
echo "== sweep"; sed -n '/scale A\/B: median/,$p' "$out/sweep.log" | cut -c1-150
