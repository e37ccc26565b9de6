#!/bin/sh
# The 2-GPU refit of the latency model's h200 entry to the kernels of 5e4a711 (docs/model.md §5), written to
# bench/results/model-calibration-h200x2-2026-11-29c.txt:
#   npm run build && sh scripts/model/h200x2-refit-c.sh > bench/results/model-calibration-h200x2-2026-11-29c.txt
# The c file was measured at 1bac1a6 on two H200s (its kernels are those of 5e4a711). Sections 1-2 predict it with
# tables frozen before it existed, nothing fitted; section 3 is the committed h200 entry's fit (written with --write
# added, after its non-transport constants were copied from h200-virtual's 11-29h fit, as in the pre-c fixture).
set -eu
# the 2-GPU files ran the 11-29 build (1 MiB buffer, the block targets before the 12-02 sweep, the push all-gather,
# 16-bit accumulation); since the model's defaults moved to the 12-02c fit's, they are counted with it explicitly
BUILD="--block-targets before-sweep --twoshot-allgather push --accumulation dtype"
C=bench/results/cuda-h200x2-bench-2gpu-2026-11-29c.json
ALGS=oneshot-ll,oneshot-sentinel,twoshot-sentinel,twoshot-atomic,oneshot-barrier,ring
FITTED=hopUs,pollRoundUs,storeRoundUs,serialRecvUs,ringStepUs,atomicLineUs,barrierFixedUs,usPerWireByte,usPerAtomicByte
FROZEN=test/fixtures/model

section() { printf '# %s\n$ %s\n' "$1" "$2"; sh -c "$2"; echo; }

echo "\$ npm run build && sh scripts/model/h200x2-refit-c.sh > bench/results/model-calibration-h200x2-2026-11-29c.txt"
echo "# at $(git rev-parse --short HEAD 2>/dev/null || echo 'an unknown commit')"
echo
section "1. out of sample: the entry fitted to the cf18cd4 file (h200-virtual's 11-29f constants), nothing fitted" \
  "node bin/llcomm.js model $BUILD --table $FROZEN/platforms-h200x2-11-29b.json --platform h200 --calibrate $C --algorithms $ALGS --fit none --residuals"
section "2. out of sample: 1's transport constants, every other one h200-virtual's 11-29h fit (the kernels of the c file)" \
  "node bin/llcomm.js model $BUILD --table $FROZEN/platforms-h200x2-pre-c.json --platform h200 --calibrate $C --algorithms $ALGS --fit none"
section "3. calibrated (the committed entry): 2's table with the transport constants fitted to the c file" \
  "node bin/llcomm.js model $BUILD --table $FROZEN/platforms-h200x2-pre-c.json --platform h200 --gpus 2,4,8 --sizes 8,4K,64K,1M,16M --calibrate $C --algorithms $ALGS --fit $FITTED --residuals"
section "4. nccl (NCCL's cost form, fitted to the cf18cd4 file: out of sample) and nccl-symmetric (seed form; its libraryOverheadUs was fitted to the c file by the same command with --fit libraryOverheadUs --write)" \
  "node bin/llcomm.js model $BUILD --platform h200 --calibrate $C --algorithms nccl,nccl-symmetric --fit none"
section "5. the seed checks with the committed tables" "node bin/llcomm.js model --seed-checks"
