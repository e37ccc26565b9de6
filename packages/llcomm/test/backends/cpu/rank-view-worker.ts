// A user's worker for the per-rank view tests: attaches its rank, runs a plan of steps, posts what happened.
import { parentPort, workerData } from 'node:worker_threads'
import type { AlgorithmName, Dtype, TensorArray } from '../../../src/api/types.js'
import { benchmarkDelayUs, busyWaitUs } from '../../../src/backends/cpu/benchmark-data.js'
import { attachCpuRank, type CpuRankHandle } from '../../../src/backends/cpu/rank-view.js'
import { LlcommError } from '../../../src/errors.js'
import { adversarialInput } from '../../support/adversarial.js'
import { makeTestBarrier } from '../../support/test-barrier.js'

export type Step =
  | {
      kind: 'allreduce'
      algorithm: AlgorithmName | 'auto'
      dtype: Dtype
      count: number
      seed: number
      skipRank?: number
      /** Each rank busy-waits a random 0..jitterUs (seeded by step and rank) before the call. */
      jitterUs?: number
    }
  /** Every rank arrives at a test barrier, resets its rank, arrives again (recovery after a TIMEOUT). */
  | { kind: 'reset' }
  /** recover() alone: no test barrier (the library's recovery brings the ranks together itself). */
  | { kind: 'recover' }
  /** This rank's worker dies with an uncaught exception (the others go on). */
  | { kind: 'die'; rank: number }

export interface StepResult {
  output?: TensorArray
  algorithm?: string
  error?: { code: string; details: Record<string, unknown> }
  /** How long the failed call took. */
  elapsedMs?: number
}

const { handle, steps, barrier, attached } = workerData as {
  handle: CpuRankHandle
  steps: Step[]
  barrier: SharedArrayBuffer
  /** Set to 1 (and notified) once the rank is attached, for a test that must not close the communicator before. */
  attached?: Int32Array
}
const testBarrier = makeTestBarrier(barrier, handle.ranks, 30_000)

const rank = attachCpuRank(handle)
if (attached) {
  Atomics.store(attached, 0, 1)
  Atomics.notify(attached, 0)
}
const results: StepResult[] = []
for (const step of steps) {
  if (step.kind === 'reset') {
    testBarrier()
    rank.reset()
    testBarrier()
    results.push({})
    continue
  }
  if (step.kind === 'recover') {
    try {
      rank.recover()
      results.push({})
    } catch (e) {
      if (!(e instanceof LlcommError)) throw e
      results.push({ error: { code: e.code, details: e.details } })
    }
    continue
  }
  if (step.kind === 'die') {
    if (step.rank === rank.rank) throw new Error(`rank ${rank.rank} dies (test)`)
    results.push({})
    continue
  }
  if (step.skipRank === rank.rank) {
    results.push({})
    continue
  }
  if (step.jitterUs) busyWaitUs(benchmarkDelayUs(step.jitterUs, step.seed, 0, rank.rank))
  const started = performance.now()
  try {
    const output = rank.allReduce(adversarialInput(step.dtype, step.count, step.seed, rank.rank), {
      algorithm: step.algorithm,
      dtype: step.dtype,
    })
    results.push({ output, algorithm: output.info.algorithm })
  } catch (e) {
    if (!(e instanceof LlcommError)) throw e
    results.push({ error: { code: e.code, details: e.details }, elapsedMs: performance.now() - started })
  }
}
rank.detach()
parentPort?.postMessage(results)
