# Sourced by the fused A/B session scripts (session-s15-a.sh, session-s16-a.sh, session-s17-*.sh); needs $out and a
# say() that prints a line (and may log it): fused_session_init makes both. Trees are folders under ab15/ (ignored;
# built from research/scripts/probe/fused-patches/ or by a session's own note).

# fused_session_init DEFAULT_OUT: out=${OUT:-DEFAULT_OUT} with $out/ab, the CUDA test environment, an empty
# $out/summary.txt and say().
fused_session_init() {
  out=${OUT:-$1}
  mkdir -p "$out/ab"
  export NCCL_NVLS_ENABLE=0 LLCOMM_TEST_BACKEND=cuda
  export LLCOMM_CACHE_DIR=${LLCOMM_CACHE_DIR:-/tmp/llcomm-cache}
  summary="$out/summary.txt"
  : > "$summary"
  say() { echo "$*" | tee -a "$summary"; }
}

# fused_gpu_test_product: the whole fused GPU test (no sanitizer, no NCCL) on the product kernels, into
# $out/gpu-product.{jsonl,log}.
fused_gpu_test_product() {
  LLCOMM_GPU_NO_NCCL=1 LLCOMM_GPU_RESULTS="$out/gpu-product.jsonl" LLCOMM_GPU_CASE_PREFIX=product timeout 170 \
    node --test packages/llcomm/dist/test/gpu/fused.test.js > "$out/gpu-product.log" 2>&1
  say "gpu-test product (fused.test.js): rc $?, cases passed $(grep -c '"passed":true' "$out/gpu-product.jsonl"), failed $(grep -c '"passed":false' "$out/gpu-product.jsonl")"
}

# fused_ab_round ROUND CACHE_TAG VARIANT...: one run of scripts/bench-fused.mjs per variant (8 ranks, bf16, hidden
# 4096 / 8192, batch $AB_BATCH or 1,2,4,8,16) into $out/ab/VARIANT-rROUND.json: bar = LLCOMM_FUSED_SPLIT_PUSH=0,
# push = =1, scaleX = push with LLCOMM_TARGET_BYTES_PER_BLOCK_SCALE=X, clA.B = push with split clusters of A or B
# only, anything else a kernel tree ab15/VARIANT with an NVRTC cache of its own.
fused_ab_round() {
  local r=$1 tag=$2 v env
  shift 2
  for v in "$@"; do
    case $v in
      bar) env=(LLCOMM_FUSED_SPLIT_PUSH=0) ;;
      push) env=(LLCOMM_FUSED_SPLIT_PUSH=1) ;;
      # the product's kernels with the per-process signature cluster, launched in process (kernel-table.ts
      # FUSED_SIGNATURE_IN_PROCESS; its own NVRTC cache: another build)
      sigc) env=(LLCOMM_FUSED_SPLIT_PUSH=1 LLCOMM_FUSED_SIG_IN_PROCESS=1 LLCOMM_CACHE_DIR=/tmp/llcomm-cache-$tag-sigc) ;;
      # the product's kernels with every block target scaled (e.g. scale0.5: twice the blocks a row; the unfused
      # AllReduce's plans move too, so read the fused columns only)
      scale*) env=(LLCOMM_FUSED_SPLIT_PUSH=1 LLCOMM_TARGET_BYTES_PER_BLOCK_SCALE=${v#scale}) ;;
      # the product's kernels with the split planner's cluster sizes restricted (cl8: clusters of 8 only; cl2.8: 2
      # or 8) through the fused-cluster-sizes.mjs preload
      cl*) env=(LLCOMM_FUSED_SPLIT_PUSH=1 LLCOMM_PROBE_SPLIT_CLUSTERS=$(echo "${v#cl}" | tr . ,)
        "NODE_OPTIONS=--import=$(realpath research/scripts/probe/fused-cluster-sizes.mjs)") ;;
      *) env=(LLCOMM_KERNELS_DIR=$(realpath ab15/$v) LLCOMM_CACHE_DIR=/tmp/llcomm-cache-$tag-$v) ;;
    esac
    env "${env[@]}" timeout 100 node scripts/bench-fused.mjs \
      --ranks 8 --hidden 4096,8192 --batch "${AB_BATCH:-1,2,4,8,16}" --dtype bf16 --out "$out/ab/$v-r$r.json" > "$out/ab/$v-r$r.log" 2>&1
    say "$v round $r: rc $?"
  done
}

# fused_sanitize TOOL TREE CACHE_TAG: compute-sanitizer on the fused GPU test's main matrix only (--test-name-pattern
# model-exact: every fused algorithm, 2 and 8 ranks, the reduced shapes), on the product kernels (TREE = product) or
# ab15/TREE.
fused_sanitize() {
  local env=() tag=$1-$2
  [ "$2" = product ] || env=(LLCOMM_KERNELS_DIR=$(realpath ab15/$2) LLCOMM_CACHE_DIR=/tmp/llcomm-cache-$3-$2)
  env "${env[@]}" LLCOMM_GPU_NO_NCCL=1 LLCOMM_GPU_REDUCED=1 LLCOMM_GPU_RESULTS="$out/san-$tag.jsonl" \
    LLCOMM_GPU_CASE_PREFIX=sanitizer-$tag timeout "${SAN_LIMIT_S:-110}" \
    compute-sanitizer --tool "$1" --error-exitcode 9 --target-processes all \
    node --test --test-name-pattern=model-exact packages/llcomm/dist/test/gpu/fused.test.js > "$out/san-$tag.log" 2>&1
  local rc=$?
  say "sanitizer $tag: rc $rc, cases passed $(grep -c '"passed":true' "$out/san-$tag.jsonl" 2>/dev/null), failed $(grep -c '"passed":false' "$out/san-$tag.jsonl" 2>/dev/null); $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$out/san-$tag.log" | tail -n 1)"
}

# fused_gpu_test TREE CACHE_TAG: the whole fused GPU test (no sanitizer, no NCCL) on ab15/TREE.
fused_gpu_test() {
  LLCOMM_KERNELS_DIR=$(realpath ab15/$1) LLCOMM_CACHE_DIR=/tmp/llcomm-cache-$2-$1 LLCOMM_GPU_NO_NCCL=1 \
    LLCOMM_GPU_RESULTS="$out/gpu-$1.jsonl" LLCOMM_GPU_CASE_PREFIX=$1 timeout 110 \
    node --test packages/llcomm/dist/test/gpu/fused.test.js > "$out/gpu-$1.log" 2>&1
  say "gpu-test $1 (fused.test.js): rc $?, cases passed $(grep -c '"passed":true' "$out/gpu-$1.jsonl" 2>/dev/null), failed $(grep -c '"passed":false' "$out/gpu-$1.jsonl" 2>/dev/null)"
}

# fused_goal_runs [TIMEOUT_S]: two runs of the kernel bench against every llcomm AllReduce + RMSNorm (--unfused-all;
# 8 ranks, bf16, hidden 4096 / 8192, batch 1-16) into $out/bench-unfused-all-r{1,2}.json, then per cell: best fused /
# fastest unfused in each run, `auto` / fastest unfused in run 1 and auto's choice (the goal cells of issue 21).
fused_goal_runs() {
  local r limit=${1:-120}
  for r in 1 2; do
    timeout "$limit" node scripts/bench-fused.mjs --ranks 8 --hidden 4096,8192 --batch 1,2,4,8,16 --dtype bf16 \
      --unfused-all --out "$out/bench-unfused-all-r$r.json" > "$out/bench-unfused-all-r$r.log" 2>&1
    say "bench unfused-all run $r: rc $?"
  done
  echo "== best fused / fastest unfused (run 1 / run 2), auto / fastest unfused (run 1), auto's choice"
  node -e '
const fs = require("fs"), [a, b] = process.argv.slice(1).map((f) => JSON.parse(fs.readFileSync(f, "utf8")).rows)
for (let i = 0; i < a.length; i++)
  console.log(a[i].ranks, a[i].hidden, a[i].rows, a[i].ratioBestStrict.toFixed(3), b[i].ratioBestStrict.toFixed(3),
    "auto", (a[i].us["fused-auto"] / a[i].unfusedFastest).toFixed(3), a[i].fusedAuto)
' "$out/bench-unfused-all-r1.json" "$out/bench-unfused-all-r2.json"
}
