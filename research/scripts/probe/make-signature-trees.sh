#!/usr/bin/env bash
# Makes the kernel tree that scripts/probe/signature-ab.sh compares against (untracked, not ignored: it travels to
# the GPU machine with the working tree; delete ab/ afterwards):
#   ab/nosig  kernels/ at 61d639c, before the call signature (issue 18 item 1). Its kernels take the same parameter
#             struct (signatureChunk sits where its reserved `flags` word was, and it ignores it) and use a prefix of
#             the scratch that the host now allocates, so they run unchanged beside the current host code.
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
rm -rf ab/nosig && mkdir -p ab/nosig
git archive 61d639c kernels | tar -x -C ab/nosig --strip-components=1
test -f ab/nosig/allreduce/oneshot_ll.cu && ! grep -q signature ab/nosig/allreduce/oneshot_ll.cu
echo "ab/nosig ready ($(find ab/nosig -type f | wc -l) files)"
