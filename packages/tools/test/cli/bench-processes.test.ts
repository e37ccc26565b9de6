// `llcomm bench --processes`: the cpu sweep with one process per rank (src/bench/process-group.ts), end to end:
// a JSON document whose rows are all checked (wrong 0), the driver-view allReduce over the processes, a rank
// process that dies breaking the group with PEER_FAILED, and --processes refused on cuda.
import assert from 'node:assert/strict'
import { mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import { isLlcommError, processAlive } from 'llcomm/internal'
import { validateBenchDocument } from '../../src/bench/document.js'
import { startProcessGroup } from '../../src/bench/process-group.js'
import { runCli } from './cli-helpers.js'

test('bench --processes --ranks 3: JSON document, every row checked, exit 0', async () => {
  const json = join(mkdtempSync(join(tmpdir(), 'llcomm-bench-proc-')), 'procs.json')
  const r = await runCli(
    [
      'bench',
      '--processes',
      '--ranks',
      '3',
      '--sizes',
      '64,4K',
      '--algorithms',
      'oneshot-sentinel,ring',
      '--iters',
      '10',
      '--json',
      json,
      '--no-progress',
    ],
    120_000,
  )
  assert.equal(r.code, 0, r.stderr)
  assert.match(r.stderr, /one process per rank \(3 processes\)/)
  const doc = validateBenchDocument(JSON.parse(readFileSync(json, 'utf8')))
  assert.equal(doc.rows.length, 4)
  for (const row of doc.rows) {
    assert.equal(row.ranks, 3)
    assert.equal(row.wrong, 0, `${row.algorithm} ${row.bytes}`)
    assert.ok(row.medianUs > 0)
  }
})

test('the process group: allReduce over the processes; a dead rank process gives PEER_FAILED', async () => {
  const group = await startProcessGroup({ ranks: 3, timeoutMs: 20_000 })
  try {
    const out = await group.allReduce([0, 1, 2].map((r) => new Float32Array(100).fill(r + 1)))
    for (const o of out) assert.ok(o.every((x) => x === 6))
    const pid = group.pids[1]
    process.kill(pid, 'SIGKILL')
    await assert.rejects(group.benchmark({ algorithm: 'ring', dtype: 'f32', count: 64, iters: 1_000_000 }), (e) =>
      isLlcommError(e, 'PEER_FAILED'),
    )
  } finally {
    await group.destroy()
  }
  const pids = group.pids
  for (const pid of pids) assert.equal(processAlive(pid), false)
})

test('bench --processes on cuda is refused before anything starts', async () => {
  const r = await runCli(['bench', '--processes', '--backend', 'cuda', '--sizes', '8'])
  assert.equal(r.code, 1)
  assert.match(r.stderr, /INVALID_ARGUMENT: --processes runs the cpu backend only/)
})
