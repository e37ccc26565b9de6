#!/usr/bin/env bash
# Session 11, third device call (2026-12-03; issue 21), after the GPU test of the same tree: the fused two-shot's
# spread path (fused_rmsnorm_twoshot.cu: twoshot_sentinel.cu's spread path with residual adds, then the norm) in the
# kernel-level fused bench, 8 virtual ranks, bf16, hidden 4096 and 8192, batch 1, 4, 8, 16, 32: the fused-2s column
# (forced two-shot) against unfused (AllReduce + RMSNorm) in one run. FUSED_RANKS, FUSED_BATCH: other shapes (the
# second run, after the planner change e7de032: 8,16 ranks, fused-auto now the two-shot at batch 8-32). The serial fused two-shot measured 10.9-11.8 us
# at batch 16 on 12-03 (bench/results/cuda-h200-bench-fused-bf16-v8-2026-12-03.json). JSON at $OUT/fused-8r.json.
set -uo pipefail
cd "$(dirname "$0")/../../.."
out=${OUT:-/tmp/llcomm-s11-c}
mkdir -p "$out"
export LLCOMM_CACHE_DIR=${LLCOMM_CACHE_DIR:-/tmp/llcomm-cache} NCCL_NVLS_ENABLE=0
t0=$(date +%s)
timeout 130 node scripts/bench-fused.mjs --ranks ${FUSED_RANKS:-8} --hidden 4096,8192 --batch ${FUSED_BATCH:-1,4,8,16,32} --dtype bf16 \
  --out "$out/fused-8r.json" > "$out/fused-8r.log" 2>&1
echo "bench-fused 8 ranks: rc $? $(( $(date +%s) - t0 )) s"
cat "$out/fused-8r.log" | cut -c1-220
