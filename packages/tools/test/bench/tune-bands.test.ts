import assert from 'node:assert/strict'
import { test } from 'node:test'
import { ALL_ALGORITHMS, chooseAlgorithm, type TuningEntry, type TuningTable } from 'llcomm/internal'
import {
  bandsFromWinners,
  formatTuningTable,
  mergeTuningTable,
  OPEN_ENDED_MAX_BYTES,
  tuningEntriesFromRows,
  winnersBySize,
} from '../../src/bench/tune-bands.js'
import { benchRow } from '../support/bench-rows.js'

const row = benchRow

test('winners skip wrong results, fallbacks and auto rows', () => {
  const rows = [
    row('oneshot-ll', 64, 1, { wrong: 3 }),
    row('ring', 64, 0.5, { requestedAlgorithm: 'twoshot-atomic', fallback: true }),
    row('ring', 64, 0.4, { requestedAlgorithm: 'auto' }),
    row('oneshot-sentinel', 64, 2),
    row('oneshot-barrier', 64, 3),
  ]
  assert.deepEqual(winnersBySize(rows), [{ bytes: 64, algorithm: 'oneshot-sentinel', medianUs: 2 }])
})

test('bands merge equal winners and end at log-space midpoints', () => {
  const bands = bandsFromWinners([
    { bytes: 8, algorithm: 'oneshot-ll', medianUs: 1 },
    { bytes: 64, algorithm: 'oneshot-ll', medianUs: 1 },
    { bytes: 4096, algorithm: 'oneshot-sentinel', medianUs: 1 },
    { bytes: 16384, algorithm: 'oneshot-sentinel', medianUs: 1 },
    { bytes: 1 << 20, algorithm: 'twoshot-sentinel', medianUs: 1 },
  ])
  assert.deepEqual(bands, [
    { maxBytes: 512, algorithm: 'oneshot-ll' }, // √(64·4096)
    { maxBytes: 131072, algorithm: 'oneshot-sentinel' }, // √(16384·1M)
    { maxBytes: OPEN_ENDED_MAX_BYTES, algorithm: 'twoshot-sentinel' },
  ])
  assert.deepEqual(bandsFromWinners([]), [])
})

test('entries per rank count feed chooseAlgorithm as measured', () => {
  const rows = [
    row('oneshot-ll', 8, 1),
    row('ring', 8, 2),
    row('oneshot-ll', 1024, 3),
    row('ring', 1024, 2),
    row('oneshot-ll', 8, 1, { ranks: 2 }),
    row('ring', 8, 0.5, { ranks: 2 }),
  ]
  const entries = tuningEntriesFromRows(rows)
  assert.deepEqual(entries, [
    { backend: 'cpu', ranks: 2, maxBytes: OPEN_ENDED_MAX_BYTES, algorithm: 'ring' },
    { backend: 'cpu', ranks: 4, maxBytes: 90, algorithm: 'oneshot-ll' },
    { backend: 'cpu', ranks: 4, maxBytes: OPEN_ENDED_MAX_BYTES, algorithm: 'ring' },
  ])
  const table = mergeTuningTable(
    {
      machine: 'old',
      entries: [
        { backend: 'cuda', ranks: 8, maxBytes: 100, algorithm: 'oneshot-ll' },
        { backend: 'cpu', ranks: 4, maxBytes: 5, algorithm: 'twoshot-sentinel' },
      ],
    },
    entries,
    { machine: 'here', date: '2026-01-01T00:00:00Z', commit: 'abc', command: 'llcomm tune' },
  )
  assert.equal(table.entries.length, 4) // the old cpu/4 row is replaced, the cuda row kept
  assert.equal(table.entries[3].backend, 'cuda')
  // Provenance: the kept cuda rows still name the machine that measured them; the cpu rows name this run.
  assert.deepEqual(
    table.sources?.map((x) => [x.backend, x.machine]),
    [
      ['cuda', 'old'],
      ['cpu', 'here'],
    ],
  )
  const again = mergeTuningTable(table, entries, { machine: 'third', commit: 'def' })
  assert.deepEqual(
    again.sources?.map((x) => [x.backend, x.machine, x.commit]),
    [
      ['cuda', 'old', undefined],
      ['cpu', 'third', 'def'],
    ],
  )
  const reread = JSON.parse(formatTuningTable(table))
  assert.deepEqual(reread, table)
  assert.equal(chooseAlgorithm(reread, 'cpu', 4, 64, ALL_ALGORITHMS, ['ring']), 'oneshot-ll')
  assert.equal(chooseAlgorithm(reread, 'cpu', 4, 91, ALL_ALGORITHMS, ['ring']), 'ring')
  assert.equal(chooseAlgorithm(reread, 'cpu', 3, 8, ALL_ALGORITHMS, ['oneshot-ll']), 'oneshot-ll') // nearest, ties → larger
})

test("provenance per rank count: tuning one rank count keeps the sources of the same backend's other rank counts", () => {
  const cuda = (ranks: number, algorithm: TuningEntry['algorithm']): TuningEntry => ({
    backend: 'cuda',
    ranks,
    maxBytes: OPEN_ENDED_MAX_BYTES,
    algorithm,
  })
  const previous: TuningTable = {
    machine: 'old',
    sources: [
      { backend: 'cuda', machine: 'two GPUs', ranks: [2] },
      { backend: 'cuda', machine: 'virtual, first run', ranks: [8] },
      { backend: 'cuda', machine: 'virtual, second run', ranks: [16, 32] },
      { backend: 'cpu', machine: 'cpu box' }, // no ranks: every cpu rank count of the table
    ],
    entries: [
      cuda(2, 'oneshot-ll'),
      cuda(8, 'oneshot-barrier'),
      cuda(16, 'twoshot-sentinel'),
      cuda(32, 'twoshot-sentinel'),
      { backend: 'cpu', ranks: 4, maxBytes: OPEN_ENDED_MAX_BYTES, algorithm: 'ring' },
    ],
  }
  const t = mergeTuningTable(previous, [cuda(8, 'twoshot-sentinel'), cuda(32, 'oneshot-sentinel')], {
    machine: 'h100',
    commit: 'new',
  })
  assert.deepEqual(
    t.sources?.map((x) => [x.backend, x.machine, x.ranks]),
    [
      ['cuda', 'two GPUs', [2]],
      ['cuda', 'virtual, second run', [16]],
      ['cpu', 'cpu box', undefined],
      ['cuda', 'h100', [8, 32]],
    ],
  )
  assert.deepEqual(
    t.entries.filter((e) => e.backend === 'cuda').map((e) => [e.ranks, e.algorithm]),
    [
      [2, 'oneshot-ll'],
      [8, 'twoshot-sentinel'],
      [16, 'twoshot-sentinel'],
      [32, 'oneshot-sentinel'],
    ],
  )
  // A source without ranks of a backend being tuned stands for that backend's rank counts that are kept.
  const legacy = mergeTuningTable(
    { machine: 'old', sources: [{ backend: 'cuda', machine: 'one run' }], entries: [cuda(2, 'ring'), cuda(8, 'ring')] },
    [cuda(8, 'oneshot-ll')],
    { machine: 'h100' },
  )
  assert.deepEqual(
    legacy.sources?.map((x) => [x.machine, x.ranks]),
    [
      ['one run', [2]],
      ['h100', [8]],
    ],
  )
})
