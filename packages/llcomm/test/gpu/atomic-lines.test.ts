// Issue 18 item 4 on the cuda backend, virtual ranks on device 0 (skipped without LLCOMM_TEST_BACKEND=cuda):
// twoshot-atomic (f32 lines) and ring (f32 partials) accumulate f16/bf16 in f32 by default, and the communicator
// option `accumulation: 'dtype'` keeps their 16-bit variants (packed 16-bit red.add, 16-bit partials).
// 1. The f32-accumulation inputs (test/support/accumulation.ts: one large term, small ones that 16-bit partial sums
//    lose): by default the exact sum rounded once, bit for bit, on 2/4/8 ranks, one launch and chunked; with
//    'dtype', within the 16-bit model (tolerance.ts numericModel(…, 'dtype')), and the ring (whose order is fixed)
//    must lose some small terms at 4 and 8 ranks: the option reached the kernels.
// 2. Random data, every dtype: within numericModel(algorithm, dtype, accumulation), bitwise identical on all ranks.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { Accumulation, AlgorithmName, Dtype, TensorArray } from '../../src/api/types.js'
import { type CudaCommunicator, createCudaCommunicator } from '../../src/backends/cuda/communicator.js'
import { countWrong, numericModel, ranksAgreeBitwise, referenceSum } from '../../src/backends/cuda/reference.js'
import { accumulationInput, expectedAccumulation } from '../support/accumulation.js'
import { makeInput, ON_GPU, REDUCED, recordCase, rng } from './gpu-harness.js'

const ALGORITHMS: readonly AlgorithmName[] = ['twoshot-atomic', 'ring']
const RANKS = REDUCED ? [2, 8] : [2, 4, 8]
const ACCUMULATIONS: readonly Accumulation[] = ['f32', 'dtype']
/** A small buffer, so that the second count is chunked (several launches) in both builds. */
const BUFFER_BYTES = 64 * 1024
const COUNTS = [1001, 100_003]

function bitsOf(a: TensorArray, count: number): number[] {
  return a instanceof Float32Array ? Array.from(new Uint32Array(a.buffer, a.byteOffset, count)) : Array.from(a)
}

async function withComm(ranks: number, accumulation: Accumulation, f: (c: CudaCommunicator) => Promise<void>) {
  const comm = await createCudaCommunicator({
    backend: 'cuda',
    devices: new Array(ranks).fill(0),
    bufferBytes: BUFFER_BYTES,
    accumulation,
  })
  try {
    assert.equal(comm.accumulation, accumulation)
    await f(comm)
  } finally {
    await comm.close()
  }
}

test('cuda: f16/bf16 accumulate in f32 in twoshot-atomic and ring by default; accumulation: dtype keeps 16-bit sums', {
  skip: !ON_GPU,
}, async () => {
  const failures: string[] = []
  for (const ranks of RANKS)
    for (const accumulation of ACCUMULATIONS)
      await withComm(ranks, accumulation, async (comm) => {
        for (const algorithm of ALGORITHMS)
          for (const dtype of ['bf16', 'f16'] as Dtype[])
            for (const count of COUNTS) {
              const seed = ranks * 7 + count + ALGORITHMS.indexOf(algorithm)
              const inputs = Array.from({ length: ranks }, (_, r) => accumulationInput(dtype, count, seed, r))
              const want = expectedAccumulation(dtype, count, seed, ranks)
              const out = await comm.allReduce(inputs, { algorithm, dtype, fallback: false })
              const got = bitsOf(out[0], count)
              let differ = 0
              for (let i = 0; i < count; i++) if (got[i] !== want[i]) differ++
              const model = numericModel(algorithm, dtype, accumulation)
              const ref = referenceSum(inputs, dtype, count)
              let wrong = 0
              for (const o of out) wrong += countWrong(o, ref, ranks, dtype, count, model)
              const disagreeAt = ranksAgreeBitwise(out, count)
              // 'dtype': twoshot-atomic adds in arrival order (the small terms may all come before the large one),
              // so only the ring, whose order is fixed, must show the 16-bit rounding; 2 ranks round once anyway.
              const mustDiffer = accumulation === 'dtype' && algorithm === 'ring' && ranks >= 4
              const passed =
                out.info.algorithm === algorithm &&
                disagreeAt < 0 &&
                wrong === 0 &&
                (accumulation === 'f32' ? differ === 0 : !mustDiffer || differ > 0)
              const name = `atomic-lines/${accumulation}/${ranks}r/${algorithm}/${dtype}/n=${count}`
              recordCase({ name, passed, differFromF32: differ, wrong, disagreeAt, chunks: out.info.chunks, model })
              if (!passed) failures.push(`${name}: ${differ} differ from the f32 sum, wrong=${wrong} at=${disagreeAt}`)
            }
      })
  assert.deepEqual(failures, [])
})

test('cuda: random data within the numeric model of each accumulation option, identical on all ranks', {
  skip: !ON_GPU,
}, async () => {
  const failures: string[] = []
  for (const ranks of RANKS)
    for (const accumulation of ACCUMULATIONS)
      await withComm(ranks, accumulation, async (comm) => {
        for (const algorithm of ALGORITHMS)
          for (const dtype of ['f32', 'bf16', 'f16'] as Dtype[])
            for (const count of [3, ...COUNTS]) {
              const random = rng(ranks * 1000 + count)
              const inputs = Array.from({ length: ranks }, (_, r) => makeInput(dtype, count, 'random', r, random))
              const out = await comm.allReduce(inputs, { algorithm, dtype, fallback: false })
              const ref = referenceSum(inputs, dtype, count)
              const model = numericModel(algorithm, dtype, accumulation)
              let wrong = 0
              for (const o of out) wrong += countWrong(o, ref, ranks, dtype, count, model)
              const disagreeAt = ranksAgreeBitwise(out, count)
              const passed = wrong === 0 && disagreeAt < 0 && out.info.algorithm === algorithm
              const name = `atomic-lines/random/${accumulation}/${ranks}r/${algorithm}/${dtype}/n=${count}`
              recordCase({ name, passed, wrong, disagreeAt, model, chunks: out.info.chunks })
              if (!passed) failures.push(`${name}: wrong=${wrong} disagreeAt=${disagreeAt}`)
            }
      })
  assert.deepEqual(failures, [])
})
