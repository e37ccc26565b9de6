#!/usr/bin/env bash
# A/B of the W-sized tail loads and stores (bench/NOTES.md, fourth session): cur (kernels/) against prev (kernels/ at
# 8f68308, in ab/prev: git archive 8f68308 kernels | tar -x -C ab/prev --strip-components=1). On the GPU machine.
set -uo pipefail
cd "$(dirname "$0")/../.."
for n in 2 4 16 32; do
  devs=$(printf '0,%.0s' $(seq $n)); devs=${devs%,}
  AB_TAG=v$n bash scripts/probe/ab-kernels.sh "${AB_ROUNDS:-2}" cur=kernels prev=ab/prev -- --devices "$devs" \
    --algorithms oneshot-ll,oneshot-sentinel,twoshot-sentinel,twoshot-atomic --dtype bf16,f32 --sizes 8,2K,8K \
    --iters 500 --warmup 100
done
