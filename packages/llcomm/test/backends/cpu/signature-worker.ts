// A user's worker for the call-signature tests: attaches its rank and runs ITS OWN plan (ranks may be given
// different calls on purpose), posting the output words or the typed error of every call.
import { parentPort, workerData } from 'node:worker_threads'
import type { AlgorithmChoice, Dtype, LlProtocol } from '../../../src/api/types.js'
import { attachCpuRank, type CpuRankHandle } from '../../../src/backends/cpu/rank-view.js'
import { LlcommError } from '../../../src/errors.js'
import { adversarialInput } from '../../support/adversarial.js'
import { makeTestBarrier } from '../../support/test-barrier.js'
import { accumulationInput } from './rank-plans.js'

export type RankStep =
  | {
      kind: 'allreduce'
      algorithm: AlgorithmChoice
      dtype: Dtype
      count: number
      seed: number
      protocol?: LlProtocol
      deterministic?: boolean
      fallback?: boolean
      /** Input values: the adversarial generator (default) or the f32-accumulation case (accumulationInput). */
      values?: 'adversarial' | 'accumulation'
      /** Keep this output as the rank's reference bits (the determinism matrix: oneshot-barrier's). */
      reference?: boolean
      /** Count the elements whose bits differ from the reference (result.diffs) and post no bits. */
      compare?: boolean
      /** Sleep this long before the call (an arrival order the test chooses instead of the scheduler's). */
      delayMs?: number
      /** Pass options this rank refuses (dtype 'f64': UNSUPPORTED_DTYPE before anything runs). */
      refused?: boolean
    }
  /** Every rank arrives at a test barrier, resets its rank, arrives again (recovery after a failed call). */
  | { kind: 'reset' }
  /** Does nothing (a rank that never makes this call). */
  | { kind: 'skip' }

export interface RankStepResult {
  /** The output's raw bits (Float32Array bits or 16-bit lanes). */
  bits?: number[]
  algorithm?: string
  fallbackReason?: string
  /** Wall time of the call in this rank, ms. */
  ms?: number
  /** compare: elements whose bits differ from the reference, and the first of them. */
  diffs?: number
  firstDiff?: number
  error?: { code: string; message: string; details: Record<string, unknown> }
}

const { handle, steps, barrier } = workerData as {
  handle: CpuRankHandle
  steps: RankStep[]
  barrier: SharedArrayBuffer
}
const testBarrier = makeTestBarrier(barrier, handle.ranks, 60_000)

const rank = attachCpuRank(handle)
const results: RankStepResult[] = []
let referenceBits: Uint32Array | Uint16Array = new Uint32Array(0)
for (const step of steps) {
  if (step.kind === 'reset') {
    testBarrier()
    rank.reset()
    testBarrier()
    results.push({})
    continue
  }
  if (step.kind === 'skip') {
    results.push({})
    continue
  }
  const input =
    step.values === 'accumulation'
      ? accumulationInput(step.dtype, step.count, step.seed, rank.rank)
      : adversarialInput(step.dtype, step.count, step.seed, rank.rank)
  if (step.delayMs) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, step.delayMs)
  const t0 = performance.now()
  try {
    const options: Record<string, unknown> = { algorithm: step.algorithm, dtype: step.dtype }
    if (step.protocol !== undefined) options.protocol = step.protocol
    if (step.deterministic !== undefined) options.deterministic = step.deterministic
    if (step.fallback !== undefined) options.fallback = step.fallback
    if (step.refused) options.dtype = 'f64'
    const output = rank.allReduce(input, options)
    const bits =
      output instanceof Float32Array ? new Uint32Array(output.buffer, output.byteOffset, output.length) : output
    if (step.reference) referenceBits = bits.slice()
    const r: RankStepResult = { algorithm: output.info.algorithm }
    if (step.compare) {
      let diffs = 0
      let firstDiff = -1
      for (let i = 0; i < bits.length; i++) {
        if (bits[i] !== referenceBits[i] || bits.length !== referenceBits.length) {
          if (diffs === 0) firstDiff = i
          diffs++
        }
      }
      r.diffs = diffs
      r.firstDiff = firstDiff
    } else {
      r.bits = Array.from(bits)
    }
    if (output.info.fallbackReason) r.fallbackReason = output.info.fallbackReason
    results.push(r)
  } catch (e) {
    if (!(e instanceof LlcommError)) throw e
    results.push({ error: { code: e.code, message: e.message, details: e.details }, ms: performance.now() - t0 })
  }
}
rank.detach()
parentPort?.postMessage(results)
