#!/usr/bin/env bash
# SASS of the signature A/B trees (issue 18, round 8's question: why the check's code costs 3-5% although the
# branch-free verdict and a slow path after the last barrier leave nothing of it on the hot path) and of the product
# twoshot-sentinel (issue 22: the prologue's 0.6 us before the first send). On the GPU machine (it has cuobjdump),
# from the repository root, after research/scripts/probe/make-signature-trees.sh here (trees nosig, dnocmp, defer,
# dlate = round8-defer-late-default.patch's kernels, and the product packages/llcomm/kernels as cur):
#   OUT=... bash research/scripts/probe/sass-signature.sh     -> $OUT/sass.tgz
set -uo pipefail
cd "$(dirname "$0")/../../.."
out=${OUT:-/tmp/llcomm-sass}
mkdir -p "$out/sass"
dir_of() { if [ "$1" = cur ] || [ "$1" = sig ]; then echo packages/llcomm/kernels; else echo "ab/$1"; fi; }
for v in ${SASS_TREES:-nosig dnocmp defer dlate cur}; do
  d=$(dir_of "$v")
  for f in oneshot_ll oneshot_sentinel twoshot_sentinel; do
    nvcc -arch sm_90 -cubin -std=c++17 -Xptxas -v -I "$d" "$d/allreduce/$f.cu" -o "/tmp/$v-$f.cubin" > "$out/sass/ptxas-$v-$f.txt" 2>&1
    cuobjdump -sass "/tmp/$v-$f.cubin" > "$out/sass/$v-$f.sass" 2>&1
    echo "$v $f: $(grep -c '/\*[0-9a-f]*\*/' "$out/sass/$v-$f.sass") instructions"
  done
done
tar -czf "$out/sass.tgz" -C "$out" sass && rm -rf "$out/sass"
