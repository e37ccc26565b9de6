#!/usr/bin/env bash
# The fused-vs-unfused kernel bench on the GPU machine, from the repository root (after `npm run build`):
#   bash scripts/bench-fused.sh            # bf16, 2 and 8 virtual ranks, hidden 4096/8192, batch 1..64
# Extra arguments go to scripts/bench-fused.mjs (e.g. --dtype f16, --ranks 8). Output JSON under $OUT (or /tmp).
set -euo pipefail
cd "$(dirname "$0")/.."
export LLCOMM_CACHE_DIR=${LLCOMM_CACHE_DIR:-/tmp/llcomm-cache} NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null || true
node scripts/bench-fused.mjs "$@"
