// Failure and lifetime: a rank that never arrives gives TIMEOUT naming rank, peer and epoch within the deadline
// and the communicator recovers; calls queue in issue order; close drains and is idempotent; destroy aborts;
// a dead worker gives WORKER_FAILED; an open communicator does not keep Node alive.
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { BARRIER_FREE_ALGORITHMS } from '../../../src/api/types.js'
import { createCpuCommunicator } from '../../../src/backends/cpu/communicator.js'
import { isLlcommError } from '../../../src/errors.js'

const TIMEOUT_MS = 1000

function inputs(ranks: number, count: number, value = 1): Float32Array[] {
  return Array.from({ length: ranks }, (_, r) => new Float32Array(count).fill(value + r))
}

for (const algorithm of [...BARRIER_FREE_ALGORITHMS, 'oneshot-barrier', 'ring'] as const) {
  test(`${algorithm}: a rank that skips a call gives TIMEOUT (rank, peer, epoch) in time, then recover() brings it back`, async () => {
    const comm = await createCpuCommunicator({ backend: 'cpu', ranks: 4, timeoutMs: TIMEOUT_MS })
    try {
      await comm.allReduce(inputs(4, 100), { algorithm }) // epochs advance before the failure
      comm.testHooks.skipNextCall(2)
      const started = performance.now()
      await assert.rejects(comm.allReduce(inputs(4, 100), { algorithm }), (e) => {
        assert.ok(isLlcommError(e, 'TIMEOUT'), String(e))
        assert.equal(typeof e.details.rank, 'number')
        assert.notEqual(e.details.rank, 2)
        assert.equal(e.details.peer, 2, `the missing rank is named: ${e.message}`)
        assert.ok((e.details.epoch as number) >= 2, 'the epoch is named')
        return true
      })
      const elapsedMs = performance.now() - started
      assert.ok(elapsedMs < TIMEOUT_MS * 10 + 2000, `timed out after ${elapsedMs} ms`)
      await comm.recover()
      for (let i = 0; i < 3; i++) {
        const out = await comm.allReduce(inputs(4, 300, i), { algorithm })
        for (const o of out) assert.ok(o.every((x) => x === 4 * i + 6))
      }
    } finally {
      await comm.close()
    }
  })
}

test('concurrent calls queue in issue order (no shared epoch sequence) and all succeed', async () => {
  const comm = await createCpuCommunicator({ backend: 'cpu', ranks: 3 })
  try {
    const calls = Array.from({ length: 12 }, (_, i) =>
      comm.allReduce(inputs(3, 50 + i, i), { algorithm: i % 2 ? 'oneshot-sentinel' : 'twoshot-atomic' }),
    )
    const bench = comm.benchmark({ algorithm: 'oneshot-ll', dtype: 'f16', count: 9, iters: 20 })
    const results = await Promise.all(calls)
    results.forEach((out, i) => {
      assert.equal(out[0].length, 50 + i)
      assert.ok(out[2].every((x) => x === 3 * i + 3))
    })
    assert.equal((await bench).wrong, 0)
  } finally {
    await comm.close()
  }
})

test('close drains queued calls, is idempotent, and later calls fail with CLOSED', async () => {
  const comm = await createCpuCommunicator({ backend: 'cpu', ranks: 2 })
  const pending = comm.allReduce(inputs(2, 1000), { algorithm: 'ring' })
  const closing = comm.close()
  await assert.rejects(comm.allReduce(inputs(2, 4)), (e) => isLlcommError(e, 'CLOSED'))
  const out = await pending
  assert.equal(out[1][0], 3)
  await closing
  await comm.close()
  await comm[Symbol.asyncDispose]()
  await assert.rejects(comm.benchmark({ algorithm: 'ring', dtype: 'f32', count: 1, iters: 1 }), (e) =>
    isLlcommError(e, 'CLOSED'),
  )
})

test('destroy aborts a call stuck waiting on a missing rank, and is idempotent', async () => {
  const comm = await createCpuCommunicator({ backend: 'cpu', ranks: 3, timeoutMs: 60_000 })
  comm.testHooks.skipNextCall(0)
  const stuck = comm.allReduce(inputs(3, 10), { algorithm: 'oneshot-ll' })
  await new Promise((r) => setTimeout(r, 50))
  const started = performance.now()
  await Promise.all([comm.destroy(), comm.destroy()])
  await assert.rejects(stuck, (e) => isLlcommError(e, 'CLOSED'))
  assert.ok(performance.now() - started < 5000)
  await comm.close()
})

test('a worker that dies gives WORKER_FAILED, and close still works', async () => {
  const comm = await createCpuCommunicator({ backend: 'cpu', ranks: 3, timeoutMs: 60_000 })
  await comm.testHooks.crashWorker(1)
  await assert.rejects(comm.allReduce(inputs(3, 10)), (e) => isLlcommError(e, 'WORKER_FAILED'))
  await comm.close()
})

test('an open communicator does not keep Node alive', () => {
  const index = fileURLToPath(new URL('../../../src/index.js', import.meta.url))
  const script = `import(${JSON.stringify(index)}).then(async (m) => {
    const comm = await m.createCommunicator({ backend: 'cpu', ranks: 3 })
    const out = await comm.allReduce([Float32Array.of(1), Float32Array.of(2), Float32Array.of(3)])
    console.log('sum', out[0][0])
  })`
  const started = performance.now()
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 20_000 })
  assert.equal(r.status, 0, r.stderr)
  assert.match(r.stdout, /sum 6/)
  assert.ok(performance.now() - started < 20_000)
})

test('after a dead worker (WORKER_FAILED), recover() starts fresh workers and the next calls are right', async () => {
  const comm = await createCpuCommunicator({ backend: 'cpu', ranks: 3 })
  try {
    await comm.testHooks.crashWorker(1)
    await assert.rejects(comm.allReduce(inputs(3, 10)), (e) => isLlcommError(e, 'WORKER_FAILED'))
    await comm.recover()
    for (let i = 0; i < 3; i++) {
      const out = await comm.allReduce(inputs(3, 100, i), { algorithm: 'oneshot-ll' })
      for (const o of out) assert.ok(o.every((x) => x === 3 * i + 3))
    }
  } finally {
    await comm.close()
  }
})
