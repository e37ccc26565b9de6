#!/usr/bin/env bash
# `llcomm decode` on the GPU machine (through the device tool), from the repository root after device-bundle.sh:
#   source .carry/activate && ln -sfn .devnm/node_modules node_modules && LLCOMM_COMMIT=<sha> \
#     DECODE_TEST=1 DECODE_RUNS="8b:1:4096 70b:1:4096" timeout 560 bash scripts/device-decode.sh
# 1. (DECODE_TEST=1) the GPU decode test (test/gpu/decode.test.ts) on virtual ranks 0,0 and, with two GPUs, on 0,1;
# 2. one `llcomm decode --json` per DECODE_RUNS entry model:batch:context[:pdl] on the first two GPUs (or 2 virtual
#    ranks on one), every algorithm and `none`, written to $OUT/decode-<model>-b<batch>-c<context>[-pdl].json;
# 3. a short table last. Everything is packed into $OUT/decode-results.tgz (the device tool brings back 8 files).
set -uo pipefail
cd "$(dirname "$0")/.."
final=${OUT:-/tmp/llcomm-decode}
out=$(mktemp -d)
trap 'tar czf "$final/decode-results.tgz" -C "$out" . && rm -rf "$out"' EXIT
mkdir -p "$final"
export LLCOMM_CACHE_DIR=${LLCOMM_CACHE_DIR:-/tmp/llcomm-cache} NCCL_NVLS_ENABLE=0
gpus=$(nvidia-smi -L 2>/dev/null | wc -l)
devices=$([ "$gpus" -ge 2 ] && echo 0,1 || echo 0,0)
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > "$out/machine.txt" 2>&1
if [ "${DECODE_TEST:-0}" = 1 ]; then
  cases=$out/gpu-cases.jsonl
  : > "$cases"
  for d in 0_0 $([ "$gpus" -ge 2 ] && echo 0_1); do
    echo "== decode test on devices $d"
    LLCOMM_TEST_BACKEND=cuda LLCOMM_GPU_RESULTS=$cases LLCOMM_GPU_DECODE_DEVICES=${d/_/,} LLCOMM_GPU_CASE_PREFIX=devices-${d/_/,} \
      timeout "${DECODE_TEST_TIMEOUT_S:-180}" node --test --test-reporter=spec packages/tools/dist/test/gpu/decode.test.js \
      > "$out/decode-test-$d.log" 2>&1
    echo "exit $?" | tee -a "$out/decode-test-$d.log"
    grep -E "^# (pass|fail)|not ok|Error|error" "$out/decode-test-$d.log" | head -20
  done
  if grep -q '"passed":false' "$cases" || ! grep -q '"passed":true' "$cases"; then
    echo "decode test failed: no decode runs"
    DECODE_RUNS=
  fi
fi
for run in ${DECODE_RUNS:-}; do
  IFS=: read -r model batch context pdl <<< "$run"
  name=decode-$model-b$batch-c$context$([ "${pdl:-}" = pdl ] && echo -pdl)
  echo "== $name"
  timeout "${DECODE_RUN_TIMEOUT_S:-200}" node packages/tools/bin/llcomm.js decode --model "llama-3.1-$model" --devices "$devices" \
    --batch "$batch" --context "$context" --pdl "$([ "${pdl:-}" = pdl ] && echo on || echo off)" \
    ${DECODE_ARGS:-} --no-progress --json "$out/$name.json" > "$out/$name.txt" 2> "$out/$name.err"
  echo "exit $?" >> "$out/$name.txt"
  cat "$out/$name.txt"
  tail -n 5 "$out/$name.err"
done
echo "== summary"
if [ -s "${out}/gpu-cases.jsonl" ]; then
  python3 - "$out/gpu-cases.jsonl" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print(f"decode test cases: {sum(r['passed'] for r in rows)}/{len(rows)} passed")
for r in rows:
    if not r['passed']: print('FAILED', r)
EOF
fi
for f in "$out"/decode-*.json; do
  [ -f "$f" ] && python3 - "$f" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
best = min((r for r in d['rows'] if r['algorithm'] not in ('none',)), key=lambda r: r['stepMedianUs'])
nccl = next((r for r in d['rows'] if r['algorithm'] == 'nccl'), None)
none = next((r for r in d['rows'] if r['algorithm'] == 'none'), None)
print(f"{d['model']} b{d['batch']} c{d['context']}{' pdl' if d['pdl'] else ''}: none {none and round(none['stepMedianUs'])} µs,"
      f" nccl {nccl and round(nccl['stepMedianUs'])} µs, best {best['algorithm']} {best['stepMedianUs']:.0f} µs"
      f" ({best.get('vsNccl', float('nan')):.3f}x), AR in step {best.get('allReduceInStepUs', float('nan')):.2f} µs")
EOF
done
