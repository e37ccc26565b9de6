#!/usr/bin/env bash
# A/B of the scale variants of issue 22 (first step; analysis and predictions: research/notes/scale-2026-12-01.md)
# on the GPU machine, in one device call, from the repository root: the trees named by AB_TREES (default "base spread
# merged"; any of base, batch, spread, merged, serialbatch, pullag: ab/scale-<name>, made here by research/scripts/probe/make-scale-trees.sh
# before the call; they travel with the working tree; the run of bench/results/cuda-h200-scale-ab-2026-12-01.txt
# compared "base batch spread"), the same host code, through research/scripts/probe/ab-kernels.sh (one bench per tree
# per round, trees interleaved), twoshot-sentinel, twoshot-atomic and oneshot-barrier (the reference: the same source
# in every tree), bf16, 8 KB and 64 KB (AB_SIZES), on 16, 32 and 64 virtual ranks of GPU 0 (AB_RANKS).
#   bash research/scripts/probe/make-scale-trees.sh   # here, before the device call
#   bash research/scripts/probe/scale-ab.sh           # on the GPU machine
# Knobs: AB_ROUNDS (3), AB_ITERS (300), AB_WARMUP (50), AB_BUDGET_S (85: no new (round, ranks) step is started when
# the elapsed time plus the longest step of that rank count so far would pass it; the summary says what ran),
# AB_ALGORITHMS (twoshot-sentinel,twoshot-atomic,oneshot-barrier; keep oneshot-barrier, the reference), AB_RANKS
# (16,32,64: virtual rank counts), AB_SIZES (8K,64K: the bench's --sizes, K and M suffixes). E.g. the serial
# path at 8 ranks: AB_TREES="merged serialbatch" AB_RANKS=8 AB_SIZES=256K,1M bash research/scripts/probe/scale-ab.sh;
# AB_BUFFER_BYTES (unset: the bench's default, 1M on cuda; e.g. 2M: at 8 ranks a 1 MB call is then one launch of
# 512-slot parts instead of two of 256-slot parts).
# Prints per case the median us per tree (over rounds), and each tree's ratio to oneshot-barrier (the median of the
# barrier's samples of all trees at that rank count and size); the goal of issue 22 is best barrier-free <= 0.8.
set -uo pipefail
cd "$(dirname "$0")/../../.."
trees=(${AB_TREES:-base spread merged})
treeArgs=()
for v in "${trees[@]}"; do
  test -d ab/scale-$v || { echo "ab/scale-$v missing: run research/scripts/probe/make-scale-trees.sh first" >&2; exit 2; }
  treeArgs+=("$v=ab/scale-$v")
done
base=${OUT:-/tmp/llcomm-ab}/scale
rounds=${AB_ROUNDS:-3} iters=${AB_ITERS:-300} warmup=${AB_WARMUP:-50} budget=${AB_BUDGET_S:-85}
IFS=, read -r -a rankCounts <<<"${AB_RANKS:-16,32,64}"
sizes=${AB_SIZES:-8K,64K}
bufferArgs=()
if [ -n "${AB_BUFFER_BYTES:-}" ]; then
  [[ $AB_BUFFER_BYTES =~ ^[0-9]+[KM]?$ ]] || { echo "AB_BUFFER_BYTES: '$AB_BUFFER_BYTES' is not a size like 2M" >&2; exit 2; }
  bufferArgs=(--buffer-bytes "$AB_BUFFER_BYTES")
fi
for n in "${rankCounts[@]}"; do
  [[ $n =~ ^[1-9][0-9]*$ ]] || { echo "AB_RANKS: '$n' is not a rank count" >&2; exit 2; }
done
[[ $sizes =~ ^[0-9]+[KM]?(,[0-9]+[KM]?)*$ ]] || { echo "AB_SIZES: '$sizes' is not a list like 8K,64K,1M" >&2; exit 2; }
mkdir -p "$base"
start=$(date +%s.%N)
declare -A longest=()
for n in "${rankCounts[@]}"; do longest[$n]=0; done
for ((r = 1; r <= rounds; r++)); do
  for n in "${rankCounts[@]}"; do
    now=$(date +%s.%N)
    if awk -v s="$start" -v t="$now" -v l="${longest[$n]}" -v b="$budget" 'BEGIN { exit !(t - s + l > b) }'; then
      echo "budget: round $r at $n ranks not started ($(awk -v s="$start" -v t="$now" 'BEGIN { printf "%.1f", t - s }') s elapsed)"
      continue
    fi
    devs=$(printf '0,%.0s' $(seq $n)); devs=${devs%,}
    OUT=$base/v$n AB_TAG=r$r bash research/scripts/probe/ab-kernels.sh 1 "${treeArgs[@]}" -- --devices "$devs" --algorithms "${AB_ALGORITHMS:-twoshot-sentinel,twoshot-atomic,oneshot-barrier}" \
      --dtype bf16 --sizes "$sizes" --iters "$iters" --warmup "$warmup" "${bufferArgs[@]}" > "$base/v$n-r$r.log" 2>&1
    grep -E "round|WRONG" "$base/v$n-r$r.log"
    end=$(date +%s.%N)
    step=$(awk -v a="$now" -v b="$end" 'BEGIN { printf "%.1f", b - a }')
    longest[$n]=$(awk -v a="${longest[$n]}" -v b="$step" 'BEGIN { print (b > a ? b : a) }')
    echo "round $r, $n ranks: $step s (${#trees[@]} trees)"
  done
done
echo "total $(awk -v s="$start" -v t="$(date +%s.%N)" 'BEGIN { printf "%.1f", t - s }') s"
node research/scripts/probe/ab-table.mjs "$base" "${trees[*]}" "$(IFS=,; echo "${rankCounts[*]}")" "$sizes"
