#!/usr/bin/env bash
# Nsight Compute over one captured graph of the bench (every rank's kernel together: --graph-profiling graph), with
# the kernel sources taken from DIR, on the GPU machine. Used to compare two kernel trees metric by metric:
#   bash scripts/probe/ncu-cmp.sh LABEL DIR RANKS ALGORITHM SIZE     (raw metrics to $OUT/ab/ncu-LABEL.csv)
set -uo pipefail
label=$1 dir=$2 n=$3 alg=$4 size=$5
mkdir -p "$OUT/ab"
devs=$(python3 -c "print(','.join(['0']*$n))")
LLCOMM_KERNELS_DIR=$(realpath "$dir") ncu --clock-control none --graph-profiling graph --launch-skip 1 --launch-count 1 \
  --section SpeedOfLight --section WarpStateStats --section InstructionStats --export "/tmp/ncu-$label" --force-overwrite \
  node bin/llcomm.js bench --devices "$devs" --algorithms "$alg" --dtype bf16 --sizes "$size" --iters 20 --warmup 1 \
  --no-progress > "/tmp/ncu-$label.log" 2>&1
ncu --import "/tmp/ncu-$label.ncu-rep" --page raw --csv > "$OUT/ab/ncu-$label.csv" 2>&1
