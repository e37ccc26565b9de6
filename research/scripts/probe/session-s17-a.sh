#!/usr/bin/env bash
# Issue 21, session 17 (2026-12-07): the split two-shot (fused_split.cuh kTwo, algorithm 'split-twoshot'), first run
# on a GPU. Predictions (written before the run; research/notes/fused-probes.md, "a split two-shot"):
#   - the fused GPU test passes with split-twoshot in every shape it serves (bitwise equal to the unfused composition
#     on every rank, graph replays included);
#   - 8 ranks bf16, split-twoshot against split: 8192 x 4 about 6.6 us (0.75 of unfused), 8192 x 8 about 7.3 (0.76);
#     at hidden 4096 no gain (twoshot-sentinel and oneshot-sentinel within 0.03 us at 32 KB); at batch 1-2 slower than
#     split (a second round trip on messages too small for the one-shot's volume to matter);
#   - the owner's reduce: product (push: spread over the block, (slot, peer) pairs staged in shared memory, where the
#     part has no holes and 8+ ranks) against s4 (ab15/s4: serial, a thread per slot, 4 peers a poll round: two
#     rounds at 8 ranks) and s8 (ab15/s8: serial, 8 peers a round, spilling 16-20 bytes): s4 - push +0.3..+0.6 us
#     (a poll round trip and 8x fewer threads polling), s8 - push +0.1..+0.3 on split-twoshot at 8 ranks.
# What would falsify the design: split-twoshot slower than split at 8192 x 4 as well.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source research/scripts/probe/fused-ab-lib.sh
fused_session_init /tmp/llcomm-s17-a
if [ "${STEP:-ab}" = ab ]; then
  fused_ab_round 1 17 push s4 s8
  fused_ab_round 2 17 s8 s4 push
  AB_COMPARE=fused-split-twoshot node research/scripts/probe/fused-ab-table.mjs "$out/ab" push s4 s8 > "$out/ab-table.txt" 2>&1
  fused_gpu_test_product
  grep '"passed":false' "$out/gpu-product.jsonl" | head -5 | cut -c1-400
  echo "== A/B (spl2s: split-twoshot)"; cut -c1-400 "$out/ab-table.txt"
fi
echo "== summary"; cat "$summary"
