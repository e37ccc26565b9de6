#!/usr/bin/env node
// Medians over rounds of a fused A/B (research/scripts/probe/session-fused-tail.sh): for every shape and tree the
// fused columns of scripts/bench-fused.mjs (one-shot, two-shot, split, auto) and unfused, then per tree the best
// fused column / unfused (rmsnorm: the unfused call's RMSNorm kernel alone) (the issue-21 goal is <= 0.8 at 8 ranks, batch 1-16) and each tree's two-shot / the first
// tree's. Usage: node fused-ab-table.mjs DIR LABEL... (DIR holds LABEL-rN.json).
import { readdirSync, readFileSync } from 'node:fs'

const [dir, ...labels] = process.argv.slice(2)
const cols = ['fused-oneshot', 'fused-twoshot', 'fused-split', 'fused-split-twoshot', 'fused-auto', 'unfused', 'rmsnorm']
const short = {
  'fused-oneshot': '1s',
  'fused-twoshot': '2s',
  'fused-split': 'split',
  'fused-split-twoshot': 'spl2s',
  'fused-auto': 'auto',
  unfused: 'unf',
  rmsnorm: 'rms',
}
const nBest = 4 // the fused columns: best = the fastest of them
// the column compared across trees (each tree's / the first tree's); AB_COMPARE=fused-split-twoshot etc.
const cmp = process.env.AB_COMPARE ?? 'fused-twoshot'
const med = (a) => {
  const s = [...a].sort((x, y) => x - y)
  return s[Math.floor(s.length / 2)]
}
const cells = new Map()
for (const f of readdirSync(dir).filter((f) => /-r\d+\.json$/.test(f))) {
  const label = f.replace(/-r\d+\.json$/, '')
  for (const r of JSON.parse(readFileSync(`${dir}/${f}`, 'utf8')).rows) {
    const key = `${String(r.ranks).padStart(2)} ${String(r.hidden).padStart(5)} ${String(r.rows).padStart(3)}`
    const c = cells.get(key) ?? {}
    for (const k of cols) if (k in r.us) (c[`${label} ${k}`] ??= []).push(r.us[k])
    cells.set(key, c)
  }
}
const fmt = (x) => (x === undefined ? '-' : x.toFixed(2)).padStart(6)
console.log(
  [
    'rk hidden  b',
    ...labels.map((l) => `${l}: ${cols.map((c) => short[c]).join(' ')}`.padStart(7 * cols.length + 1)),
    ...labels.map((l) => `${l} best/unf`.padStart(14)),
    ...labels.slice(1).map((l) => `${short[cmp]} ${l}/${labels[0]}`.padStart(16)),
  ].join(' | '),
)
for (const [key, c] of [...cells].sort()) {
  const m = (l, k) => (c[`${l} ${k}`] ? med(c[`${l} ${k}`]) : undefined)
  const best = (l) => Math.min(...cols.slice(0, nBest).map((k) => m(l, k) ?? Infinity))
  console.log(
    [
      key.padEnd(12),
      ...labels.map((l) => cols.map((k) => fmt(m(l, k))).join(' ').padStart(7 * cols.length + 1)),
      ...labels.map((l) => (m(l, 'unfused') ? (best(l) / m(l, 'unfused')).toFixed(3) : '-').padStart(14)),
      ...labels
        .slice(1)
        .map((l) =>
          (m(l, cmp) && m(labels[0], cmp)
            ? (m(l, cmp) / m(labels[0], cmp)).toFixed(3)
            : '-'
          ).padStart(16),
        ),
    ].join(' | '),
  )
}
