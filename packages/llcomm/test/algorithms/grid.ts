/**
 * The algorithm x dtype x length grid at one rank count, on one communicator: adversarial inputs (NaN, ±0, ±Inf,
 * subnormals, the sentinel's bits), outputs against the float64 reference within the tolerance of
 * src/dtype/tolerance.ts (N-term f32 accumulation + one rounding to the dtype), and bitwise identical on every
 * rank. The buffer is small (16 KiB per half) so that the longer messages run in many chunks.
 */
import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { type AlgorithmName, DTYPES } from '../../src/api/types.js'
import { type CpuCommunicator, createCpuCommunicator } from '../../src/backends/cpu/communicator.js'
import { adversarialInput } from '../support/adversarial.js'
import { checkAllReduce } from '../support/reference.js'

export const GRID_ALGORITHMS: readonly AlgorithmName[] = [
  'oneshot-ll',
  'oneshot-sentinel',
  'twoshot-sentinel',
  'twoshot-atomic',
  'oneshot-barrier',
  'ring',
]
export const GRID_LENGTHS = [1, 7, 64, 1000, 4097, 65537]

export function allReduceGrid(ranks: number): void {
  let comm: CpuCommunicator
  before(async () => {
    comm = await createCpuCommunicator({ backend: 'cpu', ranks, bufferBytes: 16 * 1024, timeoutMs: 20_000 })
  })
  after(async () => {
    await comm.close()
  })
  for (const algorithm of GRID_ALGORITHMS) {
    test(`${algorithm} at ${ranks} ranks: every dtype and length matches the float64 reference on every rank`, async () => {
      for (const dtype of DTYPES) {
        for (const length of GRID_LENGTHS) {
          const seed = ranks * 1000 + length
          const inputs = Array.from({ length: ranks }, (_, r) => adversarialInput(dtype, length, seed, r))
          const outputs = await comm.allReduce(inputs, { algorithm, dtype })
          assert.equal(outputs.info.algorithm, algorithm)
          assert.equal(outputs.info.fallbackReason, undefined)
          assert.ok(outputs.info.chunks >= 1)
          const problems = checkAllReduce(dtype, inputs, outputs)
          assert.deepEqual(problems, [], `${algorithm} ${dtype} length ${length} at ${ranks} ranks`)
        }
      }
    })
  }
}
