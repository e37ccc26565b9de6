// The CPU backend at its edges (issue 19 items 3-6): Node flags the workers refuse, memory that rank handles,
// large calls and dropped communicators keep, inputs changed after the call, and errors that are not LlcommErrors.
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { createCpuCommunicator } from '../../../src/backends/cpu/communicator.js'
import { attachCpuRank } from '../../../src/backends/cpu/rank-view.js'
import { createCommunicator } from '../../../src/create.js'
import { isLlcommError, type LlcommErrorCode } from '../../../src/errors.js'

const COMMUNICATOR_JS = fileURLToPath(new URL('../../../src/backends/cpu/communicator.js', import.meta.url))

function code(c: LlcommErrorCode): (e: unknown) => boolean {
  return (e) => {
    assert.ok(isLlcommError(e), `not an LlcommError: ${String(e)}`)
    assert.equal(e.code, c, e.message)
    return true
  }
}

function runNode(flags: string[], body: string): { status: number | null; stdout: string; stderr: string } {
  const dir = mkdtempSync(join(tmpdir(), 'llcomm-edges-'))
  const file = join(dir, 'child.mjs')
  writeFileSync(file, `import { createCpuCommunicator } from ${JSON.stringify(COMMUNICATOR_JS)}\n${body}\n`)
  const r = spawnSync(process.execPath, [...flags, file], { encoding: 'utf8', timeout: 60_000 })
  return { status: r.status, stdout: r.stdout, stderr: r.stderr }
}

test('workers start under Node flags that worker threads refuse (those are dropped, the rest kept)', () => {
  const r = runNode(
    ['--max-old-space-size=4096', '--expose-gc', '--stack-size=2000', '--title=llcomm-test', '--no-warnings'],
    `const comm = await createCpuCommunicator({ backend: 'cpu', ranks: 2 })
     const out = await comm.allReduce([Float32Array.of(1, 2), Float32Array.of(3, 4)])
     console.log(JSON.stringify([...out[1]]))
     await comm.close()`,
  )
  assert.equal(r.status, 0, r.stderr)
  assert.equal(r.stdout.trim(), '[4,6]')
})

test('rank handles share one channel: no copy per rankHandles() call', async () => {
  const comm = await createCpuCommunicator({ backend: 'cpu', ranks: 2 })
  try {
    const first = comm.rankHandles()
    for (let i = 0; i < 50; i++) {
      const again = comm.rankHandles()
      assert.equal(again[0].channel, first[0].channel)
      assert.equal(again[1].channel, first[0].channel)
    }
  } finally {
    await comm.close()
  }
})

test('the data region is bounded (large calls run in slices, still right) and close() releases it', async () => {
  const boundWords = 1000
  const comm = await createCpuCommunicator({ backend: 'cpu', ranks: 3, testDataRegionMaxWords: boundWords })
  const count = 10_007
  const inputs = Array.from({ length: 3 }, (_, r) => Float32Array.from({ length: count }, (_, i) => (i % 97) + r))
  const out = await comm.allReduce(inputs, { algorithm: 'twoshot-sentinel' })
  for (let i = 0; i < count; i++) assert.equal(out[2][i], 3 * (i % 97) + 3, `element ${i}`)
  const bf = Array.from({ length: 3 }, () => new Uint16Array(2 * boundWords + 3).fill(0x3f80)) // bf16 1.0
  const outBf = await comm.allReduce(bf, { dtype: 'bf16' })
  assert.ok(outBf[0].every((x) => x === 0x4040)) // bf16 3.0
  assert.ok(comm.testHooks.dataRegionBytes() <= 3 * 2 * boundWords * 4)
  assert.ok(comm.testHooks.dataRegionBytes() > 0)
  await comm.close()
  assert.equal(comm.testHooks.dataRegionBytes(), 0, 'released by close() while the object is still referenced')
})

test('communicators dropped without close() leave no worker threads behind', () => {
  const r = runNode(
    ['--expose-gc'],
    `import { readFileSync } from 'node:fs'
     const threads = () => Number(/Threads:\\s+(\\d+)/.exec(readFileSync('/proc/self/status', 'utf8'))[1])
     const make = async () => {
       const comm = await createCpuCommunicator({ backend: 'cpu', ranks: 2 })
       await comm.allReduce([Float32Array.of(1), Float32Array.of(2)])
     }
     await make() // the first one starts Node's own worker machinery
     for (let i = 0; i < 5; i++) { globalThis.gc(); await new Promise((r) => setTimeout(r, 50)) }
     const before = threads()
     for (let i = 0; i < 12; i++) await make()
     let after = threads()
     for (let i = 0; i < 40 && after > before + 2; i++) {
       globalThis.gc()
       await new Promise((r) => setTimeout(r, 100))
       after = threads()
     }
     console.log(JSON.stringify({ before, after }))`,
  )
  assert.equal(r.status, 0, r.stderr)
  const { before, after } = JSON.parse(r.stdout.trim()) as { before: number; after: number }
  // 12 communicators of 2 workers each would hold 24 threads.
  assert.ok(after <= before + 2, `threads before ${before}, after dropping 12 communicators ${after}`)
})

test('inputs are read at submission: changing or detaching them afterwards does not reach the result', async () => {
  const comm = await createCpuCommunicator({ backend: 'cpu', ranks: 2 })
  try {
    const busy = comm.allReduce([new Float32Array(4096).fill(1), new Float32Array(4096).fill(1)])
    const a = Float32Array.of(1, 2, 3)
    const b = Float32Array.of(10, 20, 30)
    const pending = comm.allReduce([a, b]) // queued behind `busy`
    a.fill(100)
    structuredClone(b.buffer, { transfer: [b.buffer] }) // b is now detached
    await busy
    const out = await pending
    assert.deepEqual([...out[0]], [11, 22, 33])
  } finally {
    await comm.close()
  }
})

test('every error is an LlcommError with a fitting code', async () => {
  const comm = await createCpuCommunicator({ backend: 'cpu', ranks: 2 })
  try {
    const detached = [new Float32Array(8), new Float32Array(8)]
    for (const d of detached) structuredClone(d.buffer, { transfer: [d.buffer] })
    await assert.rejects(comm.allReduce(detached), code('INVALID_ARGUMENT'))
    await assert.rejects(
      comm.allReduce([new Float32Array(2), new Float32Array(2)], { dtype: 'bf16' }),
      code('INVALID_ARGUMENT'),
    )
    await assert.rejects(
      comm.allReduce([new Float32Array(2), new Float32Array(2)], { algoritm: 'ring' } as never),
      code('INVALID_ARGUMENT'),
    )
    await assert.rejects(
      comm.benchmark({ algorithm: 'ring', dtype: 'f32', count: 4, iters: 1, iterations: 3 } as never),
      code('INVALID_ARGUMENT'),
    )
    await assert.rejects(
      comm.allReduce([new Float32Array(2), new Float32Array(2)], { deterministic: 'yes' } as never),
      code('INVALID_ARGUMENT'),
    )
    const [h0] = comm.rankHandles()
    for (const forged of [
      { ...h0, ranks: 2 ** 40 },
      { ...h0, rank: 7 },
      { ...h0, bufferBytes: 12 },
      { ...h0, channel: new SharedArrayBuffer(8) },
      { ...h0, tuningTable: null },
      null,
    ]) {
      assert.throws(() => attachCpuRank(forged as never), code('INVALID_ARGUMENT'))
    }
  } finally {
    await comm.close()
  }
  await assert.rejects(
    createCpuCommunicator({ backend: 'cpu', ranks: 2, bufferBytes: 2 ** 33 }),
    code('INVALID_ARGUMENT'),
  )
  await assert.rejects(createCommunicator({ backend: 'cpu', ranks: 2, rank: 2 } as never), code('INVALID_ARGUMENT'))
  await assert.rejects(
    createCommunicator({ backend: 'cpu', ranks: 2, testStartEpoch: 2 } as never),
    code('INVALID_ARGUMENT'),
    'test options do not pass the public entry point',
  )
  const dir = mkdtempSync(join(tmpdir(), 'llcomm-table-'))
  writeFileSync(join(dir, 'null.json'), 'null')
  await assert.rejects(
    createCpuCommunicator({ backend: 'cpu', ranks: 2, tuningTable: join(dir, 'null.json') }),
    code('INVALID_ARGUMENT'),
  )
})

test('epochs started just below 2^32 cross the wrap with every output right', async () => {
  const comm = await createCpuCommunicator({ backend: 'cpu', ranks: 3, testStartEpoch: 2 ** 32 - 40 })
  try {
    for (let i = 0; i < 60; i++) {
      const algorithm = (['oneshot-ll', 'oneshot-sentinel', 'twoshot-sentinel', 'twoshot-atomic', 'ring'] as const)[
        i % 5
      ]
      const inputs = Array.from({ length: 3 }, (_, r) => new Float32Array(33 + i).fill(r + i))
      const out = await comm.allReduce(inputs, { algorithm })
      for (const o of out)
        assert.ok(
          o.every((x) => x === 3 * i + 3),
          `call ${i} (${algorithm})`,
        )
    }
  } finally {
    await comm.close()
  }
})
