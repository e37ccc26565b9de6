import assert from 'node:assert/strict'
import { test } from 'node:test'
import { isLlcommError } from 'llcomm/internal'
import { defaultCudaDevices, openCommunicator } from '../../src/bench/open-communicator.js'
import { parseDevices, parseRankCounts, resolveSizes } from '../../src/bench/options.js'

test('default cuda devices: all GPUs, the first N, or virtual ranks on GPU 0', () => {
  assert.deepEqual(defaultCudaDevices(undefined, 8), [0, 1, 2, 3, 4, 5, 6, 7])
  assert.deepEqual(defaultCudaDevices(undefined, 1), [0, 0])
  assert.deepEqual(defaultCudaDevices(4, 8), [0, 1, 2, 3])
  assert.deepEqual(defaultCudaDevices(4, 1), [0, 0, 0, 0])
})

test('device and rank lists', () => {
  assert.deepEqual(parseDevices('0,0,1'), [0, 0, 1])
  assert.throws(
    () => parseDevices('0'),
    (e) => isLlcommError(e, 'INVALID_ARGUMENT'),
  )
  assert.throws(
    () => parseDevices('0,-1'),
    (e) => isLlcommError(e, 'INVALID_ARGUMENT'),
  )
  assert.deepEqual(parseRankCounts('8,2,4,2'), [2, 4, 8])
  assert.deepEqual(resolveSizes(undefined, '1K', '4K', { min: 8, max: 8 }), [1024, 2048, 4096])
  assert.deepEqual(resolveSizes(undefined, undefined, undefined, { min: 8, max: 32 }), [8, 16, 32])
  assert.throws(() => resolveSizes('8', '8', undefined, { min: 8, max: 8 }), /either --sizes or --min/)
})

test('conflicting backend options fail before anything opens', async () => {
  const note = () => {}
  await assert.rejects(openCommunicator({ backend: 'cpu', devices: [0, 0], note }), /--devices is for the cuda backend/)
  await assert.rejects(
    openCommunicator({ backend: 'cuda', ranks: 3, devices: [0, 0], note }),
    /disagrees with --devices/,
  )
})
