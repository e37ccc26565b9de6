// Argument validation (backend-neutral) and its effect on a live communicator: every bad call is rejected with
// its code before anything reaches the ranks, and the communicator keeps working afterwards.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { createCpuCommunicator } from '../../src/backends/cpu/communicator.js'
import { validateAllReduceOptions, validateBenchmarkRequest, validateInputs } from '../../src/communicator/validate.js'
import { isLlcommError, type LlcommErrorCode } from '../../src/errors.js'

const AVAILABLE = ['auto', 'oneshot-ll', 'ring'] as const

function code(c: LlcommErrorCode): (e: unknown) => boolean {
  return (e) => isLlcommError(e, c)
}

test('options: defaults, and one code per kind of mistake', () => {
  assert.deepEqual(validateAllReduceOptions(undefined, AVAILABLE), {
    algorithm: 'auto',
    dtype: 'f32',
    op: 'sum',
    protocol: undefined,
    pdl: false,
    fallback: true,
    deterministic: false,
  })
  assert.equal(validateAllReduceOptions(undefined, AVAILABLE, { deterministic: true }).deterministic, true)
  assert.equal(
    validateAllReduceOptions({ deterministic: false }, AVAILABLE, { deterministic: true }).deterministic,
    false,
  )
  assert.throws(() => validateAllReduceOptions({ deterministic: 1 as never }, AVAILABLE), code('INVALID_ARGUMENT'))
  assert.throws(() => validateAllReduceOptions({ deterministic: 'yes' as never }, AVAILABLE), code('INVALID_ARGUMENT'))
  assert.throws(() => validateAllReduceOptions({ determinstic: true } as never, AVAILABLE), code('INVALID_ARGUMENT'))
  assert.throws(() => validateAllReduceOptions({ dtype: 'f64' as never }, AVAILABLE), code('UNSUPPORTED_DTYPE'))
  assert.throws(() => validateAllReduceOptions({ op: 'max' as never }, AVAILABLE), code('UNSUPPORTED_OP'))
  assert.throws(() => validateAllReduceOptions({ algorithm: 'nccl' }, AVAILABLE), code('UNSUPPORTED_ALGORITHM'))
  assert.throws(
    () => validateAllReduceOptions({ algorithm: 'bogus' as never }, AVAILABLE),
    code('UNSUPPORTED_ALGORITHM'),
  )
  assert.throws(() => validateAllReduceOptions({ protocol: 'll32' as never }, AVAILABLE), code('INVALID_ARGUMENT'))
  assert.throws(() => validateAllReduceOptions({ fallback: 'no' as never }, AVAILABLE), code('INVALID_ARGUMENT'))
  assert.throws(() => validateAllReduceOptions(7 as never, AVAILABLE), code('INVALID_ARGUMENT'))
})

test('inputs: one per rank, the typed array of the dtype, equal lengths', () => {
  assert.equal(validateInputs([new Float32Array(3), new Float32Array(3)], 2, 'f32'), 3)
  assert.equal(validateInputs([new Uint16Array(5), new Uint16Array(5)], 2, 'bf16'), 5)
  assert.throws(() => validateInputs([new Float32Array(3)], 2, 'f32'), code('INVALID_ARGUMENT'))
  assert.throws(() => validateInputs('x', 2, 'f32'), code('INVALID_ARGUMENT'))
  assert.throws(() => validateInputs([new Float32Array(3), new Float32Array(4)], 2, 'f32'), code('LENGTH_MISMATCH'))
  assert.throws(() => validateInputs([new Uint16Array(3), new Uint16Array(3)], 2, 'f32'), code('INVALID_ARGUMENT'))
  assert.throws(() => validateInputs([new Float32Array(3), new Float32Array(3)], 2, 'f16'), code('INVALID_ARGUMENT'))
  assert.throws(
    () =>
      validateInputs(
        [
          [1, 2],
          [1, 2],
        ],
        2,
        'f32',
      ),
    code('INVALID_ARGUMENT'),
  )
})

test('benchmark requests: positive counts and iterations, finite skew', () => {
  const ok = validateBenchmarkRequest({ algorithm: 'ring', dtype: 'f32', count: 4, iters: 2 }, AVAILABLE)
  assert.equal(ok.warmup, 0)
  assert.equal(ok.skewUs, 0)
  assert.throws(
    () => validateBenchmarkRequest({ algorithm: 'ring', dtype: 'f32', count: 0, iters: 2 }, AVAILABLE),
    code('INVALID_ARGUMENT'),
  )
  assert.throws(
    () => validateBenchmarkRequest({ algorithm: 'ring', dtype: 'f32', count: 4, iters: 1.5 }, AVAILABLE),
    code('INVALID_ARGUMENT'),
  )
  assert.throws(
    () => validateBenchmarkRequest({ algorithm: 'ring', dtype: 'f32', count: 4, iters: 1, skewUs: -1 }, AVAILABLE),
    code('INVALID_ARGUMENT'),
  )
})

test('a communicator rejects bad calls with their code and stays usable', async () => {
  const comm = await createCpuCommunicator({ backend: 'cpu', ranks: 3 })
  try {
    const good = [Float32Array.of(1, 2), Float32Array.of(3, 4), Float32Array.of(5, 6)]
    await assert.rejects(
      comm.allReduce([new Float32Array(2), new Float32Array(3), new Float32Array(2)]),
      code('LENGTH_MISMATCH'),
    )
    await assert.rejects(comm.allReduce(good, { dtype: 'f16' }), code('INVALID_ARGUMENT'))
    await assert.rejects(comm.allReduce(good, { algorithm: 'nccl' }), code('UNSUPPORTED_ALGORITHM'))
    await assert.rejects(comm.allReduce(good, { op: 'prod' as never }), code('UNSUPPORTED_OP'))
    await assert.rejects(comm.allReduce(good, { dtype: 'int8' as never }), code('UNSUPPORTED_DTYPE'))
    await assert.rejects(comm.allReduce(good.slice(0, 2)), code('INVALID_ARGUMENT'))
    await assert.rejects(
      comm.allReduce(good, { algorithm: 'oneshot-ll', protocol: 'll16', fallback: false }),
      code('UNSUPPORTED_ALGORITHM'),
    )
    const empty = await comm.allReduce([new Uint16Array(0), new Uint16Array(0), new Uint16Array(0)], { dtype: 'bf16' })
    assert.equal(empty.length, 3)
    assert.equal(empty[1].length, 0)
    assert.equal(empty.info.chunks, 0)
    const out = await comm.allReduce(good, { algorithm: 'oneshot-ll' })
    assert.deepEqual([...out[1]], [9, 12])
    const fallback = await comm.allReduce(good, { algorithm: 'oneshot-ll', protocol: 'll16' })
    assert.equal(fallback.info.algorithm, 'ring')
    assert.match(fallback.info.fallbackReason ?? '', /LL16/)
    assert.deepEqual([...fallback[2]], [9, 12])
    assert.deepEqual(comm.algorithms, [
      'auto',
      'oneshot-ll',
      'oneshot-sentinel',
      'twoshot-sentinel',
      'twoshot-atomic',
      'oneshot-barrier',
      'ring',
    ])
  } finally {
    await comm.close()
  }
})

test('creation options are checked', async () => {
  await assert.rejects(createCpuCommunicator({ backend: 'cpu', ranks: 0 }), code('INVALID_ARGUMENT'))
  await assert.rejects(createCpuCommunicator({ backend: 'cpu', ranks: 2, timeoutMs: -1 }), code('INVALID_ARGUMENT'))
  await assert.rejects(createCpuCommunicator({ backend: 'cpu', ranks: 2, bufferBytes: 1001 }), code('INVALID_ARGUMENT'))
  await assert.rejects(createCpuCommunicator({ backend: 'cpu', ranks: 16, bufferBytes: 256 }), code('INVALID_ARGUMENT'))
  await assert.rejects(
    createCpuCommunicator({ backend: 'cpu', ranks: 2, spinIterations: -3 }),
    code('INVALID_ARGUMENT'),
  )
})
