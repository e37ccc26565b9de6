#!/usr/bin/env bash
# Probe for `llcomm decode`'s GEMV: the step without AllReduce (Llama-3.1-8B shards, TP 2) for GEMV depth variants
# (kernel trees made here from kernels/ with other LLC_DECODE_GEMV_DEPTH_* defaults, via LLCOMM_KERNELS_DIR) × grid caps
# (--gemv-blocks-per-sm). On the GPU machine after device-bundle.sh:
#   source .carry/activate && ln -sfn .devnm/node_modules node_modules && bash scripts/probe/decode-gemv.sh
# Variants as name:depthB1 (the batch-1 CUDA-core GEMV's load depth; batches above 1 run on tensor cores since
# 3b87827 and have no depth; the runs of 2026-11-29 varied B4 and B16 too); caps and batches as lists. Prints one
# line per case and a table last.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-/tmp/decode-gemv}
mkdir -p "$out"
devices=$([ "$(nvidia-smi -L | wc -l)" -ge 2 ] && echo 0,1 || echo 0,0)
trees=$(mktemp -d)
for v in ${GEMV_VARIANTS:-base:8 deep:16 shallow:4}; do
  IFS=: read -r name d1 <<< "$v"
  cp -r kernels "$trees/$name"
  sed -i -e "s/^#define LLC_DECODE_GEMV_DEPTH_B1 .*/#define LLC_DECODE_GEMV_DEPTH_B1 $d1/" "$trees/$name/tools/decode.cu"
done
: > "$out/cases.tsv"
for batch in ${GEMV_BATCHES:-1 4 16}; do
  for v in ${GEMV_VARIANTS:-base:8:4:2 deep:16:8:4 shallow:4:2:1}; do
    name=${v%%:*}
    for cap in ${GEMV_CAPS:-0 2 4 8}; do
      f=$out/$name-cap$cap-b$batch.json
      LLCOMM_KERNELS_DIR=$trees/$name LLCOMM_CACHE_DIR=/tmp/llcomm-cache-$name timeout 120 node bin/llcomm.js decode \
        --model llama-3.1-8b --devices "$devices" --batch "$batch" --context 4096 --algorithms none --bench-iters 0 \
        --replays 10 --rounds 2 --warmup 2 --gemv-blocks-per-sm "$cap" --no-progress --json "$f" > /dev/null 2>> "$out/errors.log"
      python3 - "$f" "$name" "$cap" "$batch" >> "$out/cases.tsv" <<'PY'
import json, sys
try:
    d = json.load(open(sys.argv[1])); r = d['rows'][0]
    print(f"{sys.argv[2]}\t{sys.argv[3]}\t{sys.argv[4]}\t{r['stepMedianUs']:.1f}\t{d['computeGBs']:.0f}")
except Exception as e:
    print(f"{sys.argv[2]}\t{sys.argv[3]}\t{sys.argv[4]}\tfailed\t{e}")
PY
      tail -n 1 "$out/cases.tsv"
    done
  done
done
echo "== variant cap batch step_us GB/s (8B TP2 c4096, no AllReduce)"
sort -k3,3n -k4,4n "$out/cases.tsv" | column -t
