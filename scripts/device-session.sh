#!/usr/bin/env bash
# One GPU-machine call (after scripts/device-bundle.sh here): the device tool's command is
#   source .carry/activate && ln -sfn .devnm/node_modules node_modules && cp -a .devdist/. . && \
#     LLCOMM_COMMIT=<sha> STEPS="gpu-test examples launch-overhead" bash scripts/device-session.sh
# Steps (run in the order given, each under its own timeout, logs under $OUT):
#   gpu-test         scripts/gpu-test.sh (every GPU test of both packages; LLCOMM_SKIP_SANITIZER=1 skips the sanitizer)
#   examples         the numbered examples, the GPU ones for real (04, 05), on LLCOMM_EXAMPLE_DEVICES
#   launch-overhead  scripts/launch-overhead/run.sh: eager deviceAllReduce from Node against a C++ launch loop
#   bench            llcomm bench on LLCOMM_BENCH_ARGS (JSON to $OUT/bench.json)
#   decode           llcomm decode on LLCOMM_DECODE_ARGS (JSON back as decode.json), limit $DECODE_LIMIT_S
#   long-run-cuda    scripts/long-run-cuda.mjs --calls $LONG_RUN_CALLS (default 1,000,000), limit $LONG_RUN_LIMIT_S
#   script:PATH      any other script (e.g. script:scripts/bench-fused.sh) with OUT = a work folder of its own; its
#                    top-level *.json come back
# Everything a step writes goes under a work folder; at the end $OUT gets the results (gpu-test-*.json.gz,
# launch-overhead.json, bench.json) and one session-logs.tgz of every log (the device tool brings back 8 files).
# The last lines printed are a short table of the steps and their exit codes.
set -uo pipefail
cd "$(dirname "$0")/.."
final=${OUT:-/tmp/llcomm-device-out}
out=$(mktemp -d /tmp/llcomm-session.XXXXXX)
mkdir -p "$final"
export LLCOMM_CACHE_DIR=${LLCOMM_CACHE_DIR:-/tmp/llcomm-cache} NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=index,name,driver_version,memory.used,memory.total --format=csv > "$out/gpus.txt" 2>&1
summary=()
run_step() {
  local name=$1 limit=$2
  shift 2
  local t0=$(date +%s)
  timeout "$limit" "$@" > "$out/$name.log" 2>&1
  local rc=$?
  summary+=("$(printf '%-18s rc %-4s %5ss' "$name" "$rc" "$(( $(date +%s) - t0 ))")")
  tail -n 15 "$out/$name.log"
}
for step in ${STEPS:-gpu-test examples}; do
  case $step in
    gpu-test) mkdir -p "$out/gpu" && run_step gpu-test "${GPU_TEST_LIMIT_S:-420}" env OUT="$out/gpu" bash scripts/gpu-test.sh ;;
    examples)
      for f in examples/dist/0*.js; do
        run_step "example-$(basename "$f" .js | cut -c1-2)" 120 node "$f"
      done ;;
    launch-overhead) mkdir -p "$out/launch" && run_step launch-overhead 240 env OUT="$out/launch" bash scripts/launch-overhead/run.sh --reps "${LAUNCH_REPS:-6}" ;;
    bench) run_step bench 300 node packages/tools/bin/llcomm.js bench --no-progress ${LLCOMM_BENCH_ARGS:---devices 0,0 --sizes 8,8K,64K} --json "$out/bench.json" ;;
    decode) mkdir -p "$out/decode" && run_step decode "${DECODE_LIMIT_S:-240}" node packages/tools/bin/llcomm.js decode --no-progress ${LLCOMM_DECODE_ARGS:---devices 0,0 --model llama-3.1-8b --batch 1 --fused} --json "$out/decode/decode.json" ;;
    long-run-cuda) mkdir -p "$out/long-run" && run_step long-run-cuda "${LONG_RUN_LIMIT_S:-300}" env OUT="$out/long-run" node scripts/long-run-cuda.mjs --calls "${LONG_RUN_CALLS:-1000000}" ;;
    script:*)
      name=$(basename "${step#script:}" .sh)
      mkdir -p "$out/$name" && run_step "$name" "${SCRIPT_LIMIT_S:-300}" env OUT="$out/$name" bash "${step#script:}" ;;
    *) echo "unknown step $step" ;;
  esac
done
# The results that come back one by one (the device tool brings back 8 files): the GPU test summary, the
# launch-overhead and bench JSON, the long run's JSON and each script step's top-level JSON; everything else is in
# session-logs.tgz.
cp "$out"/gpu/gpu-test-*.json.gz "$out"/launch/launch-overhead.json "$out"/bench.json "$out"/long-run/*.json \
  "$final"/ 2>/dev/null
for d in "$out"/*/; do
  case $(basename "$d") in gpu | launch | long-run) ;; *) cp "$d"*.json "$final"/ 2>/dev/null ;; esac
done
printf '%s\n' "${summary[@]}" > "$out/steps.txt"
tar czf "$final/session-logs.tgz" -C "$out" .
echo "== steps"
cat "$out/steps.txt"
