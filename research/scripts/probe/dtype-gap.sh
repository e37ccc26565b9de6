#!/usr/bin/env bash
# Why bf16 is slower than f32 at equal bytes in the LL and sentinel kernels (0.1-0.3 us at 2-4 virtual ranks, 8 B;
# bench/results/cuda-h200-bench-v*-2026-11-29f.json), but not in oneshot-barrier. On the GPU machine:
#   source .carry/activate && ln -sfn .devnm/node_modules node_modules && bash scripts/probe/dtype-gap.sh
# 1. SASS of the one-shot kernels (nvcc -cubin for sm_90, cuobjdump -sass), to diff the f32 and bf16 instantiations;
# 2. Nsight Compute on one launch of the kernel (all virtual ranks in it) per dtype: oneshot-ll and oneshot-barrier at
#    4 ranks, 8 B, with the source counters (stall samples per SASS instruction), warp states and instructions.
# Everything lands in $OUT/dtype-gap.tgz.
set -uo pipefail
out=${OUT:-/tmp/llcomm-dtype-gap}
res=/tmp/dtype-gap
rm -rf "$res" && mkdir -p "$res"
export LLCOMM_CACHE_DIR=${LLCOMM_CACHE_DIR:-/tmp/llcomm-cache} NCCL_NVLS_ENABLE=0
for k in ${DTYPE_GAP_SASS:-oneshot_ll oneshot_sentinel oneshot_barrier}; do
  nvcc -arch=sm_90 -cubin -I kernels -o "$res/$k.cubin" "kernels/allreduce/$k.cu" > "$res/nvcc-$k.log" 2>&1
  cuobjdump -sass "$res/$k.cubin" > "$res/sass-$k.txt" 2>&1
done
for n in ${DTYPE_GAP_RANKS:-4}; do
  devs=$(python3 -c "print(','.join(['0']*$n))")
  for dt in bf16 f32; do
    for alg in oneshot-ll oneshot-barrier; do
      tag=$alg-v$n-8-$dt
      node bin/llcomm.js bench --devices "$devs" --algorithms "$alg" --dtype "$dt" --sizes 8 --iters 2000 --warmup 200 \
        --no-progress > "$res/bench-$tag.txt" 2>&1
      # Virtual ranks run as one cooperative kernel, so a kernel node can be profiled on its own (ncu saves and
      # restores memory between its replay passes); the tenth launch, after the warm-up calls.
      timeout 120 ncu --clock-control none --kernel-name regex:llcomm_ --launch-skip 10 --launch-count 1 ${DTYPE_GAP_NCU_ARGS:-} \
        --section SpeedOfLight --section WarpStateStats --section InstructionStats --section SourceCounters \
        --section LaunchStats --export "$res/ncu-$tag" --force-overwrite \
        node bin/llcomm.js bench --devices "$devs" --algorithms "$alg" --dtype "$dt" --sizes 8 --iters 20 --warmup 1 \
        --no-progress > "$res/ncu-$tag.log" 2>&1
      ncu --import "$res/ncu-$tag.ncu-rep" --page details --csv > "$res/ncu-$tag.details.csv" 2>&1
      ncu --import "$res/ncu-$tag.ncu-rep" --page source --csv --print-source sass > "$res/ncu-$tag.source.csv" 2>&1
      ncu --import "$res/ncu-$tag.ncu-rep" --page raw --csv > "$res/ncu-$tag.raw.csv" 2>&1
    done
  done
done
tar -czf "$out/dtype-gap.tgz" -C /tmp dtype-gap
grep -h "oneshot" "$res"/bench-*.txt | grep -E " 8 " | head
