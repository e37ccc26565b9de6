#!/usr/bin/env node
// Issue 22's goal table from bench JSON documents (research/scripts/probe/scale-bench.sh): per rank count and size,
// every algorithm's median µs, the best barrier-free one and its ratio to oneshot-barrier (goal <= 0.8 at 16-64 ranks,
// 8 KB and 64 KB; twoshot-sentinel <= 1.0 x oneshot-barrier at 8 ranks, 256 KB and 1 MB), and the growth of the best
// barrier-free at 8 KB from the smallest to the largest rank count (goal <= 3x from 2 to 64).
//   node research/scripts/probe/scale-goals.mjs scale-v2.json scale-v16.json ...
import { readFileSync } from 'node:fs'

const rows = process.argv.slice(2).flatMap((f) => JSON.parse(readFileSync(f, 'utf8')).rows)
const barrierFree = ['oneshot-ll', 'oneshot-sentinel', 'twoshot-sentinel', 'twoshot-atomic']
const fmtBytes = (b) => (b >= 1 << 20 ? `${b / (1 << 20)}M` : b >= 1024 ? `${b / 1024}K` : `${b}`)
const cases = [...new Set(rows.map((r) => `${r.ranks}|${r.bytes}`))]
  .map((k) => k.split('|').map(Number))
  .sort((a, b) => a[0] - b[0] || a[1] - b[1])
const wrong = rows.filter((r) => r.wrong > 0)
const table = [['ranks', 'size', ...barrierFree, 'oneshot-barrier', 'best', 'best/barrier', 'ts/barrier']]
const bestAt = new Map()
for (const [ranks, bytes] of cases) {
  const us = (a) => rows.find((r) => r.ranks === ranks && r.bytes === bytes && r.algorithm === a)?.medianUs
  const bar = us('oneshot-barrier')
  const free = barrierFree.map((a) => [a, us(a)]).filter(([, u]) => u !== undefined)
  const [bestAlg, bestUs] = free.reduce((m, x) => (x[1] < m[1] ? x : m), ['-', Number.POSITIVE_INFINITY])
  bestAt.set(`${ranks}|${bytes}`, bestUs)
  const ts = us('twoshot-sentinel')
  table.push([
    String(ranks),
    fmtBytes(bytes),
    ...barrierFree.map((a) => (us(a) === undefined ? '-' : us(a).toFixed(2))),
    bar === undefined ? '-' : bar.toFixed(2),
    bestAlg,
    bar === undefined ? '-' : (bestUs / bar).toFixed(3),
    bar === undefined || ts === undefined ? '-' : (ts / bar).toFixed(3),
  ])
}
const widths = table[0].map((_, i) => Math.max(...table.map((r) => r[i].length)))
for (const r of table) console.log(r.map((c, i) => c.padEnd(widths[i])).join('  '))
const ranksAt8K = [...new Set(cases.filter(([, b]) => b === 8192).map(([n]) => n))]
if (ranksAt8K.length >= 2) {
  const lo = Math.min(...ranksAt8K)
  const hi = Math.max(...ranksAt8K)
  const g = bestAt.get(`${hi}|8192`) / bestAt.get(`${lo}|8192`)
  console.log(`growth of the best barrier-free at 8 KB from ${lo} to ${hi} ranks: ${g.toFixed(2)}x`)
}
console.log(wrong.length ? `WRONG results in ${wrong.length} rows` : 'every row: 0 wrong')
