#!/usr/bin/env bash
# Targeted measurements for the latency-model rows that stay outside ±15% (docs/model.md §5), on one GPU with
# virtual ranks. Run on the GPU machine (see scripts/device-bundle.sh for the carry):
#   source .carry/activate && ln -sfn .devnm/node_modules node_modules && LLCOMM_COMMIT=<sha> bash scripts/probe/model-anomalies.sh
# 1. timing sweeps (llcomm bench --json) that vary one structural count at a time:
#    twoshot-atomic: owners with data K = bytes/16 at fixed N; lines per owner's part (31 data words per line)
#    twoshot-sentinel: bf16 against f32 at 32 ranks around the size where f32 falls behind
# 2. Nsight Compute over one whole captured graph (--graph-profiling graph: every rank's kernel runs together, so
#    the ranks' waits resolve as they do in the bench) for the pairs whose difference the model does not explain.
# Everything lands in $OUT/probe.tgz; a short table is printed last.
set -uo pipefail
out=${OUT:-/tmp/llcomm-probe}
res=/tmp/llcomm-probe-r
rm -rf "$res" && mkdir -p "$res"
export LLCOMM_CACHE_DIR=${LLCOMM_CACHE_DIR:-/tmp/llcomm-cache} NCCL_NVLS_ENABLE=0
budget=${LLCOMM_PROBE_S:-540}
t0=$(date +%s)
llcomm="node bin/llcomm.js"
vr() { local n=$1 s=""; for ((i=0;i<n;i++)); do s+="${s:+,}0"; done; echo "$s"; }
pack() { tar -czf "$out/probe.tgz.tmp" -C "$(dirname "$res")" "$(basename "$res")" && mv "$out/probe.tgz.tmp" "$out/probe.tgz"; }
step() { # step NAME LIMIT_S command...
  local name=$1 limit=$2; shift 2
  local now=$(( $(date +%s) - t0 )) left
  left=$(( budget - now ))
  if [ "$left" -lt 15 ]; then echo "$name: skipped (budget spent at ${now}s)" | tee -a "$res/summary.txt"; return; fi
  [ "$limit" -gt "$left" ] && limit=$left
  local s=$(date +%s)
  timeout "$limit" "$@" > "$res/$name.log" 2>&1
  echo "$name: exit $? in $(( $(date +%s) - s ))s (limit ${limit}s)" | tee -a "$res/summary.txt"
  pack
}
{ echo "commit ${LLCOMM_COMMIT:-unknown}"; date -u +%FT%TZ; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv; command -v ncu && ncu --version | tail -1; } > "$res/machine.txt" 2>&1
common=(--no-progress --iters 300 --warmup 50)

# 1. timing sweeps
step atomic-owners-v8 60 $llcomm bench --devices "$(vr 8)" --algorithms twoshot-atomic --dtype bf16 \
  --sizes 8,16,32,48,64,96,128,256,512 "${common[@]}" --json "$res/atomic-owners-v8.json"
step atomic-owners-v64 90 $llcomm bench --devices "$(vr 64)" --algorithms twoshot-atomic --dtype bf16 \
  --sizes 8,16,32,48,64,128,256,512,1K,2K "${common[@]}" --json "$res/atomic-owners-v64.json"
# part bytes 16 … 512 at N=32 (sizes = 32 × part): one line holds 124 data bytes, so 128 B is the first 2-line part
step atomic-lines-v32 90 $llcomm bench --devices "$(vr 32)" --algorithms twoshot-atomic --dtype bf16 \
  --sizes 512,1K,2K,3K,3584,3968,4K,4608,6K,7680,8K,12K,16K "${common[@]}" --json "$res/atomic-lines-v32.json"
step atomic-lines-v64 90 $llcomm bench --devices "$(vr 64)" --algorithms twoshot-atomic --dtype bf16 \
  --sizes 4K,7168,7936,8K,9216,12K,15360,16K "${common[@]}" --json "$res/atomic-lines-v64.json"
step ts-dtype-v32 90 $llcomm bench --devices "$(vr 32)" --algorithms twoshot-sentinel --dtype bf16,f32 \
  --sizes 32K,48K,64K,96K,128K "${common[@]}" --json "$res/ts-dtype-v32.json"

# 2. Nsight Compute over one graph replay (the second: the first is the bench's warm-up)
ncu_step() { # ncu_step NAME RANKS ALGORITHM DTYPE SIZE
  local name=$1 n=$2 alg=$3 dt=$4 size=$5
  step "ncu-$name" 120 ncu --clock-control none --graph-profiling graph --launch-skip 1 --launch-count 1 \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section InstructionStats \
    --export "$res/ncu-$name" --force-overwrite \
    $llcomm bench --devices "$(vr "$n")" --algorithms "$alg" --dtype "$dt" --sizes "$size" --iters 20 --warmup 1 --no-progress
  [ -f "$res/ncu-$name.ncu-rep" ] && ncu --import "$res/ncu-$name.ncu-rep" --page raw --csv > "$res/ncu-$name.raw.csv" 2>&1
  [ -f "$res/ncu-$name.ncu-rep" ] && ncu --import "$res/ncu-$name.ncu-rep" --page details > "$res/ncu-$name.details.txt" 2>&1
  rm -f "$res/ncu-$name.ncu-rep"
  pack
}
if command -v ncu >/dev/null; then
  ncu_step ts-v32-128K-bf16 32 twoshot-sentinel bf16 128K
  ncu_step ts-v32-128K-f32 32 twoshot-sentinel f32 128K
  ncu_step atomic-v32-2K 32 twoshot-atomic bf16 2K
  ncu_step atomic-v32-4K 32 twoshot-atomic bf16 4K
  ncu_step atomic-v64-8 64 twoshot-atomic bf16 8
  ncu_step atomic-v64-64 64 twoshot-atomic bf16 64
fi
pack
cat "$res/summary.txt"
# the short table: per-call µs of every timed row
node -e '
const fs=require("fs"),p=process.argv[1];
for (const f of fs.readdirSync(p).filter(f=>f.endsWith(".json")).sort()) {
  let d; try { d=JSON.parse(fs.readFileSync(p+"/"+f,"utf8")) } catch { continue }
  const rows=(d.results??d.rows??[]); const line=rows.map(r=>`${r.bytes??r.size}:${(r.medianUs??NaN).toFixed(2)}${r.dtype&&r.dtype!=="bf16"?"/"+r.dtype:""}`).join(" ");
  console.log(f.replace(".json",""), line);
}' "$res"
for f in "$res"/ncu-*.details.txt; do [ -f "$f" ] && { echo "== $(basename "$f")"; grep -E "Duration|DRAM Throughput|Memory Throughput|L2 Hit|Executed Ipc|Warp Cycles Per Issued|Stall|Mem Busy" "$f" | head -12; }; done
