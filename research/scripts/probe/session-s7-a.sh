#!/usr/bin/env bash
# Session 7, first A/B call (2026-12-02): bcastbatch (LlBuffer::forEachPeer, research/notes/scale-2026-12-01.md,
# session 7). Here first: phase-probe.sh make phase d1632b4; make phase-bcb; ab/scale-merged = d1632b4's kernels,
# ab/scale-bcb = the working tree's.
set -uo pipefail
cd "$(dirname "$0")/../../.."
PHASE_TREES="phase phase-bcb" bash research/scripts/probe/phase-probe.sh
AB_TREES="merged bcb" AB_RANKS=2,8,16,32 AB_SIZES=8,8K,64K AB_ROUNDS=3 AB_ITERS=200 AB_BUDGET_S=240 \
  AB_ALGORITHMS=twoshot-sentinel,oneshot-sentinel,oneshot-ll,oneshot-barrier bash research/scripts/probe/scale-ab.sh
