#!/usr/bin/env bash
# Session 9, third device call (2026-12-02; issue 22, the prologue): LLCOMM_WARM_PARAMS (allreduce_common.cuh
# llcWarmParams: every warp's lane 0 touches its share of the parameters' 64-byte lines before the PDL wait).
# (1) the phase probe on ab/phase and ab/phasewarm (16 r 64 KB, 32 r 8 KB, 8 r 8 KB);
# (2) ab/base against ab/warm (the working tree's kernels without and with the knob), 3 interleaved rounds, every
#     all-reduce algorithm but ring, bf16, 8 B / 8 KB / 64 KB, 2-64 virtual ranks of GPU 0.
# Tables printed last; JSON bundled in $OUT/s9b.json.
set -uo pipefail
cd "$(dirname "$0")/../../.."
out=${OUT:-/tmp/llcomm-s9-b}
mkdir -p "$out"
export LLCOMM_CACHE_DIR=${LLCOMM_CACHE_DIR:-/tmp/llcomm-cache} NCCL_NVLS_ENABLE=0
t0=$(date +%s)
OUT=$out/phase PHASE_TREES="phase phasewarm" PHASE_CASES="16:65536 32:8192 8:8192" timeout 150 \
  bash research/scripts/probe/phase-probe.sh > "$out/phase.log" 2>&1
echo "phase probe: rc $? $(( $(date +%s) - t0 )) s"
for n in 2 8 16 32 64; do
  devs=$(printf '0,%.0s' $(seq "$n")); devs=${devs%,}
  t0=$(date +%s)
  OUT=$out/v$n timeout 200 bash research/scripts/probe/ab-kernels.sh 3 base=ab/base warm=ab/warm -- --devices "$devs" \
    --algorithms oneshot-ll,oneshot-sentinel,twoshot-sentinel,twoshot-atomic,oneshot-barrier --dtype bf16 \
    --sizes 8,8K,64K --iters 300 --warmup 50 > "$out/ab-v$n.log" 2>&1
  echo "ab $n ranks: rc $? $(( $(date +%s) - t0 )) s"
done
export BUNDLE="$out/s9b.json"
node -e 'const fs = require("fs"); const docs = process.argv.slice(1).filter((f) => fs.existsSync(f)).map((f) => ({ file: f, doc: JSON.parse(fs.readFileSync(f, "utf8")) }));
  fs.writeFileSync(process.env.BUNDLE, JSON.stringify({ docs }))' "$out"/v*/ab/*.json "$out"/phase/json/*.json
echo "== phase"; grep -E "^==|^(sends|reduced|bcast|allgather|end|start ->|scrptr|input ->|entry)" "$out/phase.log" | cut -c1-90
echo "== ab (median us over rounds)"
for n in 2 8 16 32 64; do sed -n '/^case/,$p' "$out/ab-v$n.log" | grep -v "^$" | cut -c1-120; done
