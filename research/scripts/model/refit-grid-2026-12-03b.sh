#!/bin/sh
# The refit of h200-virtual on the second 2026-12-03 grid (one H200, virtual ranks 2-64, bf16 and f32, every llcomm
# algorithm, 8 B-1 MB (64 KB at 64 ranks), 2 interleaved rounds; the kernels of 615ecff: twoshot-atomic's batched
# all-gather (issue 22 item 1) on top of e1b554c's; the library's defaults), written to
# bench/results/model-calibration-h200-virtual-2026-12-03b.txt:
#   npm run build && sh research/scripts/model/refit-grid-2026-12-03b.sh > bench/results/model-calibration-h200-virtual-2026-12-03b.txt
# Every file is counted as it ran: the 12-03b grid and scale files with twoshot-atomic's 'batched' all-gather, the
# first 12-03 grid (e1b554c) with 'serial'. The fit goes to a copy of the table ($WORK/platforms-refit.json); section 3
# predicts the 12-03b scale files (the goal-table run, in neither fit) with the shipped table and with the copy.
# REFIT_FIT: a --fit list instead of every identifiable constant (e.g. to keep the overlap exponent).
set -eu
WORK=${WORK:-/tmp/llcomm-refit-grid-12-03b}
rm -rf "$WORK" && mkdir -p "$WORK"
G=""; S=""; C=""
for n in 2 4 8 16 32 64; do G="$G bench/results/cuda-h200-bench-grid-v$n-2026-12-03b.json"; C="$C bench/results/cuda-h200-bench-grid-v$n-2026-12-03.json"; done
for n in 2 8 16 32 64; do S="$S bench/results/cuda-h200-bench-scale-v$n-2026-12-03b.json"; done
cp packages/tools/data/latency/platforms.json "$WORK/platforms-refit.json"
LLCOMM="node packages/tools/bin/llcomm.js model --platform h200-virtual --gpus 2,8,64 --sizes 8,64K"
NEW="--block-targets library --twoshot-allgather auto --accumulation f32 --twoshot-broadcast slots --twoshot-atomic-allgather batched"
OLD="--block-targets library --twoshot-allgather auto --accumulation f32 --twoshot-broadcast slots --twoshot-atomic-allgather serial"
FIT=${REFIT_FIT:+--fit $REFIT_FIT}
SUMMARY="node research/scripts/model/residual-summary.mjs"

section() { printf '# %s\n$ %s\n' "$1" "$2"; sh -c "$2"; echo; }

echo "\$ npm run build && sh research/scripts/model/refit-grid-2026-12-03b.sh > bench/results/model-calibration-h200-virtual-2026-12-03b.txt"
echo "# at $(git rev-parse --short HEAD 2>/dev/null || echo 'an unknown commit'); no GPU (model); $(date -u +%Y-%m-%dT%H:%MZ)${REFIT_FIT:+; --fit $REFIT_FIT}"
echo
section "1. before: the shipped table on the 12-03b grid, nothing fitted, counted as it ran ('batched')" \
  "$LLCOMM --calibrate$G $NEW --fit none --json | $SUMMARY"
section "2. refit on the 12-03b grid (written to the copy $WORK/platforms-refit.json, not to the shipped table); held out by rank count, size class, dtype (--no-leave-one-out: the row-out refits, one fit a row, ran over 50 min and were stopped)" \
  "$LLCOMM --table $WORK/platforms-refit.json --calibrate$G $NEW $FIT --no-leave-one-out --write --json > $WORK/refit.json && $SUMMARY $WORK/refit.json"
section "3a. out of sample: the shipped table on the 12-03b scale files (the goal-table run, 615ecff), nothing fitted" \
  "$LLCOMM --calibrate$S $NEW --fit none --json | $SUMMARY"
section "3b. out of sample: the refit (section 2) on the same rows, nothing fitted" \
  "$LLCOMM --table $WORK/platforms-refit.json --calibrate$S $NEW --fit none --json | $SUMMARY"
section "4. the older kernels (for the record): the refit on the first 12-03 grid (1146a05 = e1b554c's kernels, 'serial'), nothing fitted" \
  "$LLCOMM --table $WORK/platforms-refit.json --calibrate$C $OLD --fit none --json | $SUMMARY"
section "5. the refit's constants (the copy's h200-virtual entry)" \
  "node -e 'const t=JSON.parse(require(\"fs\").readFileSync(\"$WORK/platforms-refit.json\",\"utf8\")).platforms[\"h200-virtual\"].constants;for(const[k,v]of Object.entries(t))console.log(k, v.unbounded?\"unbounded\":v.value)'"
