#!/usr/bin/env bash
# Makes the kernel tree that research/scripts/probe/signature-ab.sh compares against (untracked, not ignored: it
# travels to the GPU machine with the working tree; delete ab/ afterwards):
#   ab/nosig  a copy of packages/llcomm/kernels/ whose llcomm/signature.cuh defines LLCOMM_NO_SIGNATURE: the
#             LlcCallSignature steps (arm, blockPublish, blockCheck, tryCheck, prefetch, finish) are empty and
#             blockBarrier is the plain epoch-flag barrier (llcBlockGlobalBarrier), so oneshot-barrier keeps its two
#             barriers. Everything else is the same source, so the A/B measures exactly what the signature costs
#             (issue 18 item 1). The earlier versions emptied the steps' bodies by pattern (three steps) and, before
#             that, used the kernels of 61d639c, which no longer match the host's parameter structs.
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
rm -rf ab/nosig && mkdir -p ab
cp -a packages/llcomm/kernels ab/nosig
python3 - ab/nosig/llcomm/signature.cuh <<'PY'
import sys
p = sys.argv[1]
s = open(p).read()
anchor = '#pragma once\n'
assert s.count(anchor) == 1, 'signature.cuh: #pragma once not found'
assert s.count('#if !defined(LLCOMM_NO_SIGNATURE)') == 1 and s.count('#else\n// The A/B build without the signature') == 1, \
    'signature.cuh: the LLCOMM_NO_SIGNATURE variant of LlcCallSignature not found'
open(p, 'w').write(s.replace(anchor, anchor + '#define LLCOMM_NO_SIGNATURE 1 // ab/nosig (make-signature-trees.sh)\n'))
PY
grep -q '^#define LLCOMM_NO_SIGNATURE 1' ab/nosig/llcomm/signature.cuh
echo "ab/nosig ready ($(find ab/nosig -type f | wc -l) files, LLCOMM_NO_SIGNATURE: signature steps empty, plain barrier)"
