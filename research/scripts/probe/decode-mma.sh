#!/usr/bin/env bash
# The tensor-core GEMV of llcomm decode (batches above 1) on one GPU: the decode GPU test (two virtual ranks,
# float64 reference), then the step without AllReduce, old kernels against new, on the 8B shapes at batch 1 / 4 /
# 16 (two virtual ranks: both shards on one GPU). The old build lies in old/ (untracked: git archive of the commit
# before the change, built with tsc, trimmed to bin, dist, kernels, data); it is made here before the device call.
# (carry [".carry", "dist", ".devnm", "old"]: old/dist is git-ignored and travels only when carried)
#   source .carry/activate && ln -sfn .devnm/node_modules node_modules && OLD_COMMIT=<sha> NEW_COMMIT=<sha> \
#     bash scripts/probe/decode-mma.sh        (MMA_SANITIZER=1 adds memcheck and racecheck of the decode GPU test)
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-/tmp/llcomm-decode-mma}
mkdir -p "$out"
export LLCOMM_CACHE_DIR=${LLCOMM_CACHE_DIR:-/tmp/llcomm-cache} NCCL_NVLS_ENABLE=0
ln -sfn ../.devnm/node_modules old/node_modules
LLCOMM_TEST_BACKEND=cuda timeout 200 node --test --test-reporter=spec dist/test/gpu/decode.test.js > "$out/decode-test.txt" 2>&1
echo "decode GPU test exit $?"
grep -E "(pass|fail) [0-9]" "$out/decode-test.txt"
if [ "${MMA_SANITIZER:-0}" = 1 ]; then
  for tool in memcheck racecheck; do
    LLCOMM_TEST_BACKEND=cuda timeout 150 compute-sanitizer --tool "$tool" --error-exitcode 9 \
      node --test dist/test/gpu/decode.test.js > "$out/sanitizer-$tool.txt" 2>&1
    echo "$tool exit $?: $(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$out/sanitizer-$tool.txt" | tail -n 1)"
  done
fi
for b in ${MMA_BATCHES:-16 4 1}; do
  for v in old new; do
    bin=bin/llcomm.js commit=${NEW_COMMIT:-unknown}; [ "$v" = old ] && bin=old/bin/llcomm.js commit=${OLD_COMMIT:-unknown}
    LLCOMM_COMMIT=$commit timeout 120 node "$bin" decode --devices 0,0 --model llama-3.1-8b --batch "$b" --context 4096 --algorithms none \
      --rounds 3 --replays 10 --warmup 3 --bench-iters 0 --no-progress --json "$out/decode-$v-b$b.json" \
      > "$out/decode-$v-b$b.txt" 2>&1 || echo "$v b$b: exit $?"
  done
done
node -e '
const fs = require("fs"), dir = process.argv[1]
console.log("batch  old step us  new step us  new/old  old GB/s  new GB/s")
for (const b of [1, 4, 16]) {
  const read = (v) => { try { return JSON.parse(fs.readFileSync(`${dir}/decode-${v}-b${b}.json`)) } catch { return undefined } }
  const o = read("old"), n = read("new")
  if (!o || !n) continue
  const so = o.rows.find((r) => r.algorithm === "none").stepMedianUs, sn = n.rows.find((r) => r.algorithm === "none").stepMedianUs
  console.log(String(b).padStart(5), so.toFixed(1).padStart(12), sn.toFixed(1).padStart(12), (sn / so).toFixed(3).padStart(8), String(Math.round(o.computeGBs)).padStart(9), String(Math.round(n.computeGBs)).padStart(9))
}' "$out"
tar -czf "$out/decode-mma.tgz" -C "$out" $(cd "$out" && ls | grep -v '\.tgz$') && (cd "$out" && ls | grep -v '\.tgz$' | xargs rm -f)
