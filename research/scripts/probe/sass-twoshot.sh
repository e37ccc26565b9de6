#!/usr/bin/env bash
# SASS of twoshot-sentinel bf16 with the half-by-half arrival test (ab/mixed) and with the OR test (ab/arrive), for
# the question in bench/NOTES.md (eighth session): why the OR test slows it at large sizes. Make the trees here first
# (bash scripts/probe/ab-16bit-word.sh make); on the GPU machine: bash scripts/probe/sass-twoshot.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
mkdir -p $OUT/sass
for v in mixed arrive; do
  nvcc -arch sm_90 -cubin -std=c++17 -Xptxas -v -I ab/$v ab/$v/allreduce/twoshot_sentinel.cu -o /tmp/ts-$v.cubin > $OUT/sass/ptxas-$v.txt 2>&1
  cuobjdump -sass -fun llcomm_twoshot_sentinel_sentinel_bf16_sum /tmp/ts-$v.cubin > $OUT/sass/ts-bf16-$v.sass 2>&1
  wc -l $OUT/sass/ts-bf16-$v.sass
  grep -A3 "bf16_sum" $OUT/sass/ptxas-$v.txt | grep -E "Used|spill"
done
tar -czf $OUT/sass.tgz -C $OUT sass && rm -rf $OUT/sass
