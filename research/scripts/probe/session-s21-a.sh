#!/usr/bin/env bash
# The next session's first device call (written in session 20, 2026-12-07), both open GPU steps in one call, since
# device starts fail often: issue 18's product A/B and signature GPU test on the signature block's default build
# (session-s20-a.sh, ~250 s), then issue 21's goal cells after that build (session-s19-c.sh, two kernel-bench runs
# against every llcomm AllReduce + RMSNorm, ~250 s; its predictions were revised for the signature block). Each
# writes under $OUT/sig and $OUT/fused; the fused goal table comes last. Before bundling, as session-s20-a.sh says
# (make-signature-trees.sh, the unused trees removed, carry "ab").
set -uo pipefail
cd "$(dirname "$0")/../../.."
base=${OUT:-/tmp/llcomm-s21-a}
OUT=$base/sig timeout 280 bash research/scripts/probe/session-s20-a.sh
echo "session-s20-a.sh: rc $?"
OUT=$base/fused timeout 300 bash research/scripts/probe/session-s19-c.sh
echo "session-s19-c.sh: rc $?"
