#!/usr/bin/env bash
# A/B of the 16-bit word work on the sentinel kernels' reduce path (bench/NOTES.md, eighth session), on the GPU
# machine. Kernel trees (untracked; `bash scripts/probe/ab-16bit-word.sh make` here, before the device call, and
# `rm -rf ab` after):
#   ab/base    kernels/ at ee40b36, before the change
#   ab/mixed   kernels/ at 1e5b0e0: one cvt.rn.bf16x2.f32 per packed word, canonicalization by the exact per-half
#              mask, and the arrival test as the OR of that mask in oneshot-sentinel only
#   ab/canon   mixed, with oneshot-sentinel back on the half-by-half arrival test
#   ab/arrive  mixed, with twoshot-sentinel on the OR test too
# (The runs of 2026-11-29 used trees edited by hand to the same code, and on one GPU a `pack` tree: base + the
# paired conversion alone.)
# Usage: AB_VARIANTS="base canon arrive mixed" AB_DEVICES=0,1 AB_SIZES=8,8K,... bash scripts/probe/ab-16bit-word.sh
# (the first two runs of 2026-11-29 used --devices 0,0 and 0,0,0,0,0,0,0,0, variants base pack canon arrive).
set -uo pipefail
cd "$(dirname "$0")/../.."
if [ "${1:-}" = make ]; then
  set -e
  rm -rf ab && mkdir -p ab/base ab/mixed
  git archive ee40b36 kernels | tar -x -C ab/base --strip-components=1
  git archive 1e5b0e0 kernels | tar -x -C ab/mixed --strip-components=1
  cp -r ab/mixed ab/canon && cp -r ab/mixed ab/arrive
  sed -i 's/using Fmt = LlcSentinel<DT, true>;/using Fmt = LlcSentinel<DT>;/' ab/canon/allreduce/oneshot_sentinel.cu
  sed -i 's/using Fmt = LlcSentinel<DT>;/using Fmt = LlcSentinel<DT, true>;/' ab/arrive/allreduce/twoshot_sentinel.cu
  grep -q 'LlcSentinel<DT>;' ab/canon/allreduce/oneshot_sentinel.cu
  grep -q 'LlcSentinel<DT, true>;' ab/arrive/allreduce/twoshot_sentinel.cu
  exit 0
fi
export LLCOMM_CACHE_DIR=${LLCOMM_CACHE_DIR:-/tmp/llcomm-cache} NCCL_NVLS_ENABLE=0
out=${OUT:-/tmp/llcomm-ab}
variants=""
for v in ${AB_VARIANTS:-base canon arrive mixed}; do variants+=" $v=ab/$v"; done
tag=${AB_TAG:-d$(echo "${AB_DEVICES:-0,1}" | tr ',' '_')}
AB_TAG=$tag bash scripts/probe/ab-kernels.sh "${AB_ROUNDS:-3}" $variants -- --devices "${AB_DEVICES:-0,1}" \
  --algorithms oneshot-sentinel,twoshot-sentinel --sizes "${AB_SIZES:-8,8K,32K,64K,128K,256K,512K,1M,2M}" \
  --dtype "${AB_DTYPES:-bf16,f32}" --iters 300 --warmup 50 > "$out/ab-$tag.txt" 2>&1
cat "$out/ab-$tag.txt"
