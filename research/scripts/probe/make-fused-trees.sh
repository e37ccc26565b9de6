#!/usr/bin/env bash
# Makes the kernel trees of the fused split A/B (issue 21; reasoning and prediction in research/notes/fused-probes.md,
# "split-early" and "split-late and split-push": patches split-early, split-late, split-push, each against the
# working tree's kernels and each including the ones before it). Untracked, not ignored: they travel to the GPU machine with the working tree; delete ab/ afterwards.
#   ab/fused-base    a copy of the working tree's packages/llcomm/kernels
#   ab/fused-<name>  that copy plus research/scripts/probe/fused-patches/<name>.patch (patch -p1 in the tree), for
#                    each name given (default: split-early)
# Usage: bash research/scripts/probe/make-fused-trees.sh [name ...]   e.g. split-early split-late split-push
# Fails (exit 1) when a patch does not apply cleanly (the kernels moved on: regenerate the patch), and checks with
# nvcc, when it is on PATH, that the fused sources of every tree compile for sm_90 without warnings or spills
# (AB_SKIP_NVCC=1 skips that), printing each kernel's registers.
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
patches=research/scripts/probe/fused-patches
names=("$@")
[ ${#names[@]} -gt 0 ] || names=(split-early)
mkdir -p ab
rm -rf ab/fused-base
cp -a packages/llcomm/kernels ab/fused-base
echo "ab/fused-base ready (the working tree's kernels)"
for n in "${names[@]}"; do
  dir=ab/fused-$n
  rm -rf "$dir"
  cp -a ab/fused-base "$dir"
  # --dry-run first, so a patch that does not apply leaves no half-patched tree; no fuzz, no .orig/.rej files
  if ! patch -p1 -d "$dir" --dry-run --fuzz=0 --no-backup-if-mismatch -s < "$patches/$n.patch" >/dev/null; then
    echo "make-fused-trees: $patches/$n.patch does not apply to the working tree's packages/llcomm/kernels: regenerate it" >&2
    rm -rf "$dir"
    exit 1
  fi
  patch -p1 -d "$dir" --fuzz=0 --no-backup-if-mismatch -s < "$patches/$n.patch"
  echo "$dir ready (the working tree's kernels, $n.patch)"
done
if [ "${AB_SKIP_NVCC:-0}" != 1 ] && command -v nvcc >/dev/null; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  bad=0
  for v in base "${names[@]}"; do
    for src in fused_rmsnorm_split fused_rmsnorm_split_ll fused_rmsnorm_split_probe fused_rmsnorm_oneshot fused_rmsnorm_twoshot; do
      # as test/kernels/compile.test.ts: one 512-thread block per SM, so any spill is local-memory traffic
      log=$(nvcc -arch sm_90 -cubin -std=c++17 -Xptxas -v -I ab/fused-$v ab/fused-$v/allreduce/$src.cu -o "$tmp/$v-$src.cubin" 2>&1) || {
        echo "$log" >&2; echo "make-fused-trees: nvcc failed on ab/fused-$v/allreduce/$src.cu" >&2; exit 1; }
      if grep -qi warning <<<"$log"; then echo "$log" >&2; echo "make-fused-trees: nvcc warned on $v/$src" >&2; bad=1; fi
      spills=$(grep -E "spill" <<<"$log" | grep -vc " 0 bytes spill stores, 0 bytes spill loads" || true)
      regs=$(grep -oE "Used [0-9]+ registers" <<<"$log" | awk '{print $2}' | tr '\n' ' ')
      echo "  $v/$src.cu: registers ${regs}(in cubin order), kernels that spill: $spills"
      [ "$spills" = 0 ] || bad=1
    done
  done
  [ $bad = 0 ] || { echo "make-fused-trees: a variant spills or warns" >&2; exit 1; }
fi
