// A user's worker for the call-signature tests: attaches its rank and runs ITS OWN plan (ranks may be given
// different calls on purpose), posting the output words or the typed error of every call.
import { parentPort, workerData } from 'node:worker_threads'
import type { AlgorithmChoice, Dtype, LlProtocol } from '../../../src/api/types.js'
import { attachCpuRank, type CpuRankHandle } from '../../../src/backends/cpu/rank-view.js'
import { LlcommError } from '../../../src/errors.js'
import { adversarialInput } from '../../support/adversarial.js'

export type RankStep =
  | {
      kind: 'allreduce'
      algorithm: AlgorithmChoice
      dtype: Dtype
      count: number
      seed: number
      protocol?: LlProtocol
      deterministic?: boolean
      /** Input values: the adversarial generator (default) or the f32-accumulation case (accumulationInput). */
      values?: 'adversarial' | 'accumulation'
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
  error?: { code: string; message: string; details: Record<string, unknown> }
}

/**
 * f32-accumulation input: rank 0 holds a large value, the others small ones that only survive when the sum is
 * carried in f32 (16-bit partial sums round them away): element i of rank r is (-1)^i * (r == 0 ? 256 : 0.25 + ...).
 */
export function accumulationInput(dtype: Dtype, count: number, seed: number, rank: number): Float32Array | Uint16Array {
  const f = new Float32Array(count)
  for (let i = 0; i < count; i++) {
    const sign = (i + seed) % 2 === 0 ? 1 : -1
    f[i] = rank === 0 ? sign * 256 : sign * (0.25 + ((i * 7 + rank * 3 + seed) % 4) * 0.125)
  }
  if (dtype === 'f32') return f
  const out = new Uint16Array(count)
  const bits = new Uint32Array(f.buffer)
  for (let i = 0; i < count; i++) {
    // exact conversions: every value above is exactly representable in f16 and bf16
    if (dtype === 'bf16') out[i] = bits[i] >>> 16
    else {
      const b = bits[i]
      const sign = (b >>> 16) & 0x8000
      const exp = ((b >>> 23) & 0xff) - 127 + 15
      out[i] = sign | (exp << 10) | ((b >>> 13) & 0x3ff)
    }
  }
  return out
}

const { handle, steps, barrier } = workerData as {
  handle: CpuRankHandle
  steps: RankStep[]
  barrier: SharedArrayBuffer
}
const counter = new Int32Array(barrier)
let arrivals = 0
function testBarrier(): void {
  arrivals++
  Atomics.add(counter, 0, 1)
  Atomics.notify(counter, 0)
  const target = arrivals * handle.ranks
  const deadline = Date.now() + 60_000
  for (let seen = Atomics.load(counter, 0); seen < target; seen = Atomics.load(counter, 0)) {
    if (Date.now() > deadline) throw new Error('test barrier timed out')
    Atomics.wait(counter, 0, seen, 100)
  }
}

const rank = attachCpuRank(handle)
const results: RankStepResult[] = []
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
  try {
    const options: Record<string, unknown> = { algorithm: step.algorithm, dtype: step.dtype }
    if (step.protocol !== undefined) options.protocol = step.protocol
    if (step.deterministic !== undefined) options.deterministic = step.deterministic
    const output = rank.allReduce(input, options)
    const bits =
      output instanceof Float32Array ? new Uint32Array(output.buffer, output.byteOffset, output.length) : output
    const r: RankStepResult = { bits: Array.from(bits), algorithm: output.info.algorithm }
    if (output.info.fallbackReason) r.fallbackReason = output.info.fallbackReason
    results.push(r)
  } catch (e) {
    if (!(e instanceof LlcommError)) throw e
    results.push({ error: { code: e.code, message: e.message, details: e.details } })
  }
}
rank.detach()
parentPort?.postMessage(results)
