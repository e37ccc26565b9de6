// The per-rank view: ranks in the user's own workers (attachCpuRank) give the same results as the driver view,
// on a channel of their own; a rank that does not arrive makes its peers throw TIMEOUT, and reset() on every rank
// recovers; a rank can be attached once at a time (BUSY); closing the communicator closes its rank handles.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { Worker } from 'node:worker_threads'
import type { TensorArray } from '../../../src/api/types.js'
import { createCpuCommunicator } from '../../../src/backends/cpu/communicator.js'
import { attachCpuRank } from '../../../src/backends/cpu/rank-view.js'
import { isLlcommError } from '../../../src/errors.js'
import { adversarialInput } from '../../support/adversarial.js'
import { SeededRandom } from '../../support/prng.js'
import { checkAllReduce } from '../../support/reference.js'
import type { Step, StepResult } from './rank-view-worker.js'

const WORKER = new URL('./rank-view-worker.js', import.meta.url)

async function runPlan(ranks: number, steps: Step[], timeoutMs = 10_000): Promise<StepResult[][]> {
  const comm = await createCpuCommunicator({ backend: 'cpu', ranks, timeoutMs, bufferBytes: 8192 })
  try {
    const barrier = new SharedArrayBuffer(4)
    return await Promise.all(
      comm.rankHandles().map(
        (handle) =>
          new Promise<StepResult[]>((resolve, reject) => {
            const w = new Worker(WORKER, { workerData: { handle, steps, barrier } })
            w.once('message', resolve)
            w.once('error', reject)
          }),
      ),
    )
  } finally {
    await comm.close()
  }
}

test('ranks in user workers: every algorithm and dtype matches the reference, bitwise equal across ranks', async () => {
  const ranks = 3
  const steps: Step[] = []
  for (const algorithm of [
    'oneshot-ll',
    'oneshot-sentinel',
    'twoshot-sentinel',
    'twoshot-atomic',
    'oneshot-barrier',
    'ring',
    'auto',
  ] as const) {
    for (const dtype of ['f32', 'f16', 'bf16'] as const) {
      steps.push({ kind: 'allreduce', algorithm, dtype, count: 3001, seed: steps.length })
    }
  }
  const results = await runPlan(ranks, steps)
  steps.forEach((step, i) => {
    if (step.kind !== 'allreduce') return
    const inputs = Array.from({ length: ranks }, (_, r) => adversarialInput(step.dtype, step.count, step.seed, r))
    const outputs = results.map((perRank) => {
      const o = perRank[i].output
      assert.ok(o, `step ${i}: ${JSON.stringify(perRank[i].error)}`)
      return o
    })
    assert.deepEqual(checkAllReduce(step.dtype, inputs, outputs), [], `${step.algorithm} ${step.dtype}`)
  })
})

test('mixed algorithms, dtypes and shapes back to back with random per-rank delays (epochs shared across algorithms)', async () => {
  const ranks = 4
  const rng = new SeededRandom(77)
  const algorithms = [
    'oneshot-ll',
    'oneshot-sentinel',
    'twoshot-sentinel',
    'twoshot-atomic',
    'oneshot-barrier',
    'ring',
  ] as const
  const dtypes = ['f32', 'f16', 'bf16'] as const
  const steps: Step[] = Array.from({ length: 400 }, (_, i) => ({
    kind: 'allreduce' as const,
    algorithm: algorithms[rng.nextU32() % algorithms.length],
    dtype: dtypes[rng.nextU32() % dtypes.length],
    count: 1 + (rng.nextU32() % (rng.next() < 0.5 ? 5 : 3000)), // often fewer elements than ranks: empty owners
    seed: 1000 + i,
    jitterUs: 200,
  }))
  const results = await runPlan(ranks, steps)
  steps.forEach((step, i) => {
    if (step.kind !== 'allreduce') return
    const inputs = Array.from({ length: ranks }, (_, r) => adversarialInput(step.dtype, step.count, step.seed, r))
    const outputs = results.map((perRank) => perRank[i].output as TensorArray)
    assert.deepEqual(
      checkAllReduce(step.dtype, inputs, outputs),
      [],
      `step ${i}: ${step.algorithm} ${step.dtype} ${step.count}`,
    )
  })
})

test('a rank that skips a call: peers throw TIMEOUT naming it; reset() on every rank recovers', async () => {
  const steps: Step[] = [
    { kind: 'allreduce', algorithm: 'oneshot-sentinel', dtype: 'f32', count: 50, seed: 1 },
    { kind: 'allreduce', algorithm: 'oneshot-sentinel', dtype: 'f32', count: 50, seed: 2, skipRank: 1 },
    { kind: 'reset' },
    { kind: 'allreduce', algorithm: 'oneshot-sentinel', dtype: 'f32', count: 50, seed: 3 },
  ]
  const results = await runPlan(3, steps, 1000)
  for (const r of [0, 2]) {
    const e = results[r][1].error
    assert.equal(e?.code, 'TIMEOUT')
    assert.equal(e?.details.rank, r)
    assert.equal(e?.details.peer, 1)
    assert.equal(e?.details.epoch, 2)
  }
  const inputs = [0, 1, 2].map((r) => adversarialInput('f32', 50, 3, r))
  assert.deepEqual(
    checkAllReduce(
      'f32',
      inputs,
      results.map((x) => x[3].output as Float32Array),
    ),
    [],
  )
})

test('a rank attaches once at a time (BUSY), and closing the communicator closes its handles', async () => {
  const comm = await createCpuCommunicator({ backend: 'cpu', ranks: 1 })
  const [handle] = comm.rankHandles()
  const rank = attachCpuRank(handle)
  assert.throws(
    () => attachCpuRank(handle),
    (e) => isLlcommError(e, 'BUSY'),
  )
  const out = rank.allReduce(Float32Array.of(2, 3))
  assert.deepEqual([...out], [2, 3])
  rank.detach()
  const again = attachCpuRank(handle)
  await comm.close()
  assert.throws(
    () => again.allReduce(Float32Array.of(1)),
    (e) => isLlcommError(e, 'CLOSED'),
  )
  assert.throws(
    () => comm.rankHandles(),
    (e) => isLlcommError(e, 'CLOSED'),
  )
  assert.throws(
    () => attachCpuRank({} as never),
    (e) => isLlcommError(e, 'INVALID_ARGUMENT'),
  )
})
