#!/usr/bin/env node
// PDL off against on from bench JSON documents run with `--pdl both` (research/scripts/probe/session-s9-a.sh): per
// rank count, size and algorithm the median µs with PDL off and on and on/off; then, per PDL setting, the best
// barrier-free algorithm over oneshot-barrier (issue 22's goal ratio) as scale-goals.mjs computes it.
//   node research/scripts/probe/pdl-table.mjs pdl-v2.json pdl-v16.json ...
import { readFileSync } from 'node:fs'

const rows = process.argv.slice(2).flatMap((f) => JSON.parse(readFileSync(f, 'utf8')).rows)
const barrierFree = ['oneshot-ll', 'oneshot-sentinel', 'twoshot-sentinel', 'twoshot-atomic']
const fmtBytes = (b) => (b >= 1 << 20 ? `${b / (1 << 20)}M` : b >= 1024 ? `${b / 1024}K` : `${b}`)
const cases = [...new Set(rows.map((r) => `${r.ranks}|${r.bytes}`))]
  .map((k) => k.split('|').map(Number))
  .sort((a, b) => a[0] - b[0] || a[1] - b[1])
const algorithms = [...new Set(rows.map((r) => r.algorithm))]
const us = (ranks, bytes, a, pdl) =>
  rows.find((r) => r.ranks === ranks && r.bytes === bytes && r.algorithm === a && Boolean(r.pdl) === pdl)?.medianUs
const table = [['ranks', 'size', ...algorithms.map((a) => `${a} off/on`), 'best/barrier off', 'best/barrier on']]
const best = (ranks, bytes, pdl) => {
  const bar = us(ranks, bytes, 'oneshot-barrier', pdl)
  const free = barrierFree.map((a) => us(ranks, bytes, a, pdl)).filter((u) => u !== undefined)
  return bar === undefined || free.length === 0 ? '-' : (Math.min(...free) / bar).toFixed(3)
}
for (const [ranks, bytes] of cases)
  table.push([
    String(ranks),
    fmtBytes(bytes),
    ...algorithms.map((a) => {
      const off = us(ranks, bytes, a, false)
      const on = us(ranks, bytes, a, true)
      return off === undefined || on === undefined ? '-' : `${off.toFixed(2)}/${on.toFixed(2)}`
    }),
    best(ranks, bytes, false),
    best(ranks, bytes, true),
  ])
const widths = table[0].map((_, i) => Math.max(...table.map((r) => r[i].length)))
for (const r of table) console.log(r.map((c, i) => c.padEnd(widths[i])).join('  '))
const wrong = rows.filter((r) => r.wrong > 0)
console.log(wrong.length === 0 ? 'every row: 0 wrong' : `${wrong.length} rows with wrong results`)
