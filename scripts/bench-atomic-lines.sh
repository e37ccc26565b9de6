#!/usr/bin/env bash
# The f32-vs-16-bit accumulation bench (issue 18 item 4) on the GPU machine, from the repository root (after
# `npx tsc -b`):
#   bash scripts/bench-atomic-lines.sh     # bf16, twoshot-atomic and ring, 8 KB / 64 KB / 256 KB, 2 and 8 virtual ranks
# Extra arguments go to scripts/bench-atomic-lines.mjs (e.g. --dtype f16, --ranks 8). Output JSON under $OUT (or /tmp).
set -euo pipefail
cd "$(dirname "$0")/.."
export LLCOMM_CACHE_DIR=${LLCOMM_CACHE_DIR:-/tmp/llcomm-cache} NCCL_NVLS_ENABLE=0
export LLCOMM_COMMIT=${LLCOMM_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null || true
node scripts/bench-atomic-lines.mjs "$@"
