// Failure, poisoning and recovery of the per-rank view (issue 18 item 2, issue 19 item 7): a failed call poisons
// the channel (no rank's current or later call returns data), recover() on every rank needs no barrier of the
// user's own, close() wakes a rank blocked in a call with CLOSED at once, and a worker that dies is reported to its
// peers as WORKER_FAILED, after which a new worker attaches its rank and recovers with the others.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { Worker } from 'node:worker_threads'
import { type CpuCommunicator, createCpuCommunicator } from '../../../src/backends/cpu/communicator.js'
import type { CpuRankHandle } from '../../../src/backends/cpu/rank-view.js'
import { adversarialInput } from '../../support/adversarial.js'
import { checkAllReduce } from '../../support/reference.js'
import type { Step, StepResult } from './rank-view-worker.js'

const WORKER = new URL('./rank-view-worker.js', import.meta.url)

function runWorker(
  handle: CpuRankHandle,
  steps: Step[],
  barrier = new SharedArrayBuffer(4),
  attached?: Int32Array,
): Promise<StepResult[]> {
  return new Promise<StepResult[]>((resolve, reject) => {
    const w = new Worker(WORKER, { workerData: { handle, steps, barrier, attached } })
    w.once('message', resolve)
    w.once('error', reject)
  })
}

async function withComm<R>(ranks: number, timeoutMs: number, body: (comm: CpuCommunicator) => Promise<R>): Promise<R> {
  const comm = await createCpuCommunicator({ backend: 'cpu', ranks, timeoutMs, bufferBytes: 8192 })
  try {
    return await body(comm)
  } finally {
    await comm.close()
  }
}

const call = (seed: number, count = 40 + (seed % 7) * 13): Extract<Step, { kind: 'allreduce' }> => ({
  kind: 'allreduce',
  algorithm: (['oneshot-ll', 'oneshot-sentinel', 'twoshot-sentinel', 'ring'] as const)[seed % 4],
  dtype: 'f32',
  count,
  seed,
})

function assertCorrect(results: StepResult[][], index: number, seed: number, count: number): void {
  const inputs = results.map((_, r) => adversarialInput('f32', count, seed, r))
  const outputs = results.map((x) => {
    assert.equal(x[index].error, undefined, `call ${index}: ${JSON.stringify(x[index].error)}`)
    return x[index].output as Float32Array
  })
  assert.deepEqual(checkAllReduce('f32', inputs, outputs), [], `call ${index}`)
}

test('after a failed call, recover() on every rank with no barrier of the user: the next 20 calls are all right', async () => {
  const ranks = 4
  const steps: Step[] = [call(1), { ...call(2), skipRank: 1 }, { kind: 'recover' }]
  for (let i = 0; i < 20; i++) steps.push(call(10 + i))
  const results = await withComm(ranks, 500, (comm) => Promise.all(comm.rankHandles().map((h) => runWorker(h, steps))))
  assertCorrect(results, 0, 1, call(1).count)
  for (const r of [0, 2, 3]) assert.equal(results[r][1].error?.code, 'TIMEOUT', `rank ${r} of the failed call`)
  for (let r = 0; r < ranks; r++) assert.equal(results[r][2].error, undefined, `recover on rank ${r}`)
  for (let i = 0; i < 20; i++) assertCorrect(results, 3 + i, 10 + i, call(10 + i).count)
})

test('a failed call poisons: peers stop at once, and a later call of any rank returns no data until recover()', async () => {
  const ranks = 3
  const timeoutMs = 1500
  // Rank 2 skips call 1; rank 2 then runs ahead into call 2, and ranks 0, 1 reach call 2 after their timeout.
  const steps: Step[] = [call(1), { ...call(2), skipRank: 2 }, call(3), { kind: 'recover' }, call(4)]
  const results = await withComm(ranks, timeoutMs, (comm) =>
    Promise.all(comm.rankHandles().map((h) => runWorker(h, steps))),
  )
  // Call 1 (index 1): the first rank to fail poisons; the other stops at once instead of at its own deadline. Rank 2
  // runs call 2 at call 1's epoch, so its published call signature differs: MISMATCH (a TIMEOUT when ranks 0 and 1
  // give up before rank 2 publishes).
  const failed = [0, 1].map((r) => results[r][1])
  for (const f of failed) assert.ok(['MISMATCH', 'TIMEOUT'].includes(String(f.error?.code)), JSON.stringify(f.error))
  // Call 2 (index 2): no rank returns data, rank 2's wait (begun before the failure) included.
  for (let r = 0; r < ranks; r++) {
    assert.equal(results[r][2].output, undefined, `rank ${r} returned data from a poisoned call`)
    assert.ok(results[r][2].error, `rank ${r}`)
  }
  // Ranks 0 and 1 reach call 2 poisoned: refused at entry, not after a wait.
  for (const r of [0, 1]) assert.ok((results[r][2].elapsedMs ?? 0) < timeoutMs / 3, `rank ${r}`)
  for (let r = 0; r < ranks; r++) assert.equal(results[r][3].error, undefined)
  assertCorrect(results, 4, 4, call(4).count)
})

for (const how of ['close', 'destroy'] as const) {
  test(`${how}() wakes a rank blocked in a call: CLOSED at once, not TIMEOUT at its deadline`, async () => {
    const comm = await createCpuCommunicator({ backend: 'cpu', ranks: 2, timeoutMs: 20_000, bufferBytes: 8192 })
    const [h0] = comm.rankHandles()
    const started = performance.now()
    const attached = new Int32Array(new SharedArrayBuffer(4))
    const pending = runWorker(h0, [call(1)], undefined, attached) // rank 1 never calls
    // Closed only once the worker holds its rank (on a loaded machine a worker can take longer than any fixed
    // delay to start; closed before it attached, its attach throws CLOSED instead of its call), then after a
    // moment in which its call begins and blocks (a call that begins after the close also ends with CLOSED).
    for (const deadline = performance.now() + 20_000; Atomics.load(attached, 0) === 0 && performance.now() < deadline; )
      await new Promise((resolve) => setTimeout(resolve, 10))
    assert.equal(Atomics.load(attached, 0), 1, 'the worker attached its rank within 20 s')
    await new Promise((resolve) => setTimeout(resolve, 300))
    await comm[how]()
    const [result] = await pending
    const elapsedMs = performance.now() - started
    assert.equal(result.error?.code, 'CLOSED')
    assert.ok(elapsedMs < 5000, `the blocked rank returned after ${elapsedMs} ms`)
  })
}

test('a worker that dies: its peers get WORKER_FAILED at once, a new worker attaches the rank and all recover', async () => {
  const ranks = 3
  const timeoutMs = 8000
  await withComm(ranks, timeoutMs, async (comm) => {
    const handles = comm.rankHandles()
    const peerSteps: Step[] = [call(1), call(2), { kind: 'recover' }, call(3), call(4)]
    const peers = [0, 1].map((r) => runWorker(handles[r], peerSteps))
    // Rank 2 does call 1, then dies before call 2 (its worker throws: an uncaught exception).
    const dying = runWorker(handles[2], [call(1), { kind: 'die', rank: 2 }])
    await assert.rejects(dying, /rank 2 dies/)
    // The rank is free again: a new worker attaches it and joins the recovery.
    const replacement = runWorker(handles[2], [{ kind: 'recover' }, call(3), call(4)])
    const [r0, r1] = await Promise.all(peers)
    const r2 = await replacement
    for (const r of [r0, r1]) {
      assert.equal(r[1].error?.code, 'WORKER_FAILED', JSON.stringify(r[1].error))
      assert.equal(r[1].error?.details.failedRank, 2)
      assert.ok((r[1].elapsedMs ?? 0) < timeoutMs / 2, `stopped after ${r[1].elapsedMs} ms`)
      assert.equal(r[2].error, undefined, 'recover')
    }
    assert.equal(r2[0].error, undefined, 'recover on the new worker')
    const results = [
      [r0[3], r0[4]],
      [r1[3], r1[4]],
      [r2[1], r2[2]],
    ]
    assertCorrect(results, 0, 3, call(3).count)
    assertCorrect(results, 1, 4, call(4).count)
  })
})

test('driver view: a failed call poisons queued and later calls until recover(); recover() needs no barrier', async () => {
  const comm = await createCpuCommunicator({ backend: 'cpu', ranks: 3, timeoutMs: 500 })
  try {
    const ones = (v: number) => Array.from({ length: 3 }, () => new Float32Array(64).fill(v))
    comm.testHooks.skipNextCall(1)
    const failing = comm.allReduce(ones(1))
    const queued = comm.allReduce(ones(2))
    await assert.rejects(failing, (e: { code?: string }) => e.code === 'TIMEOUT')
    await assert.rejects(queued, (e: { code?: string; details?: { poisonedBy?: unknown } }) => {
      assert.equal(e.code, 'TIMEOUT')
      assert.ok(e.details?.poisonedBy, 'named as poisoned by the first failure')
      return true
    })
    await assert.rejects(comm.allReduce(ones(3)), (e: { code?: string }) => e.code === 'TIMEOUT')
    await comm.recover()
    const out = await comm.allReduce(ones(4))
    for (const o of out) assert.ok(o.every((x) => x === 12))
  } finally {
    await comm.close()
  }
})
