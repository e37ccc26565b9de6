#!/usr/bin/env bash
# One call on the GPU machine that runs every measurement of issues 4 and 5 that the lent machine allows, in order
# of value, each step under its own time limit, packing what it has into $OUT/results.tgz after every step (the
# device tool returns at most 8 files). Steps that need two GPUs are skipped on one.
#   scripts/device-bundle.sh   (here), then through the device tool, carry [".carry","dist",".devnm"]:
#   source .carry/activate && ln -sfn .devnm/node_modules node_modules && LLCOMM_COMMIT=<sha> bash scripts/device-campaign.sh
# LLCOMM_CAMPAIGN_STEPS=a,b runs only the named steps.
# Budget: LLCOMM_CAMPAIGN_S (default 560 s) for the whole script; a step that would start past it is skipped.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/llcomm-campaign}
res=/tmp/llcomm-campaign-r   # packed into $OUT/results.tgz: the tool returns at most 8 files
mkdir -p "$res"
export LLCOMM_CACHE_DIR=${LLCOMM_CACHE_DIR:-/tmp/llcomm-cache} NCCL_NVLS_ENABLE=0
budget=${LLCOMM_CAMPAIGN_S:-560}
t0=$(date +%s)
llcomm="node packages/tools/bin/llcomm.js"   # a variable, not a function: `timeout` runs external commands only
gpus=$(nvidia-smi -L | wc -l)
summary=$out/summary.txt
: > "$summary"
pack() { tar -czf "$out/results.tgz.tmp" -C "$(dirname "$res")" "$(basename "$res")" && mv "$out/results.tgz.tmp" "$out/results.tgz"; }
step() { # step NAME LIMIT_S MIN_GPUS command...
  local name=$1 limit=$2 need=$3; shift 3
  if [ -n "${LLCOMM_CAMPAIGN_STEPS:-}" ] && [[ ",$LLCOMM_CAMPAIGN_STEPS," != *",$name,"* ]]; then return; fi
  local now=$(( $(date +%s) - t0 ))
  if [ "$gpus" -lt "$need" ]; then echo "$name: skipped (needs $need GPUs, have $gpus)" | tee -a "$summary"; return; fi
  if [ $(( now + 20 )) -gt "$budget" ]; then echo "$name: skipped (campaign budget spent at ${now}s)" | tee -a "$summary"; return; fi
  local left=$(( budget - now )); [ "$limit" -gt "$left" ] && limit=$left
  local s=$(date +%s)
  timeout "$limit" "$@" > "$res/$name.log" 2>&1
  local rc=$?
  echo "$name: exit $rc in $(( $(date +%s) - s ))s (limit ${limit}s)" | tee -a "$summary"
  pack
}
{ nvidia-smi; nvidia-smi topo -m; nvidia-smi -q | grep -iE 'product name|driver version|cuda version|link|nvlink' | head -40; } > "$res/machine.txt" 2>&1
V2="0,0"; V4="0,0,0,0"; V8="0,0,0,0,0,0,0,0"
vr() { local n=$1 s=""; for ((i=0;i<n;i++)); do s+="${s:+,}0"; done; echo "$s"; }
common=(--no-progress --iters ${LLCOMM_CAMPAIGN_ITERS:-500} --warmup 100)

# 1. speed of light: NVLink ping-pong between GPUs, and between two blocks of one GPU
step sol-2gpu 40 2 $llcomm sol --devices 0,1 --ranks 2 --json "$res/sol-2gpu.json"
step sol-1gpu 40 1 $llcomm sol --devices 0,0 --ranks 2,4,8,16,32,64 --json "$res/sol-1gpu.json"
# 2. the side-by-side bench on 2 GPUs: every algorithm plus nccl and nccl-symmetric
step bench-2gpu 150 2 $llcomm bench --devices 0,1 --min 8 --max 16M --dtype bf16,f32 "${common[@]}" --json "$res/bench-2gpu.json"
step bench-2gpu-skew20 60 2 $llcomm bench --devices 0,1 --sizes 8,8K,64K,256K,1M --dtype bf16 --skew-us 20 "${common[@]}" --json "$res/bench-2gpu-skew20.json"
step bench-2gpu-pdl 60 2 $llcomm bench --devices 0,1 --sizes 8,8K,64K,256K,1M --dtype bf16 --pdl both "${common[@]}" --json "$res/bench-2gpu-pdl.json"
# 3. tuning table for two H200s
step tune-2gpu 60 2 $llcomm tune --devices 0,1 --min 8 --max 16M --dtype bf16 --iters 300 --warmup 50 --no-progress --out "$res/tune-h200-2gpu.json"
# 4. virtual ranks on one GPU: 2..64 ranks, f32 and bf16 (issue 4), PDL on/off at 8 ranks
for n in 2 4 8 16 32 64; do
  # 4M and 16M at 8 ranks took over 90 s of the budget (run of 2026-11-29): only with LLCOMM_CAMPAIGN_LARGE=1
  sizes="8,64,512,2K,4K,8K,16K,32K,64K,128K,256K,512K,1M"; [ "$n" -ge 64 ] && sizes="8,64,512,2K,4K,8K,16K,32K,64K"
  [ "$n" -le 8 ] && [ "${LLCOMM_CAMPAIGN_LARGE:-0}" = 1 ] && sizes+=",4M,16M"
  step "bench-v$n" 90 1 $llcomm bench --devices "$(vr $n)" --sizes "$sizes" --dtype bf16,f32 "${common[@]}" --json "$res/bench-v$n.json"
done
step bench-v8-pdl 60 1 $llcomm bench --devices "$V8" --sizes 8,8K,64K --dtype bf16 --pdl both "${common[@]}" --json "$res/bench-v8-pdl.json"
step bench-v8-scale 60 1 env LLCOMM_TARGET_BYTES_PER_BLOCK_SCALE=0.25 $llcomm bench --devices "$V8" --sizes 8K,64K,256K,1M --dtype bf16 "${common[@]}" --json "$res/bench-v8-scale025.json"
step tune-v8 60 1 $llcomm tune --devices "$V8" --min 8 --max 1M --dtype bf16 --iters 300 --warmup 50 --no-progress --out "$res/tune-h200-v8.json"
# 5. decode time of one tensor-parallel shard of real model shapes, without AllReduce (the decode model's compute term)
step decode-shards 150 1 python3 scripts/measure-decode.py --out "$res/decode-shards.json"
# 6. correctness on distinct GPUs and virtual ranks (the sanitizer ran on one GPU before); first on two GPUs
step gpu-test 240 1 env LLCOMM_SKIP_SANITIZER=${LLCOMM_SKIP_SANITIZER:-1} LLCOMM_GPU_TEST_TIMEOUT_S=230 OUT="$res" bash scripts/gpu-test.sh
echo "== campaign done in $(( $(date +%s) - t0 ))s"
cat "$summary"
