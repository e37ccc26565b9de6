#!/usr/bin/env bash
# Last device call of session 12 (2026-12-04), after the GPU test of the same call (device-session.sh's gpu-test
# step): the committed kernels (the split kernels' first input load before the epoch; the fused two-shot's norm
# from a shared-memory row cache) against 6d749eb's, 3 interleaved rounds of scripts/bench-fused.mjs at 8 and 16
# virtual ranks, bf16, hidden 4096 / 8192, batch 1, 2, 4, 8, 16, 32; the medians table last.
# Trees: `bash research/scripts/probe/session-fused-final.sh make` here (ab/base = 6d749eb's kernels, ab/final = the
# working tree's).
# Prediction (from calls 1 and 3 of the session): split -0.1..-0.2 us at batch 1-4, the two-shot -0.1..-0.2 at
# 8 ranks batch 16 and -0.4..-2.3 at 16 ranks batch 8-16, +0.1 at batch 1; one-shot and unfused unchanged.
set -uo pipefail
cd "$(dirname "$0")/../../.."
if [ "${1:-}" = make ]; then
  rm -rf ab/* && mkdir -p ab
  tmp=$(mktemp -d) && git archive 6d749eb packages/llcomm/kernels | tar -x -C "$tmp" && mv "$tmp/packages/llcomm/kernels" ab/base && rm -rf "$tmp"
  cp -a packages/llcomm/kernels ab/final
  exit 0
fi
out=${OUT:-/tmp/llcomm-fused-final}
mkdir -p "$out/ab"
t0=$(date +%s)
export NCCL_NVLS_ENABLE=0
for ((r = 1; r <= ${AB_ROUNDS:-3}; r++)); do
  if [ "$(( $(date +%s) - t0 ))" -ge 200 ]; then echo "round $r and later: past 200 s, skipped"; break; fi
  for v in base final; do
    s=$(date +%s)
    LLCOMM_KERNELS_DIR=$(realpath ab/$v) LLCOMM_CACHE_DIR=/tmp/llcomm-cache-$v timeout 120 node scripts/bench-fused.mjs \
      --ranks 8,16 --hidden 4096,8192 --batch 1,2,4,8,16,32 --dtype bf16 --out "$out/ab/$v-r$r.json" > "$out/ab/$v-r$r.log" 2>&1
    echo "$v round $r: rc $? $(( $(date +%s) - s )) s"
  done
done
cp "$out/ab/final-r3.json" "$out/bench-fused-final.json" 2>/dev/null
node research/scripts/probe/fused-ab-table.mjs "$out/ab" base final | tee "$out/table.txt"
