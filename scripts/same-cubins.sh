#!/usr/bin/env bash
# Compiles every kernel source of both packages with nvcc (sm_90) at a git revision and in the working tree, and
# says which cubins differ. For refactors of the device code that must not change the machine code (renames,
# moved headers, tag arguments): byte-identical cubins are the proof, with no GPU needed.
#   scripts/same-cubins.sh [REV]   (default HEAD)
set -euo pipefail
rev=${1:-HEAD}
root=$(git rev-parse --show-toplevel)
work=$(mktemp -d /tmp/llcomm-same-cubins.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/old"
git -C "$root" archive "$rev" packages/llcomm/kernels packages/tools/kernels | tar -x -C "$work/old"
differ=0
for tree in "$work/old" "$root"; do
  tag=$([ "$tree" = "$root" ] && echo new || echo old)
  for src in "$tree"/packages/llcomm/kernels/allreduce/*.cu "$tree"/packages/llcomm/kernels/support/*.cu "$tree"/packages/tools/kernels/*.cu; do
    name=$(basename "$src" .cu)
    nvcc -arch=sm_90 -cubin -std=c++17 -I "$tree/packages/llcomm/kernels" "$src" -o "$work/$tag-$name.cubin"
  done
done
for cubin in "$work"/new-*.cubin; do
  name=$(basename "$cubin" .cubin | cut -c5-)
  if [ ! -f "$work/old-$name.cubin" ]; then echo "new      $name"; continue; fi
  if cmp -s "$work/old-$name.cubin" "$cubin"; then echo "same     $name"; else echo "DIFFERS  $name"; differ=1; fi
done
exit $differ
