#!/usr/bin/env bash
# Session 9, fourth device call (2026-12-02; issue 22, the prologue): the phase probe (ab/phase) with marks 12 (the
# element split and thread roles computed) and 13 (the first input loads issued), at 16 r 64 KB, 32 r 8 KB,
# 8 r 8 KB and 64 r 8 KB. JSON in $OUT/s9c.json.
set -uo pipefail
cd "$(dirname "$0")/../../.."
out=${OUT:-/tmp/llcomm-s9-c}
mkdir -p "$out"
export LLCOMM_CACHE_DIR=${LLCOMM_CACHE_DIR:-/tmp/llcomm-cache} NCCL_NVLS_ENABLE=0
OUT=$out/phase PHASE_TREES="phase" PHASE_CASES="16:65536 32:8192 8:8192 64:8192" timeout 150 \
  bash research/scripts/probe/phase-probe.sh > "$out/phase.log" 2>&1
echo "phase probe: rc $?"
export BUNDLE="$out/s9c.json"
node -e 'const fs = require("fs"); const docs = process.argv.slice(1).filter((f) => fs.existsSync(f)).map((f) => ({ file: f, doc: JSON.parse(fs.readFileSync(f, "utf8")) }));
  fs.writeFileSync(process.env.BUNDLE, JSON.stringify({ docs }))' "$out"/phase/json/*.json
grep -E "^==|^(sends|reduced|bcast|allgather|end|start ->|setup|issued|scrptr|epoch|input ->|entry|reload)" "$out/phase.log" | cut -c1-90
