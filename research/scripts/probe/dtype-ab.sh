#!/usr/bin/env bash
# bf16 against f32 at equal bytes, for three kernel trees (scripts/probe/make-dtype-trees.sh): cur, f32acc, notail.
# On the GPU machine; output in $OUT/ab, median tables on stdout.
set -uo pipefail
cd "$(dirname "$0")/../.."
for n in 4 16 32; do
  devs=$(printf '0,%.0s' $(seq $n)); devs=${devs%,}
  AB_TAG=v$n bash scripts/probe/ab-kernels.sh "${AB_ROUNDS:-2}" cur=kernels f32acc=ab/f32acc notail=ab/notail -- \
    --devices "$devs" --algorithms oneshot-ll,oneshot-sentinel --dtype bf16,f32 --sizes 8,2K --iters 500 --warmup 100
done
