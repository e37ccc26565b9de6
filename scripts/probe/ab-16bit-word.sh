#!/usr/bin/env bash
# A/B of the 16-bit word work on the sentinel kernels' reduce path (bench/NOTES.md, eighth session), on the GPU
# machine. Kernel trees (untracked), made here from the commit before the change (ee40b36):
#   ab/base    kernels/ at ee40b36
#   ab/canon   + one cvt.rn.bf16x2.f32 per packed word, canonicalization by the exact per-half mask
#   ab/arrive  + the arrival test as the OR of that mask over the slot, in both sentinel kernels
#   ab/mixed   kernels/ as committed: canon, and the OR arrival test in oneshot-sentinel only
# Usage: AB_VARIANTS="base canon arrive mixed" AB_DEVICES=0,1 AB_SIZES=8,8K,... bash scripts/probe/ab-16bit-word.sh
# (the first two runs of 2026-11-29 used --devices 0,0 and 0,0,0,0,0,0,0,0, variants base pack canon arrive).
set -uo pipefail
cd "$(dirname "$0")/../.."
export LLCOMM_CACHE_DIR=${LLCOMM_CACHE_DIR:-/tmp/llcomm-cache} NCCL_NVLS_ENABLE=0
out=${OUT:-/tmp/llcomm-ab}
variants=""
for v in ${AB_VARIANTS:-base canon arrive mixed}; do variants+=" $v=ab/$v"; done
tag=${AB_TAG:-d$(echo "${AB_DEVICES:-0,1}" | tr ',' '_')}
AB_TAG=$tag bash scripts/probe/ab-kernels.sh "${AB_ROUNDS:-3}" $variants -- --devices "${AB_DEVICES:-0,1}" \
  --algorithms oneshot-sentinel,twoshot-sentinel --sizes "${AB_SIZES:-8,8K,32K,64K,128K,256K,512K,1M,2M}" \
  --dtype "${AB_DTYPES:-bf16,f32}" --iters 300 --warmup 50 > "$out/ab-$tag.txt" 2>&1
cat "$out/ab-$tag.txt"
