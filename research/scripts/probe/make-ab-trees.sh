#!/usr/bin/env bash
# Makes the kernel trees that scripts/probe/spread-atomic-ab.sh compares (untracked; delete ab/ afterwards):
#   ab/old  kernels/ at a0bea25 (before the spread-groups rule and the batched twoshot-atomic publish)
#   ab/g2   kernels/ as now, with LLCOMM_SPREAD_MIN_GROUPS 2 (the old spread rule)
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
rm -rf ab && mkdir -p ab/old ab/g2
git archive a0bea25 kernels | tar -x -C ab/old --strip-components=1
cp -r kernels/. ab/g2/
sed -i 's/^#define LLCOMM_SPREAD_MIN_GROUPS 4$/#define LLCOMM_SPREAD_MIN_GROUPS 2/' ab/g2/llcomm/ll_buffer.cuh
grep -q '^#define LLCOMM_SPREAD_MIN_GROUPS 2$' ab/g2/llcomm/ll_buffer.cuh
