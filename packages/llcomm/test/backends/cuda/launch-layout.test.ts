// The native CUlaunchConfig / CUlaunchAttribute / extra layout that PreparedLaunch builds (no GPU: the driver is
// never called; only koffi's host memory is used).
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { type CudaDriver, type CuFunction, type CuStream, PreparedLaunch } from '../../../src/ffi/index.js'

test('config, attributes, kernelParams and extra point at the right places', () => {
  const fakeDriver = {} as CudaDriver
  const l = new PreparedLaunch(
    fakeDriver,
    1 as CuFunction,
    'k',
    { gridDimX: 12, blockDimX: 512, sharedBytes: 64 },
    { cooperative: true, pdl: true, clusterDimX: 4 },
    40,
    'extra',
  )
  try {
    l.setStream(0xabc0 as CuStream)
    l.setParams(new Uint8Array(40).fill(7))
    const { address, bytes } = l.snapshot()
    const v = new DataView(bytes.buffer)
    assert.equal(v.getUint32(0, true), 12)
    assert.equal(v.getUint32(4, true), 1)
    assert.equal(v.getUint32(12, true), 512)
    assert.equal(v.getUint32(24, true), 64)
    assert.equal(v.getBigUint64(32, true), 0xabc0n, 'hStream at offset 32')
    assert.equal(v.getBigUint64(40, true), BigInt(address + 56), 'attrs pointer')
    assert.equal(v.getUint32(48, true), 3, 'numAttrs')
    assert.equal(v.getUint32(56, true), 2, 'CU_LAUNCH_ATTRIBUTE_COOPERATIVE')
    assert.equal(v.getInt32(64, true), 1)
    assert.equal(v.getUint32(56 + 72, true), 6, 'CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION')
    assert.equal(v.getInt32(64 + 72, true), 1)
    assert.equal(v.getUint32(56 + 144, true), 4, 'CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION')
    assert.deepEqual(
      [64, 68, 72].map((o) => v.getUint32(o + 144, true)),
      [4, 1, 1],
      'clusterDim {4, 1, 1}',
    )
    assert.equal(v.getBigUint64(272, true), BigInt(address + 336), 'kernelParams[0] = &params')
    assert.equal(v.getBigUint64(280, true), 1n, 'CU_LAUNCH_PARAM_BUFFER_POINTER')
    assert.equal(v.getBigUint64(288, true), BigInt(address + 336))
    assert.equal(v.getBigUint64(296, true), 2n, 'CU_LAUNCH_PARAM_BUFFER_SIZE')
    assert.equal(v.getBigUint64(304, true), BigInt(address + 320))
    assert.equal(v.getBigUint64(312, true), 0n, 'CU_LAUNCH_PARAM_END')
    assert.equal(v.getBigUint64(320, true), 40n)
    assert.deepEqual([...bytes.slice(336, 376)], new Array(40).fill(7))
    l.setFlags({ cooperative: false, pdl: true })
    const again = new DataView(l.snapshot().bytes.buffer)
    assert.equal(again.getUint32(48, true), 1)
    assert.equal(again.getUint32(56, true), 6)
    assert.throws(() => l.setParams(new Uint8Array(8)), /40/)
  } finally {
    l.dispose()
    l.dispose()
  }
})
