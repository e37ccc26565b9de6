#!/usr/bin/env bash
# A/B of the call signature (issue 18 item 1) on the GPU machine, in one device call, from the repository root:
# the current kernels (sig = kernels/) against the kernels before the signature (nosig = ab/nosig: the same kernels with the signature steps empty, made by
# research/scripts/probe/make-signature-trees.sh before the call), the same host code, interleaved rounds (ab-kernels.sh),
# at 8 B, 8 KB and 64 KB per rank on 2 and 8 virtual ranks of GPU 0. Prints the median per variant and the ratio
# sig / nosig per case (1.00 = no cost; the issue's closing note quotes these).
#   bash research/scripts/probe/make-signature-trees.sh      # here, before the device call
#   bash research/scripts/probe/signature-ab.sh              # on the GPU machine; AB_ROUNDS (default 3), AB_ITERS (1000)
set -uo pipefail
cd "$(dirname "$0")/../../.."
test -d ab/nosig || { echo "ab/nosig missing: run research/scripts/probe/make-signature-trees.sh first" >&2; exit 2; }
base=${OUT:-/tmp/llcomm-ab}
rounds=${AB_ROUNDS:-3}
iters=${AB_ITERS:-1000}
algorithms=${AB_ALGORITHMS:-oneshot-ll,oneshot-sentinel,twoshot-sentinel,oneshot-barrier}
for n in 2 8; do
  devs=$(printf '0,%.0s' $(seq $n)); devs=${devs%,}
  OUT=$base/signature-v$n bash research/scripts/probe/ab-kernels.sh "$rounds" sig=packages/llcomm/kernels nosig=ab/nosig -- --devices "$devs" \
    --algorithms "$algorithms" --dtype bf16,f32 --sizes 8,8K,64K --iters "$iters" --warmup 200
done
node -e '
const fs = require("fs"), base = process.argv[1]
const med = (a) => { const s = [...a].sort((x, y) => x - y); return s[Math.floor(s.length / 2)] }
console.log("\ncall signature: median us per variant and the ratio sig / nosig")
console.log(["case".padEnd(40), "nosig".padStart(9), "sig".padStart(9), "ratio".padStart(7)].join(" "))
const ratios = []
for (const n of [2, 8]) {
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
  for (const [key, v] of rows) {
    if (!v.sig || !v.nosig) { console.log(`${key.padEnd(40)} missing a variant`); continue }
    const a = med(v.nosig), b = med(v.sig)
    ratios.push(b / a)
    console.log([key.padEnd(40), a.toFixed(2).padStart(9), b.toFixed(2).padStart(9), (b / a).toFixed(3).padStart(7)].join(" "))
  }
}
if (ratios.length) console.log(`median ratio ${med(ratios).toFixed(3)} over ${ratios.length} cases, max ${Math.max(...ratios).toFixed(3)}`)
' "$base"
