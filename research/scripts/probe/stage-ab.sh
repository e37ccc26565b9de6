#!/usr/bin/env bash
# Does the one-shot kernels' 32 KB static shared stage (LLCOMM_PEER_STAGE_WORDS 8192, used only on the peer-parallel
# path, from 8 ranks up) cost launch time at 2-4 ranks, where it is never used? cur (kernels/) against stage256 (the
# same tree with a 1 KB stage: mkdir -p ab/stage256 && cp -r kernels/. ab/stage256/ && sed -i
# 's/^#define LLCOMM_PEER_STAGE_WORDS 8192$/#define LLCOMM_PEER_STAGE_WORDS 256/' ab/stage256/llcomm/ll_buffer.cuh).
set -uo pipefail
cd "$(dirname "$0")/../.."
for n in 2 4; do
  devs=$(printf '0,%.0s' $(seq $n)); devs=${devs%,}
  AB_TAG=v$n bash scripts/probe/ab-kernels.sh "${AB_ROUNDS:-3}" cur=kernels stage256=ab/stage256 -- --devices "$devs" \
    --algorithms oneshot-ll,oneshot-sentinel,twoshot-sentinel --dtype bf16,f32 --sizes 8,2K --iters 1000 --warmup 100
done
