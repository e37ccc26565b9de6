#!/usr/bin/env bash
# Issue 21, session 21 (2026-12-08): the per-process fused call's first GPU run (b3f49f5: the fused signature cluster,
# CudaProcessCommunicator.deviceAllReduceRmsNorm). One call: the GPU tests multiprocess-fused (2 and 4 processes on
# one GPU, every fused kernel and 'auto', bf16/f16/f32, bitwise against the in-process call, and rows differing on
# one rank), fused (the in-process fused test: the kernels' parameter struct grew by 8 bytes, their instructions did
# not change) and multiprocess (the per-process all-reduce: its launcher now shares a buffer set with the fused one).
# Predictions (written before the run): every case passes; the mismatched call ends with MISMATCH on every rank in
# well under a second (the signature cluster's check, not the 4 s deadline).
set -uo pipefail
cd "$(dirname "$0")/../../.."
out=${OUT:-/tmp/llcomm-s21-b}
mkdir -p "$out"
t0=$SECONDS
OUT="$out" LLCOMM_GPU_TESTS="multiprocess-fused fused multiprocess" LLCOMM_SKIP_SANITIZER=1 \
  LLCOMM_GPU_TEST_TIMEOUT_S=470 timeout 490 bash scripts/gpu-test.sh > "$out/gpu-test-run.txt" 2>&1
echo "gpu tests: rc $?, $((SECONDS - t0)) s"
grep -E "^(✔|✖)" "$out/gpu-test.log" | cut -c1-220
tail -8 "$out/gpu-test-run.txt"
