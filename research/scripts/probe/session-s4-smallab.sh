#!/usr/bin/env bash
# One device step (2026-12-02): the small-size candidates of issue 22 against the product kernels, interleaved:
# ab/scale-merged (the product), ab/scale-sigidle (twoshot-sentinel's checkers look during the reduce-scatter),
# ab/scale-oswords (oneshot-sentinel's peer-parallel reduce by words); research/notes/scale-2026-12-01.md, fourth
# step. 8, 16, 32 and 64 virtual ranks, 8 B / 8 KB / 64 KB, bf16.
set -uo pipefail
cd "$(dirname "$0")/../../.."
AB_TREES="${AB_TREES:-merged sigidle oswords}" AB_RANKS=${AB_RANKS:-16,32,64,8} AB_SIZES=8,8K,64K \
  AB_ALGORITHMS=oneshot-sentinel,twoshot-sentinel,oneshot-barrier AB_BUDGET_S=${AB_BUDGET_S:-220} \
  bash research/scripts/probe/scale-ab.sh
