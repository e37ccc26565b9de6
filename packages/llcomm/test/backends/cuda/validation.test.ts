// Argument validation of the cuda backend that needs no GPU.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { validateHostInputs } from '../../../src/backends/cuda/communicator.js'
import { groupRanks, validateDeviceList } from '../../../src/backends/cuda/devices.js'
import { errorFromWord } from '../../../src/backends/cuda/error-word.js'
import { ncclUnavailableReason } from '../../../src/backends/cuda/nccl-baseline.js'
import { toolKernel } from '../../../src/backends/cuda/tool-kernels.js'
import { isLlcommError } from '../../../src/errors.js'

test('device lists: empty, too many, negative, non-integer, out of range', () => {
  const code = (f: () => unknown) => {
    try {
      f()
    } catch (e) {
      return isLlcommError(e) ? e.code : 'other'
    }
    return 'none'
  }
  assert.equal(
    code(() => validateDeviceList([])),
    'INVALID_ARGUMENT',
  )
  assert.equal(
    code(() => validateDeviceList(undefined)),
    'INVALID_ARGUMENT',
  )
  assert.equal(
    code(() => validateDeviceList(new Array(65).fill(0))),
    'INVALID_ARGUMENT',
  )
  assert.equal(
    code(() => validateDeviceList([0, -1])),
    'INVALID_ARGUMENT',
  )
  assert.equal(
    code(() => validateDeviceList([0, 1.5])),
    'INVALID_ARGUMENT',
  )
  assert.equal(
    code(() => validateDeviceList([0, 2], 2)),
    'NO_DEVICE',
  )
  assert.deepEqual(validateDeviceList(new Array(64).fill(0), 1).length, 64)
})

test('ranks group by device in order of first appearance (virtual ranks share a launch)', () => {
  assert.deepEqual(groupRanks([1, 0, 1, 0]), [
    { ordinal: 1, ranks: [0, 2] },
    { ordinal: 0, ranks: [1, 3] },
  ])
  assert.deepEqual(groupRanks([0, 0, 0]), [{ ordinal: 0, ranks: [0, 1, 2] }])
})

test('NCCL needs distinct GPUs, at least two', () => {
  assert.match(ncclUnavailableReason([0, 0]) ?? '', /one rank per GPU/)
  assert.match(ncclUnavailableReason([0]) ?? '', /at least 2/)
  assert.equal(ncclUnavailableReason([0, 1]), undefined)
})

test('driver-view inputs: count, types, lengths', () => {
  assert.equal(validateHostInputs([new Float32Array(3), new Float32Array(3)], 2, 'f32'), 3)
  assert.equal(validateHostInputs([new Uint16Array(5), new Uint16Array(5)], 2, 'bf16'), 5)
  const code = (f: () => unknown) => {
    try {
      f()
    } catch (e) {
      return isLlcommError(e) ? e.code : 'other'
    }
    return 'none'
  }
  assert.equal(
    code(() => validateHostInputs([new Float32Array(3)], 2, 'f32')),
    'INVALID_ARGUMENT',
  )
  assert.equal(
    code(() => validateHostInputs([new Float32Array(3), new Float32Array(4)], 2, 'f32')),
    'LENGTH_MISMATCH',
  )
  assert.equal(
    code(() => validateHostInputs([new Uint16Array(3), new Uint16Array(3)], 2, 'f32')),
    'INVALID_ARGUMENT',
  )
  assert.equal(
    code(() => validateHostInputs([new Float32Array(3), new Float32Array(3)], 2, 'f16')),
    'INVALID_ARGUMENT',
  )
  assert.equal(
    code(() => validateHostInputs([new Float32Array(3), new Float32Array(3)], 2, 'f64' as 'f32')),
    'UNSUPPORTED_DTYPE',
  )
})

test('the device error word becomes TIMEOUT naming rank, peer and epoch', () => {
  assert.equal(errorFromWord(new Uint32Array(8)), undefined)
  const e = errorFromWord(Uint32Array.from([1, 3, 5, 42, 2, 17, 1, 0]))
  assert.ok(isLlcommError(e, 'TIMEOUT'))
  assert.equal(e.details.rank, 3)
  assert.equal(e.details.peer, 5)
  assert.equal(e.details.epoch, 42)
  assert.match(e.message, /rank 3 timed out waiting for peer 5 at epoch 42 \(sentinel slot 17 on channel 1\)/)
  const barrier = errorFromWord(Uint32Array.from([1, 0, 0xffffffff, 7, 4, 0, 0, 0]))
  assert.equal(barrier?.details.peer, -1)
  assert.ok(isLlcommError(errorFromWord(Uint32Array.from([9, 0, 0, 0, 0, 0, 0, 0])), 'CUDA_ERROR'))
})

test('the tool kernels the host launches are in the kernel table', () => {
  assert.equal(toolKernel('llcomm_spin_ns').sourceFile, 'support/spin.cu')
  assert.equal(toolKernel('llcomm_stress_ll16').sourceFile, 'support/stress_ll16.cu')
  assert.throws(() => toolKernel('llcomm_nope'), /no tool kernel/)
})

test('createCommunicator({ backend: "cuda" }) on a machine without a usable driver fails with a typed error', async () => {
  const { createCommunicator } = await import('../../../src/create.js')
  const { cudaDriver } = await import('../../../src/ffi/index.js')
  let driverLoads = true
  try {
    cudaDriver()
  } catch {
    driverLoads = false
  }
  if (driverLoads) return // a machine with a GPU: the GPU tests cover creation there
  await assert.rejects(createCommunicator({ backend: 'cuda', devices: [0] }), (e: unknown) => {
    assert.ok(isLlcommError(e), `typed error, got ${String(e)}`)
    assert.ok(['LIBRARY_NOT_FOUND', 'CUDA_ERROR', 'NO_DEVICE'].includes(e.code), e.code)
    return true
  })
  // Bad arguments are reported before any library is touched.
  await assert.rejects(createCommunicator({ backend: 'cuda', devices: [] }), (e: unknown) =>
    isLlcommError(e, 'INVALID_ARGUMENT'),
  )
})

test('unknown or mistyped communicator options are INVALID_ARGUMENT before any library is loaded', async () => {
  const { createCudaCommunicator } = await import('../../../src/backends/cuda/communicator.js')
  const { createCommunicator } = await import('../../../src/create.js')
  for (const options of [
    { backend: 'cuda', devices: [0], bufferByte: 4096 },
    { backend: 'cuda', devices: [0], timeoutMs: -1 },
    { backend: 'cuda', devices: [0], bufferBytes: 2 ** 33 },
    { backend: 'cuda', devices: [0], deterministic: 'yes' },
    { backend: 'cuda', devices: [0], ranks: 2 },
    { backend: 'cuda', devices: [0], accumulation: 'bf16' },
    { backend: 'cuda', devices: [0], accumulation: true },
  ]) {
    await assert.rejects(createCudaCommunicator(options as never), (e) => isLlcommError(e, 'INVALID_ARGUMENT'))
    await assert.rejects(createCommunicator(options as never), (e) => isLlcommError(e, 'INVALID_ARGUMENT'))
  }
})
