import assert from 'node:assert/strict'
import { mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import { ALL_ALGORITHMS, chooseAlgorithm, loadTuningTable } from 'llcomm/internal'
import { validateBenchDocument } from '../../src/bench/document.js'
import { runCli } from './cli-helpers.js'

test('tune --backend cpu writes a table auto can read, with the sweep saved beside it', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'llcomm-tune-cli-'))
  const out = join(dir, 'table.json')
  const sweep = join(dir, 'sweep.json')
  const r = await runCli(
    [
      'tune',
      '--backend',
      'cpu',
      '--ranks',
      '2',
      '--sizes',
      '64,4K',
      '--iters',
      '5',
      '--warmup',
      '1',
      '--out',
      out,
      '--json',
      sweep,
      '--no-progress',
    ],
    300_000,
  )
  assert.equal(r.code, 0, r.stderr)
  const table = loadTuningTable(out)
  assert.equal(table.commit, 'test-commit')
  assert.match(table.machine, /cores/)
  assert.ok(table.entries.length >= 1)
  for (const e of table.entries) {
    assert.equal(e.backend, 'cpu')
    assert.equal(e.ranks, 2)
    assert.ok(ALL_ALGORITHMS.includes(e.algorithm))
  }
  assert.equal(table.entries[table.entries.length - 1].maxBytes, Number.MAX_SAFE_INTEGER)
  // The winner at each measured size is what auto now picks there.
  const doc = validateBenchDocument(JSON.parse(readFileSync(sweep, 'utf8')))
  for (const bytes of [64, 4096]) {
    const rows = doc.rows.filter((x) => x.bytes === bytes && x.wrong === 0 && !x.fallback)
    const fastest = rows.reduce((a, b) => (b.medianUs < a.medianUs ? b : a))
    assert.equal(chooseAlgorithm(table, 'cpu', 2, bytes, ALL_ALGORITHMS, ['ring']), fastest.algorithm)
  }
  assert.match(r.stdout, /table written to/)
})
