#!/usr/bin/env bash
# Session 6, second device call (2026-12-02): the fused bench at 8 virtual ranks (hidden 4096 / 8192, batch 1-16,
# bf16) at the new 4 MiB default receive buffer and, in a second process right after, at the 1 MiB buffer the fused
# planner's crossovers were measured at (issue 21: does 'auto' still pick the fastest fused kernel once the one-shot
# and split lanes hold 8192-wide rows?). Then scripts/device-session.sh's gpu-test step runs the GPU tests.
set -uo pipefail
cd "$(dirname "$0")/../../.."
out=${OUT:-/tmp/llcomm-s6-b}
mkdir -p "$out"
for bb in 4194304 1048576; do
  t0=$(date +%s)
  timeout 150 node scripts/bench-fused.mjs --ranks 8 --hidden 4096,8192 --batch 1,2,4,8,16 --buffer-bytes "$bb" \
    --out "$out/fused-bb$bb.json" > "$out/fused-bb$bb.log" 2>&1
  echo "fused bench, bufferBytes $bb: rc $? $(( $(date +%s) - t0 )) s"
done
for bb in 4194304 1048576; do echo "== bufferBytes $bb"; grep -vE "^\s*$" "$out/fused-bb$bb.log" | tail -14; done
