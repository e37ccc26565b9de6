#!/usr/bin/env bash
# A/B for two kernel changes of 2026-11-29 (bench/NOTES.md), run on the GPU machine from the repository root:
#   1. the spread path only from LLCOMM_SPREAD_MIN_GROUPS = 4 thread groups: cur (kernels/) against g2 (the same
#      tree with the old rule, 2 groups), oneshot-ll bf16 at 16, 32 and 64 virtual ranks;
#   2. twoshot-atomic publishing a warp's lines with one fence: cur against old (the kernels of a0bea25), on two GPUs
#      when there are two, and at 8 and 64 virtual ranks.
# Trees: ab/g2 and ab/old, made here by scripts/probe/make-ab-trees.sh (untracked, not ignored: they travel).
# Output: $OUT/ab/*.json and the median tables on stdout.
set -uo pipefail
cd "$(dirname "$0")/../.."
rounds=${AB_ROUNDS:-2}
for n in 16 32 64; do
  devs=$(printf '0,%.0s' $(seq $n)); devs=${devs%,}
  AB_TAG=v$n bash scripts/probe/ab-kernels.sh "$rounds" cur=kernels g2=ab/g2 -- --devices "$devs" \
    --algorithms oneshot-ll,oneshot-sentinel --dtype bf16 --sizes 1K,2K,4K,16K,64K --iters 300 --warmup 50
done
if [ "$(nvidia-smi -L | wc -l)" -ge 2 ]; then
  AB_TAG=2gpu bash scripts/probe/ab-kernels.sh "$rounds" cur=kernels old=ab/old -- --devices 0,1 \
    --algorithms twoshot-atomic --dtype bf16,f32 --sizes 8,8K,64K,1M --iters 300 --warmup 50
fi
for n in 8 64; do
  devs=$(printf '0,%.0s' $(seq $n)); devs=${devs%,}
  AB_TAG=atomic-v$n bash scripts/probe/ab-kernels.sh "$rounds" cur=kernels old=ab/old -- --devices "$devs" \
    --algorithms twoshot-atomic --dtype bf16 --sizes 8,8K,64K,256K --iters 300 --warmup 50
done
