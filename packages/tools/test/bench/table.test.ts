import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { BenchRow } from '../../src/bench/document.js'
import { algorithmLabel, ratioToReference, referenceRows } from '../../src/bench/reference.js'
import { formatMicros, formatRatioTable, formatRowsTable, formatTable } from '../../src/bench/table.js'
import { benchRow } from '../support/bench-rows.js'

function row(
  algorithm: BenchRow['algorithm'],
  bytes: number,
  medianUs: number,
  extra: Partial<BenchRow> = {},
): BenchRow {
  const algbwGBs = bytes / medianUs / 1e3
  return benchRow(algorithm, bytes, medianUs, {
    p99Us: medianUs * 1.5,
    algbwGBs,
    busbwGBs: algbwGBs * 1.5,
    iters: 20,
    warmup: 5,
    ...extra,
  })
}

test('formatTable pads columns and aligns numbers right', () => {
  const t = formatTable(
    ['name', 'us'],
    [
      ['a', '1.5'],
      ['long-name', '12.25'],
    ],
    [false, true],
  )
  assert.equal(t, ['name          us', '---------  -----', 'a            1.5', 'long-name  12.25'].join('\n'))
})

test('formatMicros keeps three significant figures or more', () => {
  assert.equal(formatMicros(1.23456), '1.235')
  assert.equal(formatMicros(12.3456), '12.35')
  assert.equal(formatMicros(123.456), '123.5')
  assert.equal(formatMicros(12345.6), '12346')
})

test('reference: oneshot-barrier on cpu, the best clean nccl row on cuda', () => {
  const cpuRows = [row('oneshot-barrier', 4096, 40), row('oneshot-ll', 4096, 10)]
  const refs = referenceRows(cpuRows)
  assert.equal(ratioToReference(cpuRows[1], refs), 0.25)
  const cudaRows = [
    row('oneshot-barrier', 8, 9, { backend: 'cuda' }),
    row('nccl', 8, 12, { backend: 'cuda' }),
    row('nccl-symmetric', 8, 6, { backend: 'cuda' }),
    row('oneshot-ll', 8, 3, { backend: 'cuda' }),
  ]
  const cudaRefs = referenceRows(cudaRows)
  assert.equal(ratioToReference(cudaRows[3], cudaRefs), 0.5)
  // A fallback row is never the reference.
  const fellBack = [
    row('oneshot-barrier', 8, 1, { requestedAlgorithm: 'twoshot-atomic', fallback: true }),
    row('ring', 8, 2),
  ]
  assert.equal(ratioToReference(fellBack[1], referenceRows(fellBack)), undefined)
})

test('labels mark auto picks and fallbacks', () => {
  assert.equal(algorithmLabel(row('ring', 8, 1)), 'ring')
  assert.equal(algorithmLabel(row('ring', 8, 1, { requestedAlgorithm: 'auto' })), 'auto→ring')
  assert.equal(
    algorithmLabel(row('ring', 8, 1, { requestedAlgorithm: 'twoshot-atomic', fallback: true })),
    'twoshot-atomic→ring (fallback)',
  )
})

test('row and ratio tables carry every row and the side-by-side ratios', () => {
  const rows = [
    row('oneshot-barrier', 64, 20),
    row('oneshot-ll', 64, 5),
    row('oneshot-barrier', 4096, 40),
    row('oneshot-ll', 4096, 30),
  ]
  const table = formatRowsTable(rows)
  const lines = table.split('\n')
  assert.equal(lines.length, 2 + rows.length)
  assert.match(lines[0], /size\s+dtype\s+algorithm\s+median us\s+p99 us\s+algbw GB\/s\s+busbw GB\/s\s+wrong\s+vs ref/)
  assert.match(lines[3], /^\s*64\s+f32\s+oneshot-ll\s+5\.000\s+7\.500\s+.*0\s+0\.25x$/)
  const ratios = formatRatioTable(rows).split('\n')
  assert.equal(ratios.length, 4)
  assert.match(ratios[2], /64\s+oneshot-barrier 20\.00us\s+20\.00 \(1\.00x\)\s+5\.000 \(0\.25x\)/)
  assert.match(ratios[3], /4K\s+oneshot-barrier 40\.00us\s+40\.00 \(1\.00x\)\s+30\.00 \(0\.75x\)/)
})

test('skew wait and pdl columns appear only when present', () => {
  assert.doesNotMatch(formatRowsTable([row('ring', 8, 1)]), /skew|pdl/)
  assert.match(
    formatRowsTable([row('ring', 8, 1, { skewUs: 5, skewWaitUs: 2.5, pdl: true })]).split('\n')[0],
    /pdl.*skew wait us/,
  )
})
