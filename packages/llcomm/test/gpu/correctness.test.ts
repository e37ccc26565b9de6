// The correctness matrix on the cuda backend: virtual ranks {2, 4, 8, 16, 64} on device 0 (and distinct GPUs when
// there are several), every kernel algorithm the communicator offers, every dtype, odd lengths and a length that
// forces chunking, random and adversarial values (NaN, ±0, ±Inf, subnormals, sentinel patterns). Each output must
// match the float64 reference (reference.ts) and be bitwise identical on every rank.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { AlgorithmName, Dtype } from '../../src/api/types.js'
import { DTYPES } from '../../src/api/types.js'
import { type CudaCommunicator, createCudaCommunicator } from '../../src/backends/cuda/communicator.js'
import {
  countWrong,
  maxRelativeError,
  numericModel,
  ranksAgreeBitwise,
  referenceSum,
} from '../../src/backends/cuda/reference.js'
import { cudaDriver } from '../../src/ffi/index.js'
import { makeInput, ON_GPU, type Pattern, REDUCED, recordCase, rng } from './gpu-harness.js'

const NO_NCCL = process.env.LLCOMM_GPU_NO_NCCL === '1'
const RANKS = REDUCED ? [2, 8] : [2, 4, 8, 16, 64]
/** Small buffer so that the largest count is chunked (maxCountPerCall below it). */
const BUFFER_BYTES = 64 * 1024
const COUNTS = REDUCED ? [1, 257, 3001] : [1, 3, 257, 4099, 40_001]
const PATTERNS: Pattern[] = ['random', 'adversarial']

async function runMatrix(comm: CudaCommunicator, label: string, seed: number, pdlToo: boolean): Promise<string[]> {
  const failures: string[] = []
  // Under compute-sanitizer the nccl baselines are left out (LLCOMM_GPU_NO_NCCL=1, scripts/gpu-test.sh): NCCL's own
  // initialization probes CUDA API errors (peer access already enabled, kernel images for other architectures) that
  // memcheck counts as errors, and NCCL is the baseline, not the code under test.
  const algorithms = comm.algorithms.filter(
    (a): a is AlgorithmName => a !== 'auto' && !(NO_NCCL && (a === 'nccl' || a === 'nccl-symmetric')),
  )
  for (const algorithm of algorithms) {
    for (const dtype of DTYPES as Dtype[]) {
      for (const count of COUNTS) {
        for (const pattern of PATTERNS) {
          for (const pdl of pdlToo ? [false, true] : [false]) {
            const name = `${label}/${algorithm}/${dtype}/n=${count}/${pattern}${pdl ? '/pdl' : ''}`
            const random = rng(seed++)
            const inputs = Array.from({ length: comm.size }, (_, r) => makeInput(dtype, count, pattern, r, random))
            const t0 = performance.now()
            try {
              const outs = await comm.allReduce(inputs, { algorithm, dtype, pdl, fallback: false })
              const ref = referenceSum(inputs, dtype, count)
              const model = numericModel(algorithm, dtype)
              let wrong = 0
              let wrongIfF32Model = 0
              for (const o of outs) {
                wrong += countWrong(o, ref, comm.size, dtype, count, model)
                wrongIfF32Model += countWrong(o, ref, comm.size, dtype, count)
              }
              const disagreeAt = ranksAgreeBitwise(outs, count)
              const passed = wrong === 0 && disagreeAt < 0 && outs.info.algorithm === algorithm
              const maxRelErr = maxRelativeError(outs[0], ref, dtype, count)
              recordCase({
                name,
                passed,
                ranks: comm.size,
                algorithm,
                dtype,
                count,
                pattern,
                pdl,
                wrong,
                wrongIfF32Model,
                model,
                maxRelErr,
                disagreeAt,
                chunks: outs.info.chunks,
                ms: performance.now() - t0,
              })
              if (!passed) failures.push(`${name}: wrong=${wrong} disagreeAt=${disagreeAt} ran=${outs.info.algorithm}`)
            } catch (e) {
              const err = e as Error & { code?: string }
              recordCase({
                name,
                passed: false,
                ranks: comm.size,
                algorithm,
                dtype,
                count,
                pattern,
                pdl,
                error: `${err.code ?? ''} ${err.message}`,
              })
              failures.push(`${name}: ${err.code ?? ''} ${err.message.split('\n')[0]}`)
              if (err.code === 'TIMEOUT') return failures // the communicator is unusable after a device timeout
            }
          }
        }
      }
    }
  }
  return failures
}

for (const ranks of RANKS) {
  test(`correctness: ${ranks} virtual ranks on device 0`, { skip: !ON_GPU }, async () => {
    const comm = await createCudaCommunicator({
      backend: 'cuda',
      devices: new Array(ranks).fill(0),
      bufferBytes: BUFFER_BYTES,
      timeoutMs: 2000,
    })
    try {
      const failures = await runMatrix(comm, `virtual${ranks}`, 1000 * ranks, ranks === 8)
      recordCase({ name: `virtual${ranks}/compile`, passed: true, ...comm.compileStats, libraries: comm.libraries })
      assert.deepEqual(failures, [], `${failures.length} failing cases:\n${failures.slice(0, 40).join('\n')}`)
    } finally {
      await comm.close()
    }
  })
}

test('correctness: distinct GPUs (one rank each, with the nccl baselines)', { skip: !ON_GPU }, async (t) => {
  const n = cudaDriver().deviceCount()
  if (n < 2) {
    t.skip(`only ${n} GPU visible`)
    return
  }
  const comm = await createCudaCommunicator({
    backend: 'cuda',
    devices: Array.from({ length: n }, (_, i) => i),
    bufferBytes: BUFFER_BYTES,
    timeoutMs: 2000,
  })
  try {
    assert.ok(comm.algorithms.includes('nccl'), 'nccl is offered on distinct GPUs')
    const failures = await runMatrix(comm, `gpus${n}`, 77, true)
    assert.deepEqual(failures, [], failures.slice(0, 40).join('\n'))
  } finally {
    await comm.close()
  }
})

test('close() is idempotent and a closed communicator refuses calls', { skip: !ON_GPU }, async () => {
  const comm = await createCudaCommunicator({ backend: 'cuda', devices: [0, 0] })
  await comm.close()
  await comm.close()
  await comm.destroy()
  await assert.rejects(
    comm.allReduce([new Float32Array(4), new Float32Array(4)]),
    (e: Error & { code?: string }) => e.code === 'CLOSED',
  )
  recordCase({ name: 'lifecycle/close-idempotent', passed: true })
})
