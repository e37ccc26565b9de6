#!/usr/bin/env bash
# Large messages against the receive-buffer size (bench/NOTES.md, eighth session): llcomm bench on every GPU with
# --buffer-bytes 1M (the default), 4M and 16M, then PyTorch's symmetric-memory two-shot and NCCL on the same sizes,
# one device call. Writes $OUT/bb-<size>.json, $OUT/torch.json and prints a table of the medians last.
#   source .carry/activate && ln -sfn .devnm/node_modules node_modules && LLCOMM_COMMIT=<sha> bash scripts/probe/buffer-bytes.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-/tmp/llcomm-bb}
mkdir -p "$out"
export LLCOMM_CACHE_DIR=${LLCOMM_CACHE_DIR:-/tmp/llcomm-cache} NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
gpus=$(nvidia-smi -L | wc -l)
devices=$(seq -s, 0 $((gpus - 1)))
algorithms=oneshot-ll,oneshot-sentinel,twoshot-sentinel,twoshot-atomic,ring,nccl
# one GPU: two virtual ranks, without nccl (it needs a GPU a rank) and the torch baselines (two GPUs)
[ "$gpus" -lt 2 ] && devices=0,0 && algorithms=${algorithms%,nccl}
sizes=${BB_SIZES:-128K,256K,512K,1M,2M,4M}
for bb in ${BB_BUFFERS:-1M 4M 16M}; do
  timeout 120 node bin/llcomm.js bench --devices "$devices" --sizes "$sizes" --dtype bf16 --buffer-bytes "$bb" \
    --algorithms "$algorithms" --no-progress --iters 500 \
    --warmup 100 --json "$out/bb-$bb.json" > "$out/bb-$bb.txt" 2>&1 || echo "bench --buffer-bytes $bb: exit $?"
done
[ "$gpus" -ge 2 ] && timeout 200 python3 scripts/baselines/torch-symm-mem.py --sizes "$sizes" --dtype bf16 --iters 500 --warmup 100 \
  --algorithms torch-symm-twoshot,torch-nccl --commit "${LLCOMM_COMMIT:-unknown}" --out "$out/torch.json" \
  > "$out/torch.txt" 2>&1 || echo "torch baselines: exit $?"
node -e '
const fs = require("fs"), dir = process.argv[1]
const docs = fs.readdirSync(dir).filter((f) => /^bb-.*\.json$/.test(f)).map((f) => [f.slice(3, -5), JSON.parse(fs.readFileSync(`${dir}/${f}`))])
const torch = fs.existsSync(`${dir}/torch.json`) ? JSON.parse(fs.readFileSync(`${dir}/torch.json`)).rows : []
const algs = [...new Set(docs.flatMap(([, d]) => d.rows.map((r) => r.algorithm)))]
const sizes = [...new Set(docs.flatMap(([, d]) => d.rows.map((r) => r.bytes)))].sort((a, b) => a - b)
console.log(["size".padStart(8), ...docs.flatMap(([bb]) => algs.map((a) => `${a}@${bb}`.padStart(24))), "torch-2shot".padStart(12), "torch-nccl".padStart(12)].join(" "))
for (const b of sizes) {
  const cell = (rows, a) => { const r = rows.find((x) => x.algorithm === a && x.bytes === b); return r ? (r.wrong ? "WRONG" : r.medianUs.toFixed(2)) : "-" }
  console.log([String(b).padStart(8), ...docs.flatMap(([, d]) => algs.map((a) => cell(d.rows, a).padStart(24))), cell(torch, "torch-symm-twoshot").padStart(12), cell(torch, "torch-nccl").padStart(12)].join(" "))
}' "$out"
