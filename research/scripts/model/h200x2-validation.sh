#!/bin/sh
# The 2-GPU validation of the latency model (docs/model.md §5), written to
# bench/results/model-calibration-h200x2-2026-11-29b.txt:
#   npm run build && sh scripts/model/h200x2-validation.sh > bench/results/model-calibration-h200x2-2026-11-29b.txt
# Each section starts with its command; none writes the table (data/latency/platforms.json's h200 entry was written
# by sections 2 and 3's commands with --write added, sections 2 before 3). About 10 seconds of one core.
# Section 1 predicts the file measured at a0bea25 (before the twoshot-atomic publish changed at cf18cd4) with the
# tables frozen in test/fixtures/model/: the historic out-of-sample result, unchanged from
# bench/results/model-calibration-h200x2-2026-11-29.txt. Sections 2-4 fit the file measured at cf18cd4.
set -eu
# the 2-GPU files ran the 11-29 build (1 MiB buffer, the block targets before the 12-02 sweep, the push all-gather,
# 16-bit accumulation); since the model's defaults moved to the 12-02c fit's, they are counted with it explicitly
BUILD="--block-targets before-sweep --twoshot-allgather push --accumulation dtype"
OLD_BENCH=bench/results/cuda-h200x2-bench-2gpu-2026-11-29.json
BENCH=bench/results/cuda-h200x2-bench-2gpu-2026-11-29b.json
LLCOMM=oneshot-ll,oneshot-sentinel,twoshot-sentinel,twoshot-atomic,oneshot-barrier,ring
# the terms whose event crosses NVLink between distinct GPUs; every other constant is h200-virtual's
TRANSPORT=hopUs,pollRoundUs,storeRoundUs,serialRecvUs,ringStepUs,atomicLineUs,barrierFixedUs,usPerWireByte,usPerAtomicByte
FIX=test/fixtures/model

echo "\$ npm run build && sh scripts/model/h200x2-validation.sh > bench/results/model-calibration-h200x2-2026-11-29b.txt"
echo "# (at $(git rev-parse --short HEAD 2>/dev/null || echo 'an unknown commit'); every section below starts with its own command)"
echo

run() {
  echo "\$ $*"
  "$@"
  echo
}

echo "# 1. out-of-sample: the 2-GPU rows of $OLD_BENCH (a0bea25) predicted with tables fixed before they were measured (nothing fitted)"
echo "# 1a. the h200 entry as shipped at 36eb30f (seed form)"
run node bin/llcomm.js model $BUILD --table "$FIX/platforms-h200-shipped-36eb30f.json" --calibrate "$OLD_BENCH" --algorithms "$LLCOMM" --fit none --residuals
echo "# 1b. h200-virtual's kernel-structure constants, hop = the measured NVLink hop (2 L2 round trips + remote store), link = measured peer copy rate"
run node bin/llcomm.js model $BUILD --table "$FIX/platforms-h200x2-virtual-sol-hop.json" --calibrate "$OLD_BENCH" --algorithms "$LLCOMM" --fit none --residuals
echo "# 1c. as 1b, but hop = h200-virtual's fitted hop + (measured NVLink hop − measured one-GPU hop)"
run node bin/llcomm.js model $BUILD --table "$FIX/platforms-h200x2-virtual-sol-delta.json" --calibrate "$OLD_BENCH" --algorithms "$LLCOMM" --fit none --residuals
echo "# 1d. nccl and nccl-symmetric with 1a's table (its libraryOverheadUs is absent: left out)"
run node bin/llcomm.js model $BUILD --table "$FIX/platforms-h200-shipped-36eb30f.json" --calibrate "$OLD_BENCH" --algorithms nccl,nccl-symmetric --fit none

echo "# 2. calibrated: the transport constants fitted to the 2-GPU llcomm rows of $BENCH (cf18cd4), the rest held at h200-virtual's 11-29f fit (the committed h200 entry)"
run node bin/llcomm.js model $BUILD --platform h200 --gpus 2,4,8 --sizes 8,4K,64K,1M,16M --calibrate "$BENCH" --algorithms "$LLCOMM" --fit "$TRANSPORT" --residuals

echo "# 3. nccl and nccl-symmetric: libraryOverheadUs fitted to their rows, every other constant as in 2"
run node bin/llcomm.js model $BUILD --calibrate "$BENCH" --algorithms nccl,nccl-symmetric --fit libraryOverheadUs --residuals

echo "# 4. alternatives to 2's choice of fitted constants (not kept)"
run node bin/llcomm.js model $BUILD --calibrate "$BENCH" --algorithms "$LLCOMM" --fit "kernelFloorUs,$TRANSPORT"
run node bin/llcomm.js model $BUILD --calibrate "$BENCH" --algorithms "$LLCOMM" --fit "$(echo "$TRANSPORT" | sed 's/storeRoundUs,//')"
run node bin/llcomm.js model $BUILD --calibrate "$BENCH" --algorithms "$LLCOMM"

echo "# 5. the seed checks with the committed tables (the h200 claims are at 8 GPUs: an extrapolation in N from 2)"
run node bin/llcomm.js model $BUILD --seed-checks
