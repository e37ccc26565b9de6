#!/usr/bin/env bash
# pullsplit: shows that twoshot_sentinel.cu's push kernels are unchanged by the pull kernels beside them. Builds
# allreduce/twoshot_sentinel.cu of REF (default aa37220, the last commit before the pull kernel) and of the working
# tree with nvcc for sm_90 (the compile test's options: -std=c++17 -I kernels), and compares with ptx-entries.py:
# the cubins' machine code (.text.<entry>) byte for byte, and the PTX function text, where the one expected
# difference is the mangled name of the spread path's shared stage (twoshotSentinelAllReduce<DT> became
# twoshotSentinelAllReduce<DT, false>: ILi<DT>EE -> ILi<DT>ELb0EE), replaced before comparing and counted. Then
# ptxas -v's registers, spills and stack per entry of both builds. Exit 1 when a push entry differs.
#   bash research/scripts/probe/pullsplit-ptx.sh [REF]
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
ref=${1:-aa37220}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/ref"
git archive "$ref" packages/llcomm/kernels | tar -x -C "$tmp/ref"
build() { # DIR NAME
  nvcc -arch=sm_90 -std=c++17 -I "$1" "$1/allreduce/twoshot_sentinel.cu" -ptx -o "$tmp/$2.ptx"
  nvcc -arch=sm_90 -std=c++17 -I "$1" "$1/allreduce/twoshot_sentinel.cu" -cubin -Xptxas -v -o "$tmp/$2.cubin" 2> "$tmp/$2.ptxas"
}
build "$tmp/ref/packages/llcomm/kernels" ref &
build packages/llcomm/kernels tree
wait
py=research/scripts/probe/ptx-entries.py
renames=()
for dt in 0 1 2; do renames+=("--same-symbol=twoshotSentinelAllReduceILi${dt}ELb0EE=twoshotSentinelAllReduceILi${dt}EE"); done
echo "== machine code (.text), $ref -> working tree"
python3 "$py" "$tmp/ref.cubin" "$tmp/tree.cubin"
echo "== PTX function text, push entries"
python3 "$py" "$tmp/ref.ptx" "$tmp/tree.ptx" llcomm_twoshot_sentinel_sentinel "${renames[@]}"
for b in ref tree; do
  echo "== ptxas -v ($b)"
  awk '/Compiling entry function/ { name = $7; gsub(/\047/, "", name) } /spill/ { sub(/.*: +/, ""); sub(/^ +/, ""); spill = $0 }
    /Used [0-9]+ registers/ { match($0, /Used [0-9]+ registers/); print "  " name ": " substr($0, RSTART + 5, RLENGTH - 5) ", " spill }' "$tmp/$b.ptxas"
done
