#!/usr/bin/env bash
# Session 6, fourth device call (2026-12-02): signature round 6, the slow paths out of line (the kernels of 60f21f7: sig; ab/inl, ab/definl from research/scripts/probe/signature-patches/round6-cold-slow-paths.patch), then device-session.sh's gpu-test step.
AB_VARIANTS="nosig ctrl sig inl pubonly defer definl" AB_BUDGET_S=70 exec bash "$(dirname "$0")/session-signature-ab.sh"
