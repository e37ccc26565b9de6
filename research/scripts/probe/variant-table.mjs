#!/usr/bin/env node
// Median µs per case (algorithm, ranks, bytes) of bench JSON documents grouped by variant, the second variant over the
// first, and issue 22's goal ratio (best barrier-free / oneshot-barrier) per variant, each variant's own barrier.
//   node research/scripts/probe/variant-table.mjs old=dirA new=dirB     (every *.json under each dir, recursively)
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'

const files = (d) => readdirSync(d).flatMap((n) => (statSync(join(d, n)).isDirectory() ? files(join(d, n)) : n.endsWith('.json') ? [join(d, n)] : []))
const variants = process.argv.slice(2).map((a) => a.split('='))
const med = (a) => { const s = [...a].sort((x, y) => x - y); return s[s.length >> 1] }
const data = new Map() // key -> variant -> [us]
let wrong = 0
for (const [name, dir] of variants)
  for (const f of files(dir))
    for (const r of JSON.parse(readFileSync(f, 'utf8')).rows ?? []) {
      wrong += r.wrong ?? 0
      const key = `${r.ranks}|${r.bytes}|${r.algorithm}`
      if (!data.has(key)) data.set(key, {})
      ;(data.get(key)[name] ??= []).push(r.medianUs)
    }
const names = variants.map(([n]) => n)
const fmt = (b) => (b >= 1 << 20 ? `${b / (1 << 20)}M` : b >= 1024 ? `${b / 1024}K` : `${b}`)
const keys = [...data.keys()].sort((a, b) => { const [ra, ba] = a.split('|').map(Number); const [rb, bb] = b.split('|').map(Number); return ra - rb || ba - bb || a.localeCompare(b) })
console.log(['ranks', 'size', 'algorithm'.padEnd(17), ...names.map((n) => n.padStart(8)), `${names[1]}/${names[0]}`].join('  '))
for (const k of keys) {
  const [ranks, bytes, alg] = k.split('|')
  const m = names.map((n) => (data.get(k)[n] ? med(data.get(k)[n]) : undefined))
  console.log([ranks.padStart(5), fmt(Number(bytes)).padStart(4), alg.padEnd(17), ...m.map((x) => (x === undefined ? '-' : x.toFixed(2)).padStart(8)), m[0] && m[1] ? (m[1] / m[0]).toFixed(3) : '-'].join('  '))
}
console.log('\nbest barrier-free / oneshot-barrier (each variant its own barrier)')
const cases = [...new Set(keys.map((k) => k.split('|').slice(0, 2).join('|')))]
for (const c of cases) {
  const parts = names.map((n) => {
    const us = (a) => (data.get(`${c}|${a}`)?.[n] ? med(data.get(`${c}|${a}`)[n]) : undefined)
    const bar = us('oneshot-barrier')
    const free = ['oneshot-ll', 'oneshot-sentinel', 'twoshot-sentinel', 'twoshot-atomic'].map(us).filter((x) => x !== undefined)
    return bar && free.length ? (Math.min(...free) / bar).toFixed(3) : '-'
  })
  const [r, b] = c.split('|')
  console.log(`  ${r.padStart(2)}r ${fmt(Number(b)).padStart(4)}: ${names.map((n, i) => `${n} ${parts[i]}`).join('  ')}`)
}
console.log(wrong === 0 ? 'every row: 0 wrong' : `${wrong} wrong results`)
