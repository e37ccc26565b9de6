/**
 * The GPU path through the public API only (everything from src/index.ts, nothing internal): device buffers from
 * allocate(), every dtype, in place and out of place, eager calls and a captured graph replayed 1,000 times with
 * fresh data, canServe and the fallback rules, and every typed error a device call raises before it launches.
 * Runs on virtual ranks of one GPU (LLCOMM_GPU_DEVICES, default 0,0,0) and on distinct GPUs where given.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { numericModel } from '../../src/dtype/tolerance.js'
import {
  type CudaCommunicator,
  type CuStream,
  createCommunicator,
  type DevicePtr,
  type Dtype,
  devicePtr,
  LlcommError,
  type TensorArray,
} from '../../src/index.js'
import { checkAllReduce } from '../support/reference.js'
import { makeInput, ON_GPU, recordCase, rng } from './gpu-harness.js'

const DEVICES = (process.env.LLCOMM_GPU_DEVICES ?? '0,0,0').split(',').map(Number)
const DTYPES: readonly Dtype[] = ['f32', 'f16', 'bf16']
const BYTES: Readonly<Record<Dtype, number>> = { f32: 4, f16: 2, bf16: 2 }

function hostArray(dtype: Dtype, count: number): TensorArray {
  return dtype === 'f32' ? new Float32Array(count) : new Uint16Array(count)
}

interface Rig {
  comm: CudaCommunicator
  streams: CuStream[]
  streamOfRank: (r: number) => CuStream
}

async function openRig(): Promise<Rig> {
  const comm = await createCommunicator({ backend: 'cuda', devices: DEVICES, timeoutMs: 20_000 })
  const streams = comm.launchGroupDevices.map((d) => comm.createStream(comm.devices.indexOf(d)))
  return { comm, streams, streamOfRank: (r) => streams[comm.launchGroupDevices.indexOf(comm.devices[r])] }
}

async function syncAll(rig: Rig): Promise<void> {
  for (const s of rig.streams) await rig.comm.synchronize(s)
}

function upload(rig: Rig, ptrs: readonly DevicePtr[], inputs: readonly TensorArray[]): void {
  for (const [r, p] of ptrs.entries()) rig.comm.upload(p, inputs[r], rig.streamOfRank(r))
}

function download(rig: Rig, ptrs: readonly DevicePtr[], dtype: Dtype, count: number): TensorArray[] {
  return ptrs.map((p) => {
    const out = hostArray(dtype, count)
    rig.comm.download(p, out)
    return out
  })
}

test('public device path: every dtype and algorithm, in place and out of place, against float64', {
  skip: !ON_GPU,
}, async () => {
  const rig = await openRig()
  const { comm } = rig
  try {
    const random = rng(17)
    const algorithms = comm.algorithms.filter((a) => a !== 'nccl' && a !== 'nccl-symmetric')
    for (const dtype of DTYPES) {
      for (const count of [1, 33, 4099, 65_537, 300_001]) {
        const bytes = count * BYTES[dtype]
        const ins = Array.from({ length: comm.size }, (_, r) => comm.allocate(r, bytes))
        const outs = Array.from({ length: comm.size }, (_, r) => comm.allocate(r, bytes))
        for (const algorithm of algorithms) {
          for (const inPlace of [false, true]) {
            const inputs = Array.from({ length: comm.size }, (_, r) =>
              makeInput(dtype, count, 'adversarial', r, random),
            )
            upload(rig, ins, inputs)
            const outputs = inPlace ? ins : outs
            const info = comm.deviceAllReduce({ inputs: ins, outputs, count, dtype, algorithm, streams: rig.streams })
            await syncAll(rig)
            const got = download(rig, outputs, dtype, count)
            const problems = checkAllReduce(dtype, inputs, got, 5, numericModel(info.algorithm, dtype))
            const name = `public/${dtype}/${count}/${algorithm}/${inPlace ? 'in-place' : 'out-of-place'}`
            recordCase({ name, passed: problems.length === 0, ran: info.algorithm, problems })
            assert.deepEqual(problems, [], name)
          }
        }
        for (const p of [...ins, ...outs]) comm.free(p)
      }
    }
  } finally {
    await comm.close()
  }
})

test('public device path: a captured graph replayed 1,000 times with fresh data', { skip: !ON_GPU }, async () => {
  const rig = await openRig()
  const { comm } = rig
  try {
    const random = rng(5)
    for (const dtype of ['f32', 'bf16'] as const) {
      const count = 4099
      const ins = Array.from({ length: comm.size }, (_, r) => comm.allocate(r, count * BYTES[dtype]))
      const outs = Array.from({ length: comm.size }, (_, r) => comm.allocate(r, count * BYTES[dtype]))
      const args = { inputs: ins, outputs: outs, count, dtype, streams: rig.streams }
      // Setup (module load, packing) happens here, before the capture, never during it.
      comm.prepareDeviceAllReduce(args)
      const graph = comm.captureGraph(() => comm.deviceAllReduce(args), rig.streams)
      let wrong = 0
      const replays = 1000
      for (let i = 0; i < replays; i++) {
        const inputs = Array.from({ length: comm.size }, (_, r) => makeInput(dtype, count, 'random', r, random))
        upload(rig, ins, inputs)
        graph.launch()
        await syncAll(rig)
        if (checkAllReduce(dtype, inputs, download(rig, outs, dtype, count)).length > 0) wrong++
      }
      graph.destroy()
      recordCase({ name: `public/graph-replay/${dtype}`, passed: wrong === 0, replays, wrong })
      assert.equal(wrong, 0, `${wrong} of ${replays} replays wrong`)
    }
  } finally {
    await comm.close()
  }
})

test('public device path: canServe and the fallback rules', { skip: !ON_GPU }, async () => {
  const comm = await createCommunicator({ backend: 'cuda', devices: DEVICES })
  try {
    const small = comm.canServe({ count: 4096, dtype: 'bf16' })
    assert.equal(small.ok, true)
    const distinct = new Set(comm.devices).size === comm.devices.length
    if (!distinct) {
      // Virtual ranks: NCCL cannot run, so asking for it falls back to a kernel, or fails when told not to.
      const replaced = comm.canServe({ count: 4096, dtype: 'f32', algorithm: 'nccl' })
      assert.ok(replaced.ok && replaced.fallbackReason, JSON.stringify(replaced))
      const refused = comm.canServe({ count: 4096, dtype: 'f32', algorithm: 'nccl', fallback: false })
      assert.deepEqual(refused.ok ? 'ok' : refused.code, 'UNSUPPORTED_ALGORITHM')
      const ncclOnly = comm.canServe({ count: 4096, dtype: 'f32', algorithm: 'nccl', fallback: 'nccl' })
      assert.equal(ncclOnly.ok, false)
    }
    const badDtype = comm.canServe({ count: 4, dtype: 'f64' as Dtype })
    assert.equal(badDtype.ok ? 'ok' : badDtype.code, 'UNSUPPORTED_DTYPE')
    recordCase({ name: 'public/can-serve', passed: true })
  } finally {
    await comm.close()
  }
})

test('public device path: typed errors before anything is launched', { skip: !ON_GPU }, async () => {
  const rig = await openRig()
  const { comm } = rig
  try {
    const count = 1024
    const ptrs = Array.from({ length: comm.size }, (_, r) => comm.allocate(r, count * 4))
    const base = { inputs: ptrs, outputs: ptrs, count, dtype: 'f32' as const, streams: rig.streams }
    const misaligned = ptrs.map((p, r) => (r === 1 ? devicePtr(Number(p) + 4) : p))
    assert.throws(() => comm.deviceAllReduce({ ...base, inputs: misaligned, outputs: misaligned }), {
      code: 'MISALIGNED_BUFFER',
    })
    assert.throws(
      () => comm.deviceAllReduce({ ...base, count: count + 1 }),
      (e: unknown) => {
        assert.ok(
          e instanceof LlcommError && e.code === 'INVALID_ARGUMENT' && /allocation holds/.test(e.message),
          String(e),
        )
        return true
      },
    )
    // A pointer inside another library's allocation: its capacity is counted from the pointer.
    const inner = ptrs.map((p) => devicePtr(Number(p) + 256))
    assert.throws(() => comm.deviceAllReduce({ ...base, inputs: inner, outputs: inner }), { code: 'INVALID_ARGUMENT' })
    assert.throws(
      () => comm.deviceAllReduce({ ...base, algorithm: 'nccl', fallback: false }),
      (e: unknown) => e instanceof LlcommError && (e.code === 'UNSUPPORTED_ALGORITHM' || e.code === 'INVALID_ARGUMENT'),
    )
    assert.throws(() => comm.deviceAllReduce({ ...base, fallback: 'sometimes' as unknown as false }), {
      code: 'INVALID_ARGUMENT',
    })
    // Pointers on the wrong device: only where ranks sit on distinct GPUs.
    if (comm.launchGroupDevices.length > 1) {
      const swapped = [ptrs[1], ptrs[0], ...ptrs.slice(2)]
      assert.throws(() => comm.deviceAllReduce({ ...base, inputs: swapped, outputs: swapped }), /is on device/)
    }
    // A second stream while a call is in flight on the first: BUSY, at once.
    const big = 64 << 20
    const bigPtrs = Array.from({ length: comm.size }, (_, r) => comm.allocate(r, big * 4))
    const other = comm.launchGroupDevices.map((d) => comm.createStream(comm.devices.indexOf(d)))
    comm.deviceAllReduce({ inputs: bigPtrs, outputs: bigPtrs, count: big, dtype: 'f32', streams: rig.streams })
    assert.throws(
      () => comm.deviceAllReduce({ inputs: bigPtrs, outputs: bigPtrs, count: big, dtype: 'f32', streams: other }),
      { code: 'BUSY' },
    )
    await syncAll(rig)
    recordCase({ name: 'public/typed-errors', passed: true })
  } finally {
    await comm.close()
  }
  // After close every call is CLOSED, and close() freed what allocate() and createStream() handed out.
  assert.throws(() => comm.allocate(0, 256), { code: 'CLOSED' })
})
