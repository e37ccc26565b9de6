#!/usr/bin/env bash
# Makes the kernel tree that research/scripts/probe/signature-ab.sh compares against (untracked, not ignored: it
# travels to the GPU machine with the working tree; delete ab/ afterwards):
#   ab/nosig  a copy of packages/llcomm/kernels/ in which the call signature's three steps (llcomm/signature.cuh,
#             LlcCallSignature: blockPublish, blockCheck, peek) have empty bodies. Everything else is the same
#             source, so the A/B measures exactly what the signature costs (issue 18 item 1). The earlier version of
#             this script used the kernels of 61d639c, which no longer match the host's parameter structs.
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
rm -rf ab/nosig && mkdir -p ab
cp -a packages/llcomm/kernels ab/nosig
python3 - ab/nosig/llcomm/signature.cuh <<'PY'
import re, sys
p = sys.argv[1]
s = open(p).read()
head, sep, tail = s.partition('struct LlcCallSignature {')
assert sep, 'LlcCallSignature not found'
body, n = re.subn(r'(LLC_DEVICE static void \w+\([^)]*\)) \{\n[^}]*\}', r'\1 {}', tail)
assert n == 3, f'expected 3 steps, patched {n}'
open(p, 'w').write(head + sep + body)
PY
grep -c 'ch) {}' ab/nosig/llcomm/signature.cuh | grep -qx 3
echo "ab/nosig ready ($(find ab/nosig -type f | wc -l) files, signature steps empty)"
