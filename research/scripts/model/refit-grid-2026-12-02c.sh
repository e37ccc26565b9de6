#!/bin/sh
# The refit of h200-virtual on the 2026-12-02c grid (one H200, virtual ranks 2-64, bf16 and f32, every llcomm
# algorithm, 8 B-1 MB (64 KB at 64 ranks), 2 interleaved rounds, the kernels at the library's defaults: the 4 MiB
# buffer, BLOCK_TARGETS, twoshot-sentinel's host-picked all-gather, f32 accumulation; research/notes/
# model-calibration-log.md, "The refit on the 12-02c grid"), written to bench/results/model-calibration-h200-virtual-2026-12-02c.txt:
#   npm run build && sh research/scripts/model/refit-grid-2026-12-02c.sh > bench/results/model-calibration-h200-virtual-2026-12-02c.txt
# Every file is counted as it ran: its own bufferBytes (calibrate.ts; 1 MiB for a file without the field), and the
# flags below for the build (the c grid and the 12-02b files: library targets, auto, f32; the 11-29k files: the
# targets before the sweep, push, 16-bit accumulation). The fit goes to a copy of the table ($WORK/platforms-refit.json);
# sections 3 and 4 predict files in neither fit with the shipped table and with the copy, nothing fitted.
set -eu
WORK=${WORK:-/tmp/llcomm-refit-grid}
rm -rf "$WORK" && mkdir -p "$WORK"
C=""; B=""; K=""
for n in 2 4 8 16 32 64; do C="$C bench/results/cuda-h200-bench-grid-v$n-2026-12-02c.json"; K="$K bench/results/cuda-h200-bench-v$n-2026-11-29k.json"; done
for n in 2 8 16 32 64; do B="$B bench/results/cuda-h200-bench-scale-v$n-2026-12-02b.json"; done
# the 11-29k files less the twoshot-sentinel rows the kernel now runs on its spread path (they measured the serial path)
node research/scripts/model/drop-spread-rows.mjs "$WORK/k" $K 2>&1 | sed 's/^/# /'
K=""
for n in 2 4 8 16 32 64; do K="$K $WORK/k/cuda-h200-bench-v$n-2026-11-29k-nospread.json"; done
# GRID_FILES: other files in the c grid's place (a trial run of this script)
C=${GRID_FILES:-$C}
cp packages/tools/data/latency/platforms.json "$WORK/platforms-refit.json"
LLCOMM="node packages/tools/bin/llcomm.js model --platform h200-virtual --gpus 2,8,64 --sizes 8,64K"
NEW="--block-targets library --twoshot-allgather auto --accumulation f32"
OLD="--block-targets before-sweep --twoshot-allgather push --accumulation dtype"
SUMMARY="node research/scripts/model/residual-summary.mjs"

section() { printf '# %s\n$ %s\n' "$1" "$2"; sh -c "$2"; echo; }

echo "\$ npm run build && sh research/scripts/model/refit-grid-2026-12-02c.sh > bench/results/model-calibration-h200-virtual-2026-12-02c.txt"
echo "# at $(git rev-parse --short HEAD 2>/dev/null || echo 'an unknown commit'); no GPU (model); $(date -u +%Y-%m-%dT%H:%MZ)"
echo
section "1. before: the shipped table on the c grid, nothing fitted, counted as it ran" \
  "$LLCOMM --calibrate$C $NEW --fit none --json | $SUMMARY"
section "2. refit of every identifiable constant on the c grid (written to the copy $WORK/platforms-refit.json, not to the shipped table); held out by row, rank count, size class, dtype" \
  "$LLCOMM --table $WORK/platforms-refit.json --calibrate$C $NEW --write --json > $WORK/refit.json && $SUMMARY $WORK/refit.json"
section "3a. out of sample: the shipped table on the 12-02b scale files (fadbc1a, 1 MiB buffer), nothing fitted" \
  "$LLCOMM --calibrate$B $NEW --fit none --json | $SUMMARY"
section "3b. out of sample: the refit (section 2) on the same rows, nothing fitted" \
  "$LLCOMM --table $WORK/platforms-refit.json --calibrate$B $NEW --fit none --json | $SUMMARY"
section "4a. the older kernels (for the record): the shipped table on the 11-29k files (d09257e) less their 92 serial twoshot-sentinel rows, counted as they ran, nothing fitted" \
  "$LLCOMM --calibrate$K $OLD --fit none --json | $SUMMARY"
section "4b. the refit on the same rows, nothing fitted" \
  "$LLCOMM --table $WORK/platforms-refit.json --calibrate$K $OLD --fit none --json | $SUMMARY"
section "5. the refit's constants (the copy's h200-virtual entry)" \
  "node -e 'const t=JSON.parse(require(\"fs\").readFileSync(\"$WORK/platforms-refit.json\",\"utf8\")).platforms[\"h200-virtual\"].constants;for(const[k,v]of Object.entries(t))console.log(k, v.unbounded?\"unbounded\":v.value)'"
