#!/usr/bin/env bash
# Issue 21, session 17, second call: the split two-shot with the one-window rule for its spread reduce (after
# session-s17-a.sh: at 8192 x 16, 128-slot parts in two windows, the spread reduce was 0.46-0.58 us slower than the
# serial one), and 'auto' taking it at 8-15 ranks, hidden >= 8192, batch 4-8.
# Predictions (written before the run):
#   - fused GPU test passes (both reduces still run: 8192 x 16 now takes the serial one);
#   - split-twoshot at 8192 x 16: the product within 0.05 us of s4 (the same serial code), batch 1-8 unchanged
#     (within 0.05 us of session-s17-a's push column);
#   - self (ab15/self: LLCOMM_SPLIT_TWO_SELF=1, the owner sends its reduced slots to its own all-gather lane too and
#     the unit threads take every slot from the all-gather lanes: no shared copy, no __syncthreads after the reduce)
#     against push: -0.1..-0.3 us at 8192 batch 1-8 (the block barrier waited for the slowest owner thread);
#   - keep (ab15/keep: LLCOMM_SPLIT_TWO_KEEP=1, the LL16 kernel's `keep` path: each thread's one slot's residual and
#     weights kept in registers for the output pass, the weights loaded before the receive) against push: -0.1..-0.2
#     us where every thread has at most one slot (8192 x 1-8, 4096 x 1-8); selfkeep (both) the sum of the two.
#   - TP 8 decode of Llama-3.1-70B shapes (8 virtual ranks, 20 of 80 layers, context 4096): at batch 4 and 8 'fused'
#     (auto: split-twoshot) faster than 'unfused' by 160 AllReduce+RMSNorm calls x ~1 us, about 0.15-0.2 ms a step,
#     more than the run-to-run spread; and faster than fused-twoshot by ~0.5 us a call (~0.08 ms a step) at batch 4.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source research/scripts/probe/fused-ab-lib.sh
fused_session_init /tmp/llcomm-s17-b
# (the device tool brings back 8 files: the A/B runs are packed into ab.tgz at the end)
trap 'tar czf "$out/ab.tgz" -C "$out" ab && rm -rf "$out/ab"' EXIT
fused_gpu_test_product
fused_ab_round 1 17b push self keep selfkeep s4
fused_ab_round 2 17b s4 selfkeep keep self push
AB_COMPARE=fused-split-twoshot node research/scripts/probe/fused-ab-table.mjs "$out/ab" push self keep selfkeep s4 > "$out/ab-table.txt" 2>&1
for b in 4 8; do
  timeout 200 node packages/tools/bin/llcomm.js decode --no-progress --devices 0,0,0,0,0,0,0,0 \
    --model llama-3.1-70b --layers 20 --batch $b --context 4096 --algorithms none,twoshot-sentinel --fused --rounds 5 \
    --json "$out/decode-70b-l20-b$b.json" > "$out/ab/decode-70b-l20-b$b.txt" 2>&1
  say "decode 70b batch $b: rc $?"
done
echo "== A/B (spl2s: split-twoshot)"; cut -c1-700 "$out/ab-table.txt"
for b in 4 8; do echo "== decode 70b b$b"; grep -vE "^\s*$" "$out/ab/decode-70b-l20-b$b.txt" | tail -14; done
echo "== summary"; cat "$summary"
