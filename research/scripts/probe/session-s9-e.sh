#!/usr/bin/env bash
# Session 9, sixth device call (2026-12-02; issue 22, the prologue): the parameters' scalars and launchRanks moved in
# front of the rank-indexed arrays (abi.cuh / abi.ts). A/B in one call, after the GPU test of the new layout (a
# separate step): the new build against 4e5f9c1's (its kernels ab/oldk and its compiled abi.js ab/old-abi.js, the one
# host file that differs), research/scripts/probe/scale-bench.sh (2 rounds inside each run) run new, old, new, old;
# the new build restored at the end. Tables: research/scripts/probe/variant-table.mjs. JSON bundled in $OUT/s9e.json.
set -uo pipefail
cd "$(dirname "$0")/../../.."
out=${OUT:-/tmp/llcomm-s9-e}
mkdir -p "$out"
abi=packages/llcomm/dist/src/backends/cuda/abi.js
cp "$abi" "$out/new-abi.js"
for r in 1 2; do
  cp "$out/new-abi.js" "$abi"
  OUT=$out/new-r$r SCALE_REPEAT=2 SCALE_TUNE_RANKS= timeout 100 bash research/scripts/probe/scale-bench.sh > "$out/new-r$r.log" 2>&1
  echo "new round $r: rc $?"
  cp ab/old-abi.js "$abi"
  OUT=$out/old-r$r SCALE_REPEAT=2 SCALE_TUNE_RANKS= LLCOMM_KERNELS_DIR=$(realpath ab/oldk) timeout 100 \
    bash research/scripts/probe/scale-bench.sh > "$out/old-r$r.log" 2>&1
  echo "old round $r: rc $?"
done
cp "$out/new-abi.js" "$abi"
mkdir -p "$out/old" "$out/new"
for r in 1 2; do cp -r "$out/old-r$r/bench" "$out/old/r$r"; cp -r "$out/new-r$r/bench" "$out/new/r$r"; done
export BUNDLE="$out/s9e.json"
node -e 'const fs = require("fs"); const docs = process.argv.slice(1).map((f) => ({ file: f, doc: JSON.parse(fs.readFileSync(f, "utf8")) }));
  fs.writeFileSync(process.env.BUNDLE, JSON.stringify({ docs }))' "$out"/{old,new}/r*/*.json
node research/scripts/probe/variant-table.mjs old="$out/old" new="$out/new"
