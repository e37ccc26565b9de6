#!/bin/sh
# The refit tried after twoshot-sentinel's spread path was counted (2026-12-01; research/notes/model-calibration-log.md,
# "twoshot-sentinel's spread path"), written to research/results/model-calibration-h200-virtual-2026-12-01.txt:
#   npm run build && sh research/scripts/model/refit-spread-2026-12-01.sh > research/results/model-calibration-h200-virtual-2026-12-01.txt
# Rows: the 11-29h files (the shipped fit's) less the twoshot-sentinel rows the kernel now runs on its spread path
# (measured with the serial path; drop-spread-rows.mjs), plus the 12-01 scale files (the merged spread kernel).
# The fit is written to a copy of the table only (section 1); section 2 predicts the 11-29k files (less the same
# rows; measured at d09257e, in neither fit) with the shipped table and with the copy, nothing fitted.
set -eu
WORK=${WORK:-/tmp/llcomm-refit-spread}
rm -rf "$WORK" && mkdir -p "$WORK"
H=""; K=""; S=""
for n in 2 4 8 16 32 64; do H="$H bench/results/cuda-h200-bench-v$n-2026-11-29h.json"; K="$K bench/results/cuda-h200-bench-v$n-2026-11-29k.json"; done
for n in 2 8 16 32 64; do S="$S bench/results/cuda-h200-bench-scale-v$n-2026-12-01.json"; done
node research/scripts/model/drop-spread-rows.mjs "$WORK/h" $H 2>&1 | sed 's/^/# /'
node research/scripts/model/drop-spread-rows.mjs "$WORK/k" $K 2>&1 | sed 's/^/# /'
HN=""; KN=""
for n in 2 4 8 16 32 64; do HN="$HN $WORK/h/cuda-h200-bench-v$n-2026-11-29h-nospread.json"; KN="$KN $WORK/k/cuda-h200-bench-v$n-2026-11-29k-nospread.json"; done
cp packages/tools/data/latency/platforms.json "$WORK/platforms-refit.json"
# counted as every file was then (the 11-29 build: the block targets before the 12-02 sweep, push, 16-bit accumulation;
# the model's defaults since the 12-02c fit are the library's)
LLCOMM="node packages/tools/bin/llcomm.js model --platform h200-virtual --block-targets before-sweep --twoshot-allgather push --accumulation dtype"

section() { printf '# %s\n$ %s\n' "$1" "$2"; sh -c "$2"; echo; }

echo "\$ npm run build && sh research/scripts/model/refit-spread-2026-12-01.sh > research/results/model-calibration-h200-virtual-2026-12-01.txt"
echo "# at $(git rev-parse --short HEAD 2>/dev/null || echo 'an unknown commit'); no GPU (model); $(date -u +%Y-%m-%dT%H:%MZ)"
echo
section "1. refit of every identifiable constant (written to the copy $WORK/platforms-refit.json, not to the shipped table)" \
  "$LLCOMM --table $WORK/platforms-refit.json --gpus 2,8,16,32,64 --sizes 8,8K,64K,1M --calibrate$HN$S --residuals --write"
section "2a. out of sample: the shipped table on the 11-29k files less the spread rows, nothing fitted" \
  "$LLCOMM --calibrate$KN --fit none"
section "2b. out of sample: the refit (section 1) on the same rows, nothing fitted" \
  "$LLCOMM --table $WORK/platforms-refit.json --calibrate$KN --fit none"
section "3. the shipped table on section 1's rows, nothing fitted (the 12-01 rows out of sample, the 11-29h rows its own fit's)" \
  "$LLCOMM --calibrate$HN$S --fit none"
