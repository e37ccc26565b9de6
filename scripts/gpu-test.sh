#!/usr/bin/env bash
# The GPU test of the cuda backend, run on the GPU machine (through the device tool) from the repository root:
#   LLCOMM_COMMIT=$(git rev-parse HEAD) scripts/gpu-test.sh
# 1. node --test on packages/*/dist/test/gpu/*.test.js (the correctness matrix, back-to-back and graph-replay runs, LL16
#    stress, one-rank NCCL, benchmark()), every case appended to a JSON-lines file;
# 2. compute-sanitizer memcheck, racecheck and synccheck (LLCOMM_SANITIZER_TOOLS: a subset) on the reduced correctness
#    matrix (LLCOMM_GPU_SANITIZER_ONLY=1: this step alone);
# 3. scripts/gpu-summary.mjs writes gpu-test-<date>.json.gz (machine, commit, date, cases, passed, failed, details)
#    and prints a short table last.
# Output goes to $OUT when set (the device tool brings it back), else bench/results/.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-bench/results}
mkdir -p "$out"
cases=$out/gpu-cases.jsonl
: > "$cases"
export LLCOMM_TEST_BACKEND=cuda LLCOMM_GPU_RESULTS=$cases
export LLCOMM_CACHE_DIR=${LLCOMM_CACHE_DIR:-/tmp/llcomm-cache}
export NCCL_NVLS_ENABLE=0
started=$(date -u +%s)
# LLCOMM_GPU_TESTS: a space-separated subset (paths or basenames, e.g. "public-api fused") to split the GPU tests
# over several device calls; all of both packages' GPU tests by default. The per-process groups: multiprocess,
# multiprocess-signature, multiprocess-fused (the per-process fused call and allReduceMany: 2 and 4 processes on one
# GPU).
all_tests=$(ls packages/llcomm/dist/test/gpu/*.test.js packages/tools/dist/test/gpu/*.test.js)
if [ -n "${LLCOMM_GPU_TESTS:-}" ]; then
  tests=$(for want in $LLCOMM_GPU_TESTS; do printf '%s\n' $all_tests | grep -E "(^|/)${want%.test.js}(\.test\.js)?$"; done)
else
  tests=$all_tests
fi
if [ "${LLCOMM_GPU_SANITIZER_ONLY:-0}" != 1 ]; then # =1: only the sanitizer runs below (a re-check)
  echo "== node --test ($(echo $tests | wc -w) files)"
  timeout "${LLCOMM_GPU_TEST_TIMEOUT_S:-420}" node --test --test-concurrency=1 --test-reporter=spec $tests > "$out/gpu-test.log" 2>&1
  echo "node --test exit $?" >> "$out/gpu-test.log"
  tail -n 30 "$out/gpu-test.log"
fi
if [ "${LLCOMM_SKIP_SANITIZER:-0}" != 1 ] && command -v compute-sanitizer >/dev/null; then
  for tool in ${LLCOMM_SANITIZER_TOOLS:-memcheck racecheck synccheck}; do
    echo "== compute-sanitizer --tool $tool (reduced matrix)"
    log=$out/sanitizer.log
    echo "===== $tool" >> "$log"
    # Without the nccl baselines: NCCL's initialization hits CUDA API errors on purpose (peer access already
    # enabled, probing kernel images), which memcheck reports (run of 2026-11-29 on two GPUs, gpu-test-h200x2-*-b.json.gz).
    LLCOMM_GPU_NO_NCCL=1 LLCOMM_GPU_REDUCED=1 LLCOMM_GPU_CASE_PREFIX=sanitizer-$tool timeout "${LLCOMM_SANITIZER_TIMEOUT_S:-240}" \
      compute-sanitizer --tool "$tool" --error-exitcode 9 --target-processes all \
      node packages/llcomm/dist/test/gpu/correctness.test.js >> "$log" 2>&1
    rc=$?
    summary=$(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$log" | tail -n 1)
    # The sanitizer's verdict: its summary line says 0 errors/hazards and it did not exit with --error-exitcode
    # (9) or time out (124). Test assertions failing under it (exit 1) are recorded as their own cases.
    node -e '
      const [tool, rc, summary] = process.argv.slice(1)
      const clean = /: 0 errors|SUMMARY: 0 hazards displayed \(0 errors/.test(summary) && rc !== "9" && rc !== "124"
      require("node:fs").appendFileSync(process.env.LLCOMM_GPU_RESULTS, JSON.stringify({ name: `sanitizer/${tool}`, passed: clean, exitCode: Number(rc), summary, at: new Date().toISOString() }) + "\n")
    ' "$tool" "$rc" "$summary"
    echo "$tool exit $rc: $summary"
  done
fi
ended=$(date -u +%s)
node scripts/gpu-summary.mjs "$cases" "$out" "$((ended - started))"
