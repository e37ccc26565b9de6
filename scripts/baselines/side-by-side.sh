#!/usr/bin/env bash
# One call on the GPU machine (two or more GPUs): llcomm's bench and PyTorch's symmetric-memory and NCCL AllReduce
# (scripts/baselines/torch-symm-mem.py) on the same GPUs, sizes and dtypes, one after the other in the same call.
# Then here: llcomm bench --from $OUT/bench.json --baseline $OUT/torch.json prints them side by side.
#   scripts/device-bundle.sh, then through the device tool, carry [".carry","dist",".devnm"]:
#   source .carry/activate && ln -sfn .devnm/node_modules node_modules && LLCOMM_COMMIT=<sha> bash scripts/baselines/side-by-side.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-/tmp/llcomm-side-by-side}
mkdir -p "$out"
export LLCOMM_CACHE_DIR=${LLCOMM_CACHE_DIR:-/tmp/llcomm-cache} NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
gpus=$(nvidia-smi -L | wc -l)
devices=$(seq -s, 0 $((gpus - 1)))
sizes=${SBS_SIZES:-8,64,512,2K,4K,8K,16K,32K,64K,128K,256K,512K,1M}
dtypes=${SBS_DTYPES:-bf16,f32}
python3 -c 'import torch; print("torch", torch.__version__, "gpus", torch.cuda.device_count())'
timeout 200 node packages/tools/bin/llcomm.js bench --devices "$devices" --sizes "$sizes" --dtype "$dtypes" --no-progress \
  --iters 500 --warmup 100 --json "$out/bench.json" > "$out/bench.txt" 2>&1
echo "llcomm bench exit $?"
timeout 300 python3 scripts/baselines/torch-symm-mem.py --sizes "$sizes" --dtype "$dtypes" --iters 500 --warmup 100 \
  --commit "${LLCOMM_COMMIT:-unknown}" --out "$out/torch.json" > "$out/torch.txt" 2>&1
echo "torch baselines exit $?"
tail -n 5 "$out/torch.txt"
