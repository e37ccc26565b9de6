#!/usr/bin/env bash
# Issue 21, session 14 (2026-12-07): what the split kernels' two cluster barriers cost on the H100.
# The SASS of HEAD's split kernel (research/results/fused-h100-2026-12-07/, cuobjdump on the GPU machine): each
# barrier.cluster.arrive.release is MEMBAR.ALL.GPU + ERRBAR + CGAERRBAR + UCGABAR_ARV, each wait.acquire UCGABAR_WAIT +
# CCTL.IVALL. The 2026-12-07 timeline (4096 x 1, 8 virtual ranks) has every thread of every block past its q by
# 2.98 us and the first barrier passed at 3.71 (+0.73, no skew between the blocks to wait for), then +0.45 from the
# inverse RMS to the second arrive. Probe `relx` (ab14/relx: both arrives .relaxed, so no MEMBAR; timing only, the
# q's are not ordered for the other blocks' reads) against HEAD (ab14/head), 3 interleaved rounds, and the timeline
# of both. Prediction (written before the run): if the MEMBAR is the cost, split -0.6..-1.0 us at 4096 / 8192 batch
# 1-4 (the split shapes); if relx is within 0.1 of head, the barriers' time is not the membar and the push design
# (st.async, no release) has nothing to gain on this GPU either.
# Here: the trees are made by hand (ab14/, see the closing note of session 14), then scripts/device-bundle.sh.
set -uo pipefail
cd "$(dirname "$0")/../../.."
out=${OUT:-/tmp/llcomm-s14-b}
mkdir -p "$out/ab"
export NCCL_NVLS_ENABLE=0
for ((r = 1; r <= ${AB_ROUNDS:-3}; r++)); do
  for v in head relx; do
    LLCOMM_KERNELS_DIR=$(realpath ab14/$v) LLCOMM_CACHE_DIR=/tmp/llcomm-cache-14-$v timeout 120 node scripts/bench-fused.mjs \
      --ranks 8 --hidden 4096,8192 --batch 1,2,4,8 --dtype bf16 --out "$out/ab/$v-r$r.json" > "$out/ab/$v-r$r.log" 2>&1
    echo "$v round $r: rc $?"
  done
done
for v in head relx; do
  LLCOMM_KERNELS_DIR=$(realpath ab14/tl-$v) LLCOMM_CACHE_DIR=/tmp/llcomm-cache-14-tl-$v timeout 100 node \
    research/scripts/probe/fused-timeline.mjs --ranks 8 --shapes 4096x1,8192x1 --json "$out/timeline-$v.json" \
    > "$out/timeline-$v.log" 2>&1
  echo "timeline $v: rc $?"
done
for v in head relx; do echo "== timeline $v"; grep -E "fused-split|rmsnorm " "$out/timeline-$v.log" | cut -c1-230; done
node research/scripts/probe/fused-ab-table.mjs "$out/ab" head relx | tee "$out/table.txt"
