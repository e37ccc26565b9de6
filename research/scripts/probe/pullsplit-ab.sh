#!/usr/bin/env bash
# A/B of twoshot-sentinel's all-gather kernels in one build (issue 22, pullsplit: the pull is a second kernel,
# llcomm_twoshot_sentinel_pull_*, chosen by the host per launch: kernel-table.ts twoshotAllGather), on the GPU machine,
# in one device call, from the repository root: LLCOMM_TWOSHOT_ALLGATHER=push (always the push kernel: the product's
# before this change) against =auto (the host's choice), in interleaved rounds (round r: every rank count, buffer and
# mode in turn), one `llcomm bench --json` per (round, ranks, buffer, mode); twoshot-sentinel and oneshot-barrier (the
# reference, the same kernel in both modes), bf16, on AB_RANKS virtual ranks of GPU 0.
#   bash research/scripts/probe/pullsplit-ab.sh                     # on the GPU machine (after npm run build)
#   bash research/scripts/probe/pullsplit-ab.sh --tabulate DIR      # only the table, from DIR's bench files
# Knobs: AB_ROUNDS (3), AB_ITERS (300), AB_WARMUP (50), AB_RANKS (2,8), AB_SIZES (8,8K,64K,256K,1M), AB_BUFFERS
# (1M,4M: the bench's --buffer-bytes), AB_MODES (push,auto; pull also works: the pull kernel on every serial-path
# launch), AB_ALGORITHMS (twoshot-sentinel,oneshot-barrier), AB_BUDGET_S (540: no new (round, ranks, buffer) step is
# started when the elapsed time plus the longest step so far would pass it; the summary says what ran).
# Writes $OUT/pullsplit/<mode>-n<ranks>-b<buffer>-r<round>.json (+ .log) and prints per case the median us per mode
# over rounds, auto / push, each mode / oneshot-barrier (the median of the barrier's samples of every mode at that
# case) and the prediction written before the run (research/notes/scale-2026-12-02-pullag.md, "pullsplit").
set -uo pipefail
cd "$(dirname "$0")/../../.."
tabulate() {
  node -e '
const fs = require("fs"), dir = process.argv[1], modes = process.argv[2].split(",")
const med = (a) => { const s = [...a].sort((x, y) => x - y); return s[Math.floor(s.length / 2)] }
const sizeText = (b) => (b >= 1 << 20 && b % (1 << 20) === 0 ? `${b >> 20}M` : b >= 1024 && b % 1024 === 0 ? `${b / 1024}K` : `${b}`)
// Predictions for auto, us (written before the GPU run). 2 ranks and the 8-rank spread sizes: auto runs the push
// kernel, so = push within noise (pred "push"). 8 ranks 1 MB: the pull kernel, pullgate measured today (same pull
// code): 15.78 (4 MB buffer, one launch), 23.78 (1 MB buffer, two launches).
const pred = { "twoshot-sentinel|8|4194304|1048576": 15.8, "twoshot-sentinel|8|1048576|1048576": 23.8 }
const rows = new Map() // "alg|ranks|buffer|bytes" -> mode -> [us]
const files = fs.existsSync(dir) ? fs.readdirSync(dir).filter((f) => f.endsWith(".json")) : []
for (const f of files) {
  const m = /^(\w+)-n(\d+)-b(\d+)-r\d+\.json$/.exec(f)
  if (!m) continue
  const [, mode, , buffer] = m
  const doc = JSON.parse(fs.readFileSync(`${dir}/${f}`, "utf8"))
  if (doc.bufferBytes !== undefined && doc.bufferBytes !== Number(buffer)) throw new Error(`${f}: bufferBytes ${doc.bufferBytes}`)
  for (const r of doc.rows) {
    if (r.dtype !== "bf16") continue
    const key = `${r.algorithm}|${r.ranks}|${buffer}|${r.bytes}`
    if (!rows.has(key)) rows.set(key, {})
    ;(rows.get(key)[mode] ??= []).push(r.medianUs)
    if (r.wrong) console.log(`WRONG ${mode} ${key}: ${r.wrong}`)
  }
}
if (rows.size === 0) { console.log(`no bench rows in ${dir}`); process.exit(1) }
const fmt = (x, d = 2) => (x === undefined ? "-" : x.toFixed(d))
console.log("\npullsplit A/B: median us per mode (rounds), auto / push, and / oneshot-barrier (every mode\x27s barrier samples)")
const hasAuto = modes.includes("auto") && modes.includes("push")
console.log(["case".padEnd(38), ...modes.map((m) => m.padStart(8)), hasAuto ? "auto/push".padStart(10) : "",
  ...modes.map((m) => `${m}/bar`.padStart(9)), "pred".padStart(6), "rounds".padStart(7)].join(" "))
const keys = [...rows.keys()].sort((a, b) => {
  const x = a.split("|"), y = b.split("|")
  return Number(x[1]) - Number(y[1]) || Number(x[2]) - Number(y[2]) || Number(x[3]) - Number(y[3]) || (x[0] < y[0] ? -1 : 1)
})
for (const key of keys) {
  const [alg, n, buffer, bytes] = key.split("|")
  const v = rows.get(key)
  const bar = rows.get(`oneshot-barrier|${n}|${buffer}|${bytes}`)
  const ref = bar ? med(Object.values(bar).flat()) : undefined
  const m = modes.map((x) => (v[x] ? med(v[x]) : undefined))
  const ratio = hasAuto && v.auto && v.push ? med(v.auto) / med(v.push) : undefined
  const p = pred[key] ?? (alg === "twoshot-sentinel" ? "push" : "")
  const k = Math.min(...modes.map((x) => (v[x] ? v[x].length : 0)))
  console.log([`${alg} bf16 ${n}r ${sizeText(Number(bytes))} buf ${sizeText(Number(buffer))}`.padEnd(38),
    ...m.map((x) => fmt(x).padStart(8)), hasAuto ? fmt(ratio, 3).padStart(10) : "",
    ...m.map((x) => fmt(x !== undefined && ref ? x / ref : undefined, 3).padStart(9)),
    String(typeof p === "number" ? p.toFixed(1) : p).padStart(6), String(k).padStart(7)].join(" "))
}
console.log("\npred: auto\x27s predicted median us (\"push\": the same kernel runs, so auto = push within noise, |auto/push - 1| <= 0.03)")
' "$1" "$2"
}
if [ "${1:-}" = "--tabulate" ]; then
  tabulate "${2:?usage: pullsplit-ab.sh --tabulate DIR}" "${AB_MODES:-push,auto}"
  exit $?
fi
base=${OUT:-/tmp/llcomm-ab}/pullsplit
rounds=${AB_ROUNDS:-3} iters=${AB_ITERS:-300} warmup=${AB_WARMUP:-50} budget=${AB_BUDGET_S:-540}
IFS=, read -r -a rankCounts <<<"${AB_RANKS:-2,8}"
IFS=, read -r -a buffers <<<"${AB_BUFFERS:-1M,4M}"
IFS=, read -r -a modes <<<"${AB_MODES:-push,auto}"
sizes=${AB_SIZES:-8,8K,64K,256K,1M}
for n in "${rankCounts[@]}"; do
  [[ $n =~ ^[1-9][0-9]*$ ]] || { echo "AB_RANKS: '$n' is not a rank count" >&2; exit 2; }
done
for b in "${buffers[@]}"; do
  [[ $b =~ ^[0-9]+[KM]?$ ]] || { echo "AB_BUFFERS: '$b' is not a size like 4M" >&2; exit 2; }
done
for m in "${modes[@]}"; do
  [[ $m =~ ^(auto|push|pull)$ ]] || { echo "AB_MODES: '$m' is not auto, push or pull" >&2; exit 2; }
done
[[ $sizes =~ ^[0-9]+[KM]?(,[0-9]+[KM]?)*$ ]] || { echo "AB_SIZES: '$sizes' is not a list like 8K,64K,1M" >&2; exit 2; }
bytesOf() { local x=$1; case $x in *M) echo $(( ${x%M} << 20 ));; *K) echo $(( ${x%K} << 10 ));; *) echo "$x";; esac; }
mkdir -p "$base"
export LLCOMM_CACHE_DIR=${LLCOMM_CACHE_DIR:-/tmp/llcomm-cache} NCCL_NVLS_ENABLE=0
start=$(date +%s.%N)
longest=0
for ((r = 1; r <= rounds; r++)); do
  for n in "${rankCounts[@]}"; do
    devs=$(printf '0,%.0s' $(seq "$n")); devs=${devs%,}
    for b in "${buffers[@]}"; do
      now=$(date +%s.%N)
      if awk -v s="$start" -v t="$now" -v l="$longest" -v b="$budget" 'BEGIN { exit !(t - s + l > b) }'; then
        echo "budget: round $r, $n ranks, buffer $b not started"
        continue
      fi
      for m in "${modes[@]}"; do
        f=$base/$m-n$n-b$(bytesOf "$b")-r$r
        LLCOMM_TWOSHOT_ALLGATHER=$m timeout 150 node packages/tools/bin/llcomm.js bench --no-progress --devices "$devs" \
          --algorithms "${AB_ALGORITHMS:-twoshot-sentinel,oneshot-barrier}" --dtype bf16 --sizes "$sizes" \
          --iters "$iters" --warmup "$warmup" --buffer-bytes "$b" --json "$f.json" > "$f.log" 2>&1 ||
          echo "round $r, $n ranks, buffer $b, $m: exit $? (see $f.log)"
      done
      end=$(date +%s.%N)
      step=$(awk -v a="$now" -v b="$end" 'BEGIN { printf "%.1f", b - a }')
      longest=$(awk -v a="$longest" -v b="$step" 'BEGIN { print (b > a ? b : a) }')
      echo "round $r, $n ranks, buffer $b: $step s (${#modes[@]} modes)"
    done
  done
done
echo "total $(awk -v s="$start" -v t="$(date +%s.%N)" 'BEGIN { printf "%.1f", t - s }') s"
tabulate "$base" "$(IFS=,; echo "${modes[*]}")"
