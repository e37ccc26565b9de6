#!/usr/bin/env bash
# For the next device call on issue 22 item 1 (twoshot-atomic): scale-patches/batch-twoshot-atomic.patch (2026-12-01:
# 8 owners' input words loaded before their red.adds, the all-gather's owners polled 8 at a time) against the
# product's twoshot-atomic. Trees made here (ab/base = this tree's kernels, ab/batch = the same plus the patch; the
# patch applies cleanly at 557bfc8, compiles without spills, emulator 15/15); A/B in 3 interleaved rounds, bf16 and
# f32, twoshot-atomic beside oneshot-barrier (control: the same cubin in both trees), 8 B / 8 KB / 64 KB at 2-64
# virtual ranks of GPU 0 (and 256 KB, 1 MB at 8). Table last; JSON bundled in $OUT/atomic-batch.json. If it wins:
# apply the patch to packages/llcomm/kernels, run the GPU test (STEPS="gpu-test ...") and the model's counts
# (kernel-counts.ts twoshot-atomic: its polls become batched) before merging.
set -uo pipefail
cd "$(dirname "$0")/../../.."
out=${OUT:-/tmp/llcomm-atomic-batch}
mkdir -p "$out"
rm -rf ab/base ab/batch && mkdir -p ab
cp -r packages/llcomm/kernels ab/base && cp -r packages/llcomm/kernels ab/batch
(cd ab/batch && patch -p1 < ../../research/scripts/probe/scale-patches/batch-twoshot-atomic.patch) || exit 1
export LLCOMM_CACHE_DIR=${LLCOMM_CACHE_DIR:-/tmp/llcomm-cache} NCCL_NVLS_ENABLE=0
for n in 2 8 16 32 64; do
  devs=$(printf '0,%.0s' $(seq "$n")); devs=${devs%,}
  sizes=8,8K,64K
  [ "$n" = 8 ] && sizes=8,8K,64K,256K,1M
  t0=$(date +%s)
  OUT=$out/v$n timeout 200 bash research/scripts/probe/ab-kernels.sh 3 base=ab/base batch=ab/batch -- \
    --devices "$devs" --algorithms twoshot-atomic,oneshot-barrier --dtype bf16,f32 --sizes "$sizes" \
    --iters 300 --warmup 50 > "$out/ab-v$n.log" 2>&1
  echo "ab $n ranks: rc $? $(( $(date +%s) - t0 )) s"
done
export BUNDLE="$out/atomic-batch.json"
node -e 'const fs = require("fs"); const docs = process.argv.slice(1).filter((f) => fs.existsSync(f)).map((f) => ({ file: f, doc: JSON.parse(fs.readFileSync(f, "utf8")) }));
  fs.writeFileSync(process.env.BUNDLE, JSON.stringify({ docs }))' "$out"/v*/ab/*.json
echo "== ab (median us over rounds)"
for n in 2 8 16 32 64; do sed -n '/^case/,$p' "$out/ab-v$n.log" | grep -v "^$" | cut -c1-120; done
