#!/usr/bin/env bash
# A/B of the call signature (issue 18 item 1) on the GPU machine, in one device call, from the repository root.
# Variants (label = kernel tree; the ab/ trees are made by research/scripts/probe/make-signature-trees.sh before the
# call, each a copy of packages/llcomm/kernels with one A/B define):
#   nosig    ab/nosig   the kernels without the signature (the baseline every ratio is taken against)
#   ctrl     ab/ctrl    a byte-identical copy of ab/nosig: ctrl / nosig is the A/B's noise floor
#   sig      packages/llcomm/kernels, the product kernels
#   r1       ab/r1      round 1's armed look (its address arithmetic hoistable before the poll loops)
#   noarm    ab/noarm   no armed waits
#   pubonly  ab/pubonly packet stores only (no check, no arm)
#   publow   ab/publow  the packets stored by threads 0..nranks-1 (round 0's publishers), the checkers unchanged
#   r2       ab/r2      round 2's placement of the serial paths' check (the product default since 2026-12-01 d)
#   tail     ab/tail    round 3's tail check (every wait armed; measured slower)
#   defer    ab/defer   round 4: kernel e checks epoch e - 1 (LLCOMM_SIG_DEFERRED; the host checks the last launch)
# The same host code for all; interleaved rounds (ab-kernels.sh, one round a call, the variant order rotated each
# round so no variant always runs first), 2 and 8 virtual ranks of GPU 0. Prints the median over rounds per variant
# and the ratio variant / nosig per case, then each variant's median and max ratio (research/notes/
# signature-cost.md quotes these).
#   bash research/scripts/probe/make-signature-trees.sh      # here, before the device call
#   bash research/scripts/probe/signature-ab.sh              # on the GPU machine
# Settings: AB_ROUNDS (3), AB_ITERS (1000), AB_VARIANTS ("nosig ctrl sig tail pubonly"; r1 noarm publow r2 defer on request),
# AB_ALGORITHMS (oneshot-ll,twoshot-sentinel,oneshot-sentinel), AB_SIZES (8,64K), AB_DTYPES (bf16,f32),
# AB_RANKS ("2 8"),
# AB_BUDGET_S (45, under the 50 s of GPU time the A/B may take: no round is started that the last round's duration
# says would end past it; the rounds done are reported). Defaults: 24 cases, 5 variants (round 2 took 47 s with 7).
set -uo pipefail
cd "$(dirname "$0")/../../.."
base=${OUT:-/tmp/llcomm-ab}
rounds=${AB_ROUNDS:-3}
iters=${AB_ITERS:-1000}
budget=${AB_BUDGET_S:-45}
algorithms=${AB_ALGORITHMS:-oneshot-ll,twoshot-sentinel,oneshot-sentinel}
sizes=${AB_SIZES:-8,64K}
dtypes=${AB_DTYPES:-bf16,f32}
read -r -a ranks <<<"${AB_RANKS:-2 8}"
read -r -a labels <<<"${AB_VARIANTS:-nosig ctrl sig tail pubonly}"
dir_of() { if [ "$1" = sig ]; then echo packages/llcomm/kernels; else echo "ab/$1"; fi; }
for l in "${labels[@]}"; do
  test -d "$(dir_of "$l")" || { echo "$(dir_of "$l") missing: run research/scripts/probe/make-signature-trees.sh first" >&2; exit 2; }
done
[[ " ${labels[*]} " == *" nosig "* ]] || { echo "AB_VARIANTS must include nosig (the baseline)" >&2; exit 2; }
export LLCOMM_CACHE_DIR=${LLCOMM_CACHE_DIR:-/tmp/llcomm-cache} NCCL_NVLS_ENABLE=0
mkdir -p "$base"
start=$SECONDS
# Compile every tree once, in parallel (NVRTC is CPU-bound; one compile per source file, cached by source hash:
# ab/ctrl shares ab/nosig's cubins), so that the timed rounds below start and load only.
for l in "${labels[@]}"; do
  LLCOMM_KERNELS_DIR=$(realpath "$(dir_of "$l")") timeout 120 node packages/tools/bin/llcomm.js bench --no-progress \
    --devices 0,0 --algorithms "$algorithms" --dtype "$dtypes" --sizes 8 --iters 1 --warmup 0 \
    > "$base/warm-$l.log" 2>&1 &
done
wait
echo "compiled ${#labels[@]} trees in $((SECONDS - start)) s"
done_rounds=0
for ((r = 1; r <= rounds; r++)); do
  t0=$SECONDS
  # Rotate the order: round r starts with variant (r - 1) mod V.
  order=()
  for ((i = 0; i < ${#labels[@]}; i++)); do
    l=${labels[$(((i + r - 1) % ${#labels[@]}))]}
    order+=("$l=$(dir_of "$l")")
  done
  for n in "${ranks[@]}"; do
    devs=$(printf '0,%.0s' $(seq "$n")); devs=${devs%,}
    OUT=$base/signature-v$n AB_TAG=r$r bash research/scripts/probe/ab-kernels.sh 1 "${order[@]}" -- --devices "$devs" \
      --algorithms "$algorithms" --dtype "$dtypes" --sizes "$sizes" --iters "$iters" --warmup 200 \
      >> "$base/ab-tables.log" 2>&1
  done
  done_rounds=$r
  took=$((SECONDS - t0))
  echo "round $r: $took s (elapsed $((SECONDS - start)) s)"
  if ((r < rounds && SECONDS - start + took > budget)); then
    echo "stopping after round $r: another round would pass AB_BUDGET_S=$budget"
    break
  fi
done
grep -h "WRONG\|exit" "$base/ab-tables.log" | head -20
node -e '
const fs = require("fs"), base = process.argv[1], labels = process.argv[2].split(" "), ranks = process.argv[3].split(" ")
// The median (the mean of the middle two for an even count: 2 rounds when AB_BUDGET_S cut the third).
const med = (a) => { const s = [...a].sort((x, y) => x - y), h = s.length >> 1; return s.length % 2 ? s[h] : (s[h - 1] + s[h]) / 2 }
const others = labels.filter((l) => l !== "nosig")
console.log(`\ncall signature: nosig median us, then each variant / nosig (medians over ${process.argv[4]} rounds)`)
console.log(["case".padEnd(36), "nosig".padStart(7), ...others.map((l) => l.padStart(8))].join(" "))
const ratios = Object.fromEntries(others.map((l) => [l, []]))
const deltas = Object.fromEntries(others.map((l) => [l, []]))
for (const n of ranks) {
  const dir = `${base}/signature-v${n}/ab`
  if (!fs.existsSync(dir)) continue
  const rows = new Map()
  for (const f of fs.readdirSync(dir).filter((f) => f.endsWith(".json"))) {
    const label = f.replace(/-r\d+(-[^.]*)?\.json$/, "")
    for (const r of JSON.parse(fs.readFileSync(`${dir}/${f}`, "utf8")).rows) {
      const key = `${r.algorithm} ${r.dtype} ${r.ranks}r ${r.bytes}B`
      if (!rows.has(key)) rows.set(key, {})
      ;(rows.get(key)[label] ??= []).push(r.medianUs)
    }
  }
  for (const [key, v] of [...rows].sort(([a], [b]) => a.localeCompare(b, "en", { numeric: true }))) {
    if (!v.nosig) { console.log(`${key.padEnd(36)} no nosig row`); continue }
    const a = med(v.nosig)
    const cells = others.map((l) => {
      if (!v[l]) return "-".padStart(8)
      const b = med(v[l])
      ratios[l].push(b / a); deltas[l].push(b - a)
      return (b / a).toFixed(3).padStart(8)
    })
    console.log([key.padEnd(36), a.toFixed(2).padStart(7), ...cells].join(" "))
  }
}
console.log("\nper variant over the cases: median ratio, max ratio, median and max delta (us)")
for (const l of others) {
  const r = ratios[l], d = deltas[l]
  if (!r.length) continue
  console.log(`${l.padEnd(8)} median ${med(r).toFixed(3)} max ${Math.max(...r).toFixed(3)}  delta median ${med(d).toFixed(2)} max ${Math.max(...d).toFixed(2)}  (${r.length} cases)`)
}
' "$base" "${labels[*]}" "${ranks[*]}" "$done_rounds"
echo "total $((SECONDS - start)) s"
