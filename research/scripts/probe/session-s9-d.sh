#!/usr/bin/env bash
# Session 9, fifth device call (2026-12-02; issue 22, the prologue): Nsight Compute's stall samples per SASS
# instruction (SourceCounters) of the product twoshot-sentinel kernel at 32 and 16 virtual ranks (8 KB, 64 KB, bf16):
# which instructions of the ~2 us before the first send (the phase probe, research/notes/scale-2026-12-01.md,
# session 9) the warps wait on. One launch each (the tenth), all virtual ranks in it; the source page as CSV with
# SASS in $OUT/ncu-prologue.tgz.
set -uo pipefail
cd "$(dirname "$0")/../../.."
out=${OUT:-/tmp/llcomm-s9-d}
res=/tmp/ncu-prologue
rm -rf "$res" && mkdir -p "$res" "$out"
export LLCOMM_CACHE_DIR=${LLCOMM_CACHE_DIR:-/tmp/llcomm-cache} NCCL_NVLS_ENABLE=0
for c in 32:8K 16:64K; do
  n=${c%%:*} size=${c#*:}
  devs=$(printf '0,%.0s' $(seq "$n")); devs=${devs%,}
  tag=twoshot-v$n-$size
  timeout 150 ncu --clock-control none --kernel-name regex:llcomm_twoshot --launch-skip 10 --launch-count 1 \
    --section WarpStateStats --section SourceCounters --section LaunchStats --export "$res/ncu-$tag" --force-overwrite \
    node packages/tools/bin/llcomm.js bench --devices "$devs" --algorithms twoshot-sentinel --dtype bf16 --sizes "$size" \
    --iters 20 --warmup 1 --no-progress > "$res/ncu-$tag.log" 2>&1
  echo "ncu $tag: rc $?"
  ncu --import "$res/ncu-$tag.ncu-rep" --page source --csv --print-source sass > "$res/ncu-$tag.source.csv" 2>&1
  ncu --import "$res/ncu-$tag.ncu-rep" --page details --csv > "$res/ncu-$tag.details.csv" 2>&1
  ls -la "$res/ncu-$tag.source.csv"
done
tar -czf "$out/ncu-prologue.tgz" -C /tmp ncu-prologue
head -3 "$res"/ncu-twoshot-v32-8K.source.csv | cut -c1-400
