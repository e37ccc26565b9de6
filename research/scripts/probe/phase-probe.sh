#!/usr/bin/env bash
# The per-phase timestamp probe of twoshot-sentinel's spread path (research/scripts/probe/phase-probe.mjs), as one
# device step. Here, before the device call: `bash research/scripts/probe/phase-probe.sh make` (ab/phase: a copy of
# packages/llcomm/kernels with LLCOMM_PHASE_PROBE defined at the top of llcomm/abi.cuh; untracked, not ignored: it
# travels with the working tree). On the GPU machine: `bash research/scripts/probe/phase-probe.sh` runs the probe at
# the two cells issue 22 still misses (16 ranks 64 KB, 32 ranks 8 KB) and, for comparison, 8 ranks 8 KB and 32 ranks
# 8 B; JSON per case in $OUT.
set -uo pipefail
cd "$(dirname "$0")/../../.."
# `make [TREE [REV]]`: ab/TREE (default phase) from the working tree's kernels, or from git revision REV's.
# PHASE_TREES (default "phase"): the trees the GPU step probes, one JSON / log set per tree (tree name in the file name).
if [ "${1:-}" = make ]; then
  tree=ab/${2:-phase}
  rm -rf "$tree" && mkdir -p ab
  if [ -n "${3:-}" ]; then
    tmp=$(mktemp -d) && git archive "$3" packages/llcomm/kernels | tar -x -C "$tmp" && mv "$tmp/packages/llcomm/kernels" "$tree" && rm -rf "$tmp"
  else
    cp -a packages/llcomm/kernels "$tree"
  fi
  python3 - "$tree/llcomm/abi.cuh" <<'PY'
import sys
p = sys.argv[1]
s = open(p).read()
anchor = '#pragma once\n'
assert s.count(anchor) == 1, 'abi.cuh: #pragma once not found'
open(p, 'w').write(s.replace(anchor, anchor + '#define LLCOMM_PHASE_PROBE 1 // ab/phase (phase-probe.sh)\n'))
PY
  grep -q 'defined(LLCOMM_PHASE_PROBE)' "$tree/allreduce/twoshot_sentinel.cu"
  echo "$tree ready"
  exit 0
fi
out=${OUT:-/tmp/llcomm-phase-probe}
mkdir -p "$out/json" # per-case JSON in a folder: the session brings back 8 files, the logs archive has them
export LLCOMM_CACHE_DIR=${LLCOMM_CACHE_DIR:-/tmp/llcomm-cache} NCCL_NVLS_ENABLE=0
for tree in ${PHASE_TREES:-phase}; do
  export LLCOMM_KERNELS_DIR=$(realpath ab/$tree)
  for c in ${PHASE_CASES:-16:65536 32:8192 8:8192 32:8}; do
    set -- ${c/:/ }
    timeout 90 node research/scripts/probe/phase-probe.mjs --ranks "$1" --bytes "$2" --json "$out/json/$tree-v$1-$2.json" \
      > "$out/$tree-v$1-$2.log" 2>&1
    echo "== $tree, $1 ranks, $2 B: rc $?"
    cat "$out/$tree-v$1-$2.log"
  done
done
