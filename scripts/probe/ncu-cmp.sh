# ncu-cmp LABEL DIR RANKS ALG SIZE
label=$1 dir=$2 n=$3 alg=$4 size=$5
devs=$(python3 -c "print(','.join(['0']*$n))")
LLCOMM_KERNELS_DIR=$(realpath $dir) ncu --clock-control none --graph-profiling graph --launch-skip 1 --launch-count 1 \
  --section SpeedOfLight --section WarpStateStats --section InstructionStats --export /tmp/ncu-$label --force-overwrite \
  node bin/llcomm.js bench --devices $devs --algorithms $alg --dtype bf16 --sizes $size --iters 20 --warmup 1 --no-progress > /tmp/ncu-$label.log 2>&1
ncu --import /tmp/ncu-$label.ncu-rep --page raw --csv > $OUT/ab/ncu-$label.csv 2>&1
