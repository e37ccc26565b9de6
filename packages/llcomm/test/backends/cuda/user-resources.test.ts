// The device memory and pointer checks behind CudaCommunicator.allocate/upload/download/free/createStream and the
// device calls' pre-launch checks, against a fake driver (the FFI boundary) that keeps a table of allocations as
// cuMemGetAddressRange and cuPointerGetAttribute would report them. No GPU needed.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { DeviceSet, LaunchGroup } from '../../../src/backends/cuda/devices.js'
import type { DeviceAllocations } from '../../../src/backends/cuda/memory.js'
import { UserDeviceResources } from '../../../src/backends/cuda/user-resources.js'
import type { CudaDriver, CuStream, DevicePtr } from '../../../src/ffi/index.js'

interface FakeAllocation {
  base: number
  bytes: number
  device: number
}

function rig(devices: number[]) {
  const allocations: FakeAllocation[] = []
  const log: string[] = []
  let next = 0x7f0000000000
  let current = -1
  let pendingPolls = 0
  const groups = [...new Set(devices)].map((ordinal, index) => ({ ordinal, index, context: ordinal + 100 }))
  const find = (p: number) => allocations.find((a) => p >= a.base && p < a.base + a.bytes)
  const driver = {
    pointerDeviceOrdinal: (p: number) => {
      const a = find(p)
      if (!a) throw new Error('CUDA_ERROR_INVALID_VALUE')
      return a.device
    },
    addressRange: (p: number) => {
      const a = find(p)
      if (!a) throw new Error('CUDA_ERROR_INVALID_VALUE')
      return { base: a.base, bytes: a.bytes }
    },
    copyHtoD: (dst: number, _src: ArrayBufferView, bytes: number) => log.push(`htod ${dst.toString(16)} ${bytes}`),
    copyHtoDAsync: (dst: number, _src: ArrayBufferView, bytes: number, s: number) =>
      log.push(`htod-async ${dst.toString(16)} ${bytes} on ${s}`),
    copyDtoH: (_dst: ArrayBufferView, src: number, bytes: number) => log.push(`dtoh ${src.toString(16)} ${bytes}`),
    copyDtoHAsync: (_dst: ArrayBufferView, src: number, bytes: number, s: number) =>
      log.push(`dtoh-async ${src.toString(16)} ${bytes} on ${s}`),
    contextSynchronize: () => log.push(`sync device ${current}`),
    streamCreate: () => 0x5000 + log.push(`stream on ${current}`),
    streamDestroy: (s: number) => log.push(`destroy stream ${s}`),
    streamQuery: () => pendingPolls-- <= 0,
  } as unknown as CudaDriver
  const deviceSet = {
    groups,
    rankGroup: devices.map((d) => groups.findIndex((g) => g.ordinal === d)),
    use: (g: LaunchGroup) => {
      current = g.ordinal
    },
  } as unknown as DeviceSet
  const allocs = {
    alloc: (context: number, bytes: number) => {
      const base = next
      next += 1 << 20
      allocations.push({ base, bytes: Math.max(256, Math.ceil(bytes / 256) * 256), device: context - 100 })
      return base as DevicePtr
    },
    release: (p: number) => {
      allocations.splice(
        allocations.findIndex((a) => a.base === p),
        1,
      )
      log.push(`free ${p.toString(16)}`)
    },
  } as unknown as DeviceAllocations
  const user = new UserDeviceResources(driver, deviceSet, allocs)
  /** Memory another library allocated on `device` (visible to the driver, unknown to llcomm). */
  const foreign = (device: number, bytes: number) => {
    const base = next
    next += 1 << 20
    allocations.push({ base, bytes, device })
    return base as DevicePtr
  }
  return {
    user,
    log,
    allocations,
    foreign,
    setPendingPolls: (n: number) => {
      pendingPolls = n
    },
  }
}

test('allocate: on the rank’s device, positive sizes only, ranks in range; free only what it handed out', () => {
  const { user, allocations } = rig([0, 1])
  const p = user.allocate(1, 1000, 2)
  assert.equal(allocations.find((a) => a.base === p)?.device, 1)
  assert.throws(() => user.allocate(2, 16, 2), { code: 'INVALID_ARGUMENT' })
  assert.throws(() => user.allocate(-1, 16, 2), { code: 'INVALID_ARGUMENT' })
  assert.throws(() => user.allocate(0, 0, 2), { code: 'INVALID_ARGUMENT' })
  assert.throws(() => user.allocate(0, 1.5, 2), { code: 'INVALID_ARGUMENT' })
  user.free(p)
  assert.throws(() => user.free(p), { code: 'INVALID_ARGUMENT' }, 'a second free is refused, not passed to the driver')
})

test('upload/download: bounded by the allocation, synchronous without a stream, ordered on one with it', () => {
  const { user, log } = rig([0, 0])
  const p = user.allocate(0, 64, 2)
  user.upload(p, new Float32Array(16))
  assert.deepEqual(log.slice(-2), [`htod ${p.toString(16)} 64`, 'sync device 0'])
  assert.throws(() => user.upload(p, new Float32Array(17)), /does not fit the 64 bytes/)
  const s = user.createStream(1, 2)
  user.download(p, new Uint16Array(32), s)
  assert.equal(log.at(-1), `dtoh-async ${p.toString(16)} 64 on ${s}`)
  assert.throws(() => user.download(p, 'not an array' as unknown as Float32Array), { code: 'INVALID_ARGUMENT' })
})

test('device-call pointer checks: wrong device, too small from the pointer, unknown memory', () => {
  const { user, foreign } = rig([0, 1])
  const mine = user.allocate(0, 4096, 2)
  user.checkDevicePointer(mine, 0, 4096, 'input')
  assert.throws(() => user.checkDevicePointer(mine, 0, 4097, 'input'), /needs 4097 bytes, its allocation holds 4096/)
  assert.throws(() => user.checkDevicePointer(mine, 1, 16, 'output'), /is on device 0, rank 1 is on device 1/)
  const theirs = foreign(1, 8192)
  user.checkDevicePointer(theirs, 1, 8192, 'input')
  // A pointer inside another library's allocation: the capacity counts from the pointer, not the base.
  const inner = (theirs + 4096) as DevicePtr
  user.checkDevicePointer(inner, 1, 4096, 'input')
  assert.throws(() => user.checkDevicePointer(inner, 1, 4097, 'input'), { code: 'INVALID_ARGUMENT' })
  assert.throws(
    () => user.checkDevicePointer(0x1234 as DevicePtr, 0, 16, 'input'),
    /not device memory the driver knows/,
  )
})

test('synchronize polls without blocking and reports a stream that never finishes as TIMEOUT', async () => {
  const { user, setPendingPolls } = rig([0])
  const s = user.createStream(0, 1)
  setPendingPolls(500)
  await user.synchronize(s, 10_000)
  setPendingPolls(Number.POSITIVE_INFINITY)
  const started = performance.now()
  await assert.rejects(user.synchronize(s, 1, 20), { code: 'TIMEOUT' })
  assert.ok(performance.now() - started < 5_000)
})

test('releaseAll destroys the streams and frees the memory it handed out, newest first', () => {
  const { user, log } = rig([0, 1])
  const a = user.allocate(0, 16, 2)
  const b = user.allocate(1, 16, 2)
  const s0 = user.createStream(0, 2) as CuStream
  user.releaseAll()
  const tail = log.slice(-3)
  assert.deepEqual(tail, [`destroy stream ${s0}`, `free ${b.toString(16)}`, `free ${a.toString(16)}`])
  const before = log.length
  user.releaseAll() // idempotent: nothing left to release
  assert.equal(log.length, before)
})
