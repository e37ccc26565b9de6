#!/usr/bin/env bash
# Sweep of the blocks a rank puts on a message (issue 22: the 0.8 goals at 16-32 ranks), on the GPU machine, in one
# device call, from the repository root: the product's kernels, with LLCOMM_TARGET_BYTES_PER_BLOCK_SCALE at each of
# SWEEP_SCALES (kernel-table.ts: every TARGET_BYTES_PER_BLOCK entry times the scale, capped by maxBlocksPerRank: 8
# blocks a rank at 16 ranks, 4 at 32, 2 at 64), one bench per scale per round, scales interleaved, bf16.
# Knobs: SWEEP_SCALES (0.25,0.5,1,2), SWEEP_RANKS (16,32), SWEEP_SIZES (8K,64K), SWEEP_ALGORITHMS
# (oneshot-ll,oneshot-sentinel,twoshot-sentinel,oneshot-barrier), SWEEP_ROUNDS (3), SWEEP_ITERS (300),
# SWEEP_WARMUP (50), SWEEP_BUDGET_S (90: no round is started past it). The table (ab-table.mjs --barrier best)
# gives each scale's ratio to the best scale's oneshot-barrier: the barrier's launch changes with the scale too.
set -uo pipefail
cd "$(dirname "$0")/../../.."
base=${OUT:-/tmp/llcomm-block-scale}/scale
IFS=, read -r -a scales <<<"${SWEEP_SCALES:-0.25,0.5,1,2}"
IFS=, read -r -a rankCounts <<<"${SWEEP_RANKS:-16,32}"
sizes=${SWEEP_SIZES:-8K,64K}
rounds=${SWEEP_ROUNDS:-3} iters=${SWEEP_ITERS:-300} warmup=${SWEEP_WARMUP:-50} budget=${SWEEP_BUDGET_S:-90}
for s in "${scales[@]}"; do
  [[ $s =~ ^[0-9]+(\.[0-9]+)?$ ]] || { echo "SWEEP_SCALES: '$s' is not a number" >&2; exit 2; }
done
export LLCOMM_CACHE_DIR=${LLCOMM_CACHE_DIR:-/tmp/llcomm-cache} NCCL_NVLS_ENABLE=0
start=$(date +%s)
labels=()
for s in "${scales[@]}"; do labels+=("s$s"); done
for ((r = 1; r <= rounds; r++)); do
  if [ $(($(date +%s) - start)) -gt "$budget" ]; then
    echo "budget: round $r not started"
    break
  fi
  for n in "${rankCounts[@]}"; do
    devs=$(printf '0,%.0s' $(seq "$n")); devs=${devs%,}
    mkdir -p "$base/v$n/ab"
    for s in "${scales[@]}"; do
      f=$base/v$n/ab/s$s-r$r
      LLCOMM_TARGET_BYTES_PER_BLOCK_SCALE=$s timeout 120 node packages/tools/bin/llcomm.js bench --no-progress \
        --devices "$devs" --algorithms "${SWEEP_ALGORITHMS:-oneshot-ll,oneshot-sentinel,twoshot-sentinel,oneshot-barrier}" \
        --dtype bf16 --sizes "$sizes" --iters "$iters" --warmup "$warmup" --json "$f.json" > "$f.log" 2>&1 ||
        echo "scale $s, $n ranks, round $r: exit $?"
    done
  done
  echo "round $r: $(($(date +%s) - start)) s elapsed"
done
node research/scripts/probe/ab-table.mjs "$base" "${labels[*]}" "$(IFS=,; echo "${rankCounts[*]}")" "$sizes" --barrier best
