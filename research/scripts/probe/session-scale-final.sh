#!/usr/bin/env bash
# One device step after merging spread2 (scripts/device-session.sh step
# script:research/scripts/probe/session-scale-final.sh): the goal table's bench at 2-64 virtual ranks first (its
# documents and table are written before anything else runs), then `llcomm tune` at 16, 32 and 64 ranks
# (SCALE_TUNE_ITERS, default 80), which a step limit may cut.
set -uo pipefail
cd "$(dirname "$0")/../../.."
OUT=${OUT:-/tmp/llcomm-scale-final} SCALE_TUNE_RANKS="" bash research/scripts/probe/scale-bench.sh
OUT=${OUT:-/tmp/llcomm-scale-final} SCALE_RANKS="" SCALE_TUNE_RANKS=16,32,64 SCALE_TUNE_ITERS=${SCALE_TUNE_ITERS:-80} \
  bash research/scripts/probe/scale-bench.sh | tail -3
