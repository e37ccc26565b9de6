#!/usr/bin/env node
// The table of the scale A/Bs (issue 22): median us per tree over rounds, each tree's ratio to oneshot-barrier, and
// the best barrier-free per tree and case. Reads BASE/v<ranks>/ab/<tree>-r<round>[-<tag>].json (llcomm bench --json
// documents, as research/scripts/probe/ab-kernels.sh writes them).
//   node research/scripts/probe/ab-table.mjs BASE "tree1 tree2" 16,32 8K,64K [--barrier pooled|best]
// --barrier pooled (default): the reference is the median of every tree's oneshot-barrier samples (the barrier's
// source is the same in every tree). best: the lowest of the trees' own barrier medians (for sweeps of a launch
// knob, e.g. block-scale-sweep.sh, where the barrier's own launch changes with the tree).
import fs from 'node:fs'
const barrierMode = process.argv.includes('--barrier') ? process.argv[process.argv.indexOf('--barrier') + 1] : 'pooled'
if (barrierMode !== 'pooled' && barrierMode !== 'best') throw new Error(`--barrier ${barrierMode}: pooled or best`)
const base = process.argv[2], trees = process.argv[3].split(" ")
const rankCounts = process.argv[4].split(",").map(Number)
const sizeBytes = process.argv[5].split(",").map((x) => Number.parseInt(x, 10) * (x.endsWith("M") ? 1 << 20 : x.endsWith("K") ? 1024 : 1))
const sizeText = (b) => (b % (1 << 20) === 0 ? `${b >> 20}M` : b % 1024 === 0 ? `${b / 1024}K` : `${b}`)
const med = (a) => { const s = [...a].sort((x, y) => x - y); return s[Math.floor(s.length / 2)] }
const rows = new Map() // "alg ranks bytes" -> tree -> [us]
for (const n of rankCounts) {
  const dir = `${base}/v${n}/ab`
  if (!fs.existsSync(dir)) continue
  for (const f of fs.readdirSync(dir).filter((f) => f.endsWith(".json"))) {
    const tree = f.replace(/-r\d+(-[^.]*)?\.json$/, "")
    for (const r of JSON.parse(fs.readFileSync(`${dir}/${f}`, "utf8")).rows) {
      const key = `${r.algorithm}|${r.ranks}|${r.bytes}`
      if (!rows.has(key)) rows.set(key, {})
      ;(rows.get(key)[tree] ??= []).push(r.medianUs)
      if (r.wrong) console.log(`WRONG ${tree} ${key}: ${r.wrong}`)
    }
  }
}
const fmt = (x, d = 2) => (x === undefined ? "-" : x.toFixed(d))
console.log(`\nscale A/B: median us per tree (rounds), and / oneshot-barrier (${barrierMode === 'pooled' ? "all trees' barrier samples" : "the best tree's own barrier median"})`)
console.log(["case".padEnd(34), ...trees.map((t) => t.padStart(8)), ...trees.map((t) => `${t}/bar`.padStart(11)), "rounds".padStart(7)].join(" "))
const goal = []
for (const n of rankCounts) for (const bytes of sizeBytes) {
  const bar = rows.get(`oneshot-barrier|${n}|${bytes}`)
  const barAll = bar ? Object.values(bar).flat() : []
  const ref = !barAll.length
    ? undefined
    : barrierMode === 'pooled'
      ? med(barAll)
      : Math.min(...Object.values(bar).map((samples) => med(samples)))
  for (const alg of ["oneshot-barrier", "twoshot-sentinel", "twoshot-atomic", "oneshot-sentinel", "oneshot-ll"]) {
    const v = rows.get(`${alg}|${n}|${bytes}`)
    if (!v) continue
    const m = trees.map((t) => (v[t] ? med(v[t]) : undefined))
    const ratio = m.map((x) => (x !== undefined && ref ? x / ref : undefined))
    const k = Math.min(...trees.map((t) => (v[t] ? v[t].length : 0)))
    console.log([`${alg} bf16 ${n}r ${sizeText(bytes)}`.padEnd(34), ...m.map((x) => fmt(x).padStart(8)), ...ratio.map((x) => fmt(x, 3).padStart(11)), String(k).padStart(7)].join(" "))
    if (alg !== "oneshot-barrier") trees.forEach((t, i) => { if (ratio[i] !== undefined) goal.push({ n, bytes, t, alg, r: ratio[i] }) })
  }
}
console.log("\nbest barrier-free / oneshot-barrier per tree (goal <= 0.8 at 16-64 ranks, 8 KB and 64 KB; <= 1.0 at 8 ranks, 256 KB and 1 MB):")
for (const n of rankCounts) for (const bytes of sizeBytes) {
  const line = trees.map((t) => {
    const c = goal.filter((g) => g.n === n && g.bytes === bytes && g.t === t).sort((a, b) => a.r - b.r)[0]
    return c ? `${t} ${c.r.toFixed(3)} (${c.alg})` : `${t} -`
  })
  console.log(`  ${n}r ${sizeText(bytes)}: ${line.join("  ")}`)
}
