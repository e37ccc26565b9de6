#!/usr/bin/env bash
# Issue 21, session 17, second call: the split two-shot with the one-window rule for its spread reduce (after
# session-s17-a.sh: at 8192 x 16, 128-slot parts in two windows, the spread reduce was 0.46-0.58 us slower than the
# serial one), and 'auto' taking it at 8-15 ranks, hidden >= 8192, batch 4-8.
# Predictions (written before the run):
#   - fused GPU test passes (both reduces still run: 8192 x 16 now takes the serial one);
#   - split-twoshot at 8192 x 16: the product within 0.05 us of s4 (the same serial code), batch 1-8 unchanged
#     (within 0.05 us of session-s17-a's push column);
#   - TP 8 decode of Llama-3.1-70B shapes (8 virtual ranks, 20 of 80 layers, context 4096): at batch 4 and 8 'fused'
#     (auto: split-twoshot) faster than 'unfused' by 160 AllReduce+RMSNorm calls x ~1 us, about 0.15-0.2 ms a step,
#     more than the run-to-run spread; and faster than fused-twoshot by ~0.5 us a call (~0.08 ms a step) at batch 4.
set -uo pipefail
cd "$(dirname "$0")/../../.."
out=${OUT:-/tmp/llcomm-s17-b}
mkdir -p "$out/ab"
export NCCL_NVLS_ENABLE=0 LLCOMM_TEST_BACKEND=cuda
export LLCOMM_CACHE_DIR=${LLCOMM_CACHE_DIR:-/tmp/llcomm-cache}
summary="$out/summary.txt"
: > "$summary"
say() { echo "$*" | tee -a "$summary"; }
LLCOMM_GPU_NO_NCCL=1 LLCOMM_GPU_RESULTS="$out/gpu-product.jsonl" LLCOMM_GPU_CASE_PREFIX=product timeout 170 \
  node --test packages/llcomm/dist/test/gpu/fused.test.js > "$out/gpu-product.log" 2>&1
say "gpu-test product (fused.test.js): rc $?, cases passed $(grep -c '"passed":true' "$out/gpu-product.jsonl"), failed $(grep -c '"passed":false' "$out/gpu-product.jsonl")"
for v in push s4; do
  env $([ $v = push ] || echo LLCOMM_KERNELS_DIR=$(realpath ab15/$v) LLCOMM_CACHE_DIR=/tmp/llcomm-cache-17b-$v) timeout 100 \
    node scripts/bench-fused.mjs --ranks 8 --hidden 8192 --batch 1,2,4,8,16 --dtype bf16 --out "$out/ab/$v-r1.json" \
    > "$out/ab/$v-r1.txt" 2>&1
  say "bench $v: rc $?"
done
for b in 4 8; do
  timeout 200 node packages/tools/bin/llcomm.js decode --no-progress --devices 0,0,0,0,0,0,0,0 \
    --model llama-3.1-70b --layers 20 --batch $b --context 4096 --algorithms none,twoshot-sentinel --fused --rounds 5 \
    --json "$out/decode-70b-l20-b$b.json" > "$out/decode-70b-l20-b$b.txt" 2>&1
  say "decode 70b batch $b: rc $?"
done
echo "== bench (split-2s column: push then s4)"; grep -hE '^ +8 ' "$out/ab/push-r1.txt" "$out/ab/s4-r1.txt" | sed -E 's/ +/ /g'
for b in 4 8; do echo "== decode 70b b$b"; grep -vE '^\s*$' "$out/decode-70b-l20-b$b.txt" | tail -14; done
echo "== summary"; cat "$summary"
