#!/usr/bin/env bash
# One device step (2026-12-02): what the call signature costs at 16 and 32 virtual ranks, where issue 22's goals
# (best barrier-free <= 0.8 x oneshot-barrier at 8 KB / 64 KB) are missed by 4-8 %: ab/nosig (make-signature-trees.sh
# nosig) against the product kernels, bf16, 8 B / 8 KB / 64 KB, the four algorithms of the goal table.
set -uo pipefail
cd "$(dirname "$0")/../../.."
AB_RANKS="16 32" AB_SIZES=8,8K,64K AB_DTYPES=bf16 AB_ALGORITHMS=oneshot-ll,oneshot-sentinel,twoshot-sentinel,oneshot-barrier \
  AB_VARIANTS="nosig sig" AB_ITERS=500 AB_BUDGET_S=${AB_BUDGET_S:-100} bash research/scripts/probe/signature-ab.sh
