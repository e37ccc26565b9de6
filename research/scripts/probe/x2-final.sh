#!/usr/bin/env bash
# One short call on two GPUs at the end of the eighth session (bench/NOTES.md): the receive-buffer probe on NVLink
# with PyTorch's two-shot beside it, then llcomm decode (8B, TP 2, context 4096) at batch 4 and 16 with the
# tensor-core GEMV. Packs everything into $OUT/x2-final.tgz.
#   source .carry/activate && ln -sfn .devnm/node_modules node_modules && LLCOMM_COMMIT=<sha> bash scripts/probe/x2-final.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-/tmp/llcomm-x2-final}
mkdir -p "$out/r"
export LLCOMM_CACHE_DIR=${LLCOMM_CACHE_DIR:-/tmp/llcomm-cache} NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
OUT="$out/r" BB_BUFFERS="1M 4M" BB_SIZES=256K,512K,1M,2M,4M timeout 150 bash scripts/probe/buffer-bytes.sh | tail -n 8
for b in 16 4; do
  timeout 90 node bin/llcomm.js decode --devices 0,1 --model llama-3.1-8b --batch "$b" --context 4096 \
    --algorithms none,oneshot-ll,oneshot-sentinel,twoshot-sentinel,nccl --rounds 3 --replays 10 --warmup 3 \
    --bench-iters 500 --no-progress --json "$out/r/decode-8b-b$b.json" > "$out/r/decode-8b-b$b.txt" 2>&1 \
    || echo "decode b$b: exit $?"
  grep -E "^(none|oneshot|twoshot|nccl)" "$out/r/decode-8b-b$b.txt"
done
tar -czf "$out/x2-final.tgz" -C "$out" r && rm -rf "$out/r"
