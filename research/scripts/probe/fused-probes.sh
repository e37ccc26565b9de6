#!/usr/bin/env bash
# The fused-kernel decomposition of research/notes/fused-probes.md in one GPU call (from the repository root):
# 8 virtual ranks, bf16, hidden 4096/8192, batch 1-16, every probe column and the candidates (bench-fused --probes).
set -euo pipefail
cd "$(dirname "$0")/../../.."
bash scripts/bench-fused.sh --ranks 8 --hidden 4096,8192 --batch 1,2,4,8,16 --probes "$@"
