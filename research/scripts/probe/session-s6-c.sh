#!/usr/bin/env bash
# Session 6, third device call (2026-12-02): signature round 5, the empty checks (nowait, dnoload, dnocmp).
AB_VARIANTS="nosig ctrl sig pubonly defer nowait dnoload dnocmp" AB_BUDGET_S=75 exec bash "$(dirname "$0")/session-signature-ab.sh"
