#!/usr/bin/env bash
# The closing measurements of session 5 (2026-12-02, one device step after the GPU test): issue 22's goal table in one
# run (scale-bench.sh at 2-64 virtual ranks) with `llcomm tune` at 8, 16, 32 and 64 virtual ranks (the new block
# targets move the crossovers), the 8-rank 256 KB / 1 MB rows with a 4 MB receive buffer (FINAL_BB4M=0 skips them),
# issue 17's launch overhead (8 repetitions), and first the one GPU test that reaches twoshot-sentinel's pull kernel
# (its correctness matrix, reduced, with LLCOMM_TWOSHOT_ALLGATHER=pull: under auto the test's 64 KB buffer never
# pulls). Outputs in $OUT; the goal table is printed last.
set -uo pipefail
cd "$(dirname "$0")/../../.."
out=${OUT:-/tmp/llcomm-s5-final}
mkdir -p "$out"
OUT=$out/gpu-pull LLCOMM_TWOSHOT_ALLGATHER=pull LLCOMM_GPU_REDUCED=1 LLCOMM_GPU_NO_NCCL=1 LLCOMM_GPU_TESTS=correctness \
  LLCOMM_SKIP_SANITIZER=1 LLCOMM_GPU_TEST_TIMEOUT_S=90 bash scripts/gpu-test.sh > "$out/gpu-pull.log" 2>&1
echo "pull-kernel correctness (reduced): rc $?"
cp "$out"/gpu-pull/gpu-test-*.json.gz "$out/" 2>/dev/null
OUT=$out bash scripts/launch-overhead/run.sh --reps 8 > "$out/launch-overhead.log" 2>&1
echo "launch overhead: rc $?"
if [ "${FINAL_BB4M:-1}" = 1 ]; then
  timeout 60 node packages/tools/bin/llcomm.js bench --no-progress --devices 0,0,0,0,0,0,0,0 \
    --algorithms twoshot-sentinel,oneshot-barrier,oneshot-sentinel --dtype bf16 --sizes 256K,1M --buffer-bytes 4M \
    --repeat 3 --iters 300 --warmup 50 --json "$out/bench-v8-bb4M.json" > "$out/bench-v8-bb4M.log" 2>&1
  echo "bench 8 ranks, 4 MB buffer: rc $?"
fi
OUT=$out SCALE_TUNE_RANKS=8,16,32,64 SCALE_TUNE_ITERS=150 timeout 300 bash research/scripts/probe/scale-bench.sh > "$out/scale-bench.log" 2>&1
echo "scale bench: rc $?"
echo "== pull-kernel correctness"; tail -n 6 "$out/gpu-pull.log"
echo "== launch overhead (in-process)"; sed -n '/in-process: case/,$p' "$out/launch-overhead.log" | grep -E "case|oneshot"
[ -f "$out/bench-v8-bb4M.log" ] && { echo "== 8 ranks, 4 MB buffer"; grep -E "twoshot|barrier|sentinel" "$out/bench-v8-bb4M.log" | head -8; }
echo "== goal table"; grep -E "^bench|^tune" "$out/scale-bench.log"; tail -22 "$out/scale-bench.log"
