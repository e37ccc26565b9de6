#!/usr/bin/env bash
# For the next device call (written 2026-12-04, session 12; its start was refused: device time ran out): the kernel timeline with the SM clock (clock64 at a block's entry
# and record, timeline-tree.py since 0c7a76a) at 8 virtual ranks, 4096 x 1 and 4096 x 16, on the committed kernels.
# Question: is the ~0.6 us of every norm pass's inverse RMS (and the split tail) serial work at the full clock
# (~1.98 GHz: ~1,200 cycles) or the SM running slower in these short kernels? Prediction: 1.6-2.0 GHz.
# Here: `bash research/scripts/probe/session-timeline-clock.sh make` (ab/timeline, untracked: it travels).
set -uo pipefail
cd "$(dirname "$0")/../../.."
if [ "${1:-}" = make ]; then
  rm -rf ab && mkdir -p ab && python3 research/scripts/probe/timeline-tree.py packages/llcomm/kernels ab/timeline
  exit 0
fi
out=${OUT:-/tmp/llcomm-timeline-clock}
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0
LLCOMM_KERNELS_DIR=$(realpath ab/timeline) LLCOMM_CACHE_DIR=/tmp/llcomm-cache-timeline timeout 100 node \
  research/scripts/probe/fused-timeline.mjs --ranks 8 --shapes 4096x1,4096x16 --json "$out/timeline-clock-v8.json" \
  > "$out/timeline-clock-v8.log" 2>&1
echo "timeline: rc $?"
cat "$out/timeline-clock-v8.log"
