#!/usr/bin/env bash
# Session 6, fifth device call (2026-12-02): signature round 7, the checks after the kernel's last __syncthreads (ab/end, made at 52dbb9b; now signature-patches/round7-checks-at-end.patch).
AB_VARIANTS="nosig ctrl sig pubonly end dnocmp" AB_BUDGET_S=60 exec bash "$(dirname "$0")/session-signature-ab.sh"
