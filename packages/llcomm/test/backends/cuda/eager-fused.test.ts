// The eager fused calls of the cuda communicator (deviceAllReduceRmsNorm, deviceRmsNorm, deviceAllReduceMany) without
// a GPU: the communicator's own methods over a stand-in driver that records every launch's kernel, stream and
// parameter bytes (read from the launch's native block at the moment of cuLaunchKernelEx). Checks that a repeated
// call reuses its packed call (one preparation) and that every launch carries the parameters its own arguments ask
// for: a changed or in-place-mutated pointer array, weights, eps, outScale or flag is never served by a stale entry;
// and that BUSY, CLOSED and a poisoned communicator still stop a reused call before it launches.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { f32Bits, LLCOMM_MAX_RANKS } from '../../../src/backends/cuda/abi.js'
import { CudaCommunicator } from '../../../src/backends/cuda/communicator.js'
import type { DeviceAllReduceManyArgs, DeviceAllReduceRmsNormArgs } from '../../../src/backends/cuda/device-call.js'
import { allReduceManyCalls, deviceAllReduceCalls, fusedNormCalls } from '../../../src/backends/cuda/eager-calls.js'
import {
  ALLREDUCE_MANY_PARAMS_LAYOUT,
  FUSED_NORM_PARAMS_LAYOUT,
  LLCOMM_FUSED_NO_RESIDUAL_IN,
  LLCOMM_FUSED_OUT_E4M3,
  LLCOMM_FUSED_RESIDUAL_F32,
} from '../../../src/backends/cuda/fused-abi.js'
import type { FusedLauncher } from '../../../src/backends/cuda/fused-launcher.js'
import { CommunicatorBase } from '../../../src/communicator/base.js'
import { LlcommError } from '../../../src/errors.js'
import type { CuStream, DevicePtr, PreparedLaunch } from '../../../src/ffi/index.js'
import { standInFusedLauncher } from '../../support/stand-in-fused-launcher.js'

const NRANKS = 2
const ptr = (n: number) => (0x7e0000000000 + n * 0x100000) as DevicePtr
const S1 = 0x4000 as CuStream
const S2 = 0x4100 as CuStream

interface RecordedLaunch {
  kernel: string
  stream: number
  params: DataView
}

/** The fields of CudaCommunicator the fused eager path reads (private there; set here as its constructor would). */
interface FakeFields {
  closed: boolean
  broken: LlcommError | undefined
  lastStreams: readonly CuStream[] | undefined
}

/** A CudaCommunicator over a stand-in driver (no GPU), its launch log, and counters of the launcher's preparations. */
function fakeCommunicator() {
  const launches: RecordedLaunch[] = []
  const prepared = { norm: 0, many: 0 }
  const kernels: string[] = []
  let busyStream: number | undefined
  let launcher: FusedLauncher | undefined
  const configsOf = (l: FusedLauncher) => (l as unknown as { configs: Map<string, PreparedLaunch> }).configs
  const driver = {
    setCurrent() {},
    occupancyMaxActiveBlocksPerSm: () => 4,
    occupancyMaxActiveClusters: () => 64,
    streamQuery: (s: CuStream) => s !== busyStream,
    error: (call: string, rc: number) => new Error(`${call} ${rc}`),
    /** cuLaunchKernelEx: the parameters as they are in native memory now (kernelParams[0] points at them). */
    cuLaunchKernelExRaw(config: number, f: number, kernelParams: number) {
      const launch = [...configsOf(launcher as FusedLauncher).values()].find((l) => l.snapshot().address === config)
      if (!launch) throw new Error('a launch of an unknown config')
      const { address, bytes } = launch.snapshot()
      const v = new DataView(bytes.buffer)
      const paramsAt = Number(v.getBigUint64(kernelParams - address, true)) - address
      launches.push({
        kernel: kernels[f - 1],
        stream: Number(v.getBigUint64(config - address + 32, true)), // CUlaunchConfig.hStream
        params: new DataView(bytes.buffer.slice(paramsAt, paramsAt + launch.paramBytes)),
      })
      return 0
    },
  }
  const standIn = standInFusedLauncher({
    driver,
    kernels,
    ranks: [0, 1],
    nranks: NRANKS,
    bufferBytes: 1 << 20,
    recvBuf: [0x7f0000000000 as DevicePtr, 0x7f0000200000 as DevicePtr],
    scratch: [0x7f0000400000 as DevicePtr, 0x7f0000500000 as DevicePtr],
    errorWord: 0x7f0000600000 as DevicePtr,
  })
  launcher = standIn.launcher
  const deviceSet = standIn.deviceSet

  const countCalls = <K extends 'prepareNorm' | 'prepareMany'>(name: K, counter: 'norm' | 'many') => {
    const l = launcher as FusedLauncher
    const original = l[name].bind(l) as (...a: unknown[]) => ReturnType<FusedLauncher[K]>
    ;(l as unknown as Record<K, unknown>)[name] = (...a: unknown[]) => {
      prepared[counter]++
      return original(...a)
    }
  }
  countCalls('prepareNorm', 'norm')
  countCalls('prepareMany', 'many')
  // Only the base's constructor runs (the lifecycle state); the cuda constructor, which opens the driver, does not.
  const comm = Reflect.construct(CommunicatorBase, [], CudaCommunicator) as CudaCommunicator
  Object.assign(comm, {
    size: NRANKS,
    devices: [0, 0],
    driver,
    deviceSet,
    internalStreams: [0x3000],
    fusedLauncher: launcher,
    closed: false,
    broken: undefined,
    lastStreams: undefined,
    eagerCalls: deviceAllReduceCalls(),
    eagerNormCalls: fusedNormCalls(),
    eagerReferenceNormCalls: fusedNormCalls(),
    eagerManyCalls: allReduceManyCalls(),
  })
  return {
    comm,
    fields: comm as unknown as FakeFields,
    launches,
    prepared,
    setBusy: (s: CuStream | undefined) => {
      busyStream = s
    },
  }
}

const F = FUSED_NORM_PARAMS_LAYOUT.byName
const u32 = (v: DataView, field: { offset: number }) => v.getUint32(field.offset, true)
const u64s = (v: DataView, field: { offset: number }, n: number, stride = 0) =>
  Array.from({ length: n }, (_, i) => Number(v.getBigUint64(field.offset + 8 * (i + stride), true)))

function norm(over: Partial<DeviceAllReduceRmsNormArgs> = {}): DeviceAllReduceRmsNormArgs {
  return {
    inputs: [ptr(0), ptr(1)],
    residuals: [ptr(2), ptr(3)],
    outputs: [ptr(4), ptr(5)],
    weights: [ptr(6), ptr(7)],
    rows: 4,
    hidden: 4096,
    eps: 1e-5,
    dtype: 'bf16',
    algorithm: 'oneshot',
    stream: S1,
    ...over,
  }
}

/** The launch's parameters are exactly what `a` asks for (one launch: rows at offset 0). */
function assertNormLaunch(l: RecordedLaunch, a: DeviceAllReduceRmsNormArgs, what: string): void {
  const v = l.params
  assert.deepEqual(u64s(v, F.input, NRANKS), [...a.inputs], `${what}: input`)
  assert.deepEqual(u64s(v, F.residual, NRANKS), [...a.residuals], `${what}: residual`)
  assert.deepEqual(u64s(v, F.out, NRANKS), [...a.outputs], `${what}: out`)
  assert.deepEqual(u64s(v, F.weight, NRANKS), [...a.weights], `${what}: weight`)
  assert.equal(u32(v, F.rows), a.rows, `${what}: rows`)
  assert.equal(u32(v, F.hidden), a.hidden, `${what}: hidden`)
  assert.equal(u32(v, F.epsBits), f32Bits(a.eps), `${what}: eps`)
  const flags =
    (a.residualF32 ? LLCOMM_FUSED_RESIDUAL_F32 : 0) |
    (a.noResidualIn ? LLCOMM_FUSED_NO_RESIDUAL_IN : 0) |
    (a.outDtype === 'e4m3' ? LLCOMM_FUSED_OUT_E4M3 : 0)
  assert.equal(u32(v, F.flags), flags, `${what}: flags`)
  assert.equal(u32(v, F.outScaleBits), f32Bits(a.outScale ?? 1), `${what}: outScale`)
  assert.equal(l.stream, a.stream, `${what}: stream`)
}

test('eager deviceAllReduceRmsNorm: a repeated call is packed once; every launch carries its own arguments', () => {
  const { comm, launches, prepared } = fakeCommunicator()
  const a = norm()
  for (let i = 0; i < 3; i++) assert.deepEqual(comm.deviceAllReduceRmsNorm(a), { algorithm: 'oneshot', launches: 1 })
  assert.equal(prepared.norm, 1, 'one preparation for three equal calls')
  assert.equal(launches.length, 3)
  for (const l of launches) assertNormLaunch(l, a, 'repeated')
  assert.match(launches[0].kernel, /fused_rmsnorm_oneshot/)

  // Each change: a new preparation and launches that carry it; then the first call again, from its entry.
  const changes: [string, DeviceAllReduceRmsNormArgs][] = [
    ['eps', norm({ eps: 1e-6 })],
    ['weights', norm({ weights: [ptr(8), ptr(9)] })],
    ['one rank weight', norm({ weights: [ptr(6), ptr(9)] })],
    ['residuals', norm({ residuals: [ptr(10), ptr(11)] })],
    ['outputs', norm({ outputs: [ptr(12), ptr(13)] })],
    ['inputs', norm({ inputs: [ptr(1), ptr(0)] })],
    ['rows', norm({ rows: 3 })],
    ['hidden', norm({ hidden: 8192 })],
    ['residualF32', norm({ residualF32: true })],
    ['noResidualIn', norm({ noResidualIn: true })],
    ['e4m3 output', norm({ outDtype: 'e4m3', outScale: 4 })],
    ['e4m3 scale', norm({ outDtype: 'e4m3', outScale: 0.5 })],
    ['stream', norm({ stream: S2 })],
  ]
  for (const [name, b] of changes) {
    const before: number = prepared.norm
    comm.deviceAllReduceRmsNorm(b)
    assert.equal(prepared.norm, before + 1, `${name}: packed anew`)
    assertNormLaunch(launches[launches.length - 1], b, name)
    comm.deviceAllReduceRmsNorm(b)
    assert.equal(prepared.norm, before + 1, `${name}: reused on the second call`)
    assertNormLaunch(launches[launches.length - 1], b, `${name} again`)
  }
  // More distinct calls than the cache keeps went by: the first is packed again, and right.
  const before: number = prepared.norm
  comm.deviceAllReduceRmsNorm(a)
  assert.equal(prepared.norm, before + 1, 'the first call was replaced and is packed again')
  assertNormLaunch(launches[launches.length - 1], a, 'the first call after the others')
})

test('eager deviceAllReduceRmsNorm: pointer arrays and the args object changed in place between calls are re-packed', () => {
  const { comm, launches, prepared } = fakeCommunicator()
  const a = norm({ inputs: [ptr(0), ptr(1)], weights: [ptr(6), ptr(7)] })
  comm.deviceAllReduceRmsNorm(a)
  const steps: [string, () => void][] = [
    ['weights[1]', () => ((a.weights as DevicePtr[])[1] = ptr(20))],
    ['residuals[0]', () => ((a.residuals as DevicePtr[])[0] = ptr(21))],
    ['outputs[1]', () => ((a.outputs as DevicePtr[])[1] = ptr(22))],
    ['inputs[0]', () => ((a.inputs as DevicePtr[])[0] = ptr(23))],
    ['eps', () => (a.eps = 2e-5)],
    ['weights back', () => ((a.weights as DevicePtr[])[1] = ptr(7))],
  ]
  for (const [name, step] of steps) {
    const before: number = prepared.norm
    step()
    comm.deviceAllReduceRmsNorm(a)
    assertNormLaunch(launches[launches.length - 1], a, name)
    assert.equal(prepared.norm, before + 1, `${name}: packed anew`)
  }
})

test('eager deviceAllReduceRmsNorm: switching between a few calls (as the layers of a step) reuses each one, with its own parameters', () => {
  const { comm, launches, prepared } = fakeCommunicator()
  // four layers: their own residual stream position, weights and outputs, the same x buffer
  const layers = [0, 1, 2, 3].map((k) =>
    norm({ residuals: [ptr(30 + k), ptr(40 + k)], weights: [ptr(50 + k), ptr(60 + k)], outputs: [ptr(70), ptr(71)] }),
  )
  for (let step = 0; step < 3; step++)
    for (const [k, a] of layers.entries()) {
      comm.deviceAllReduceRmsNorm({ ...a }) // a fresh args object each time, as a caller spreading its defaults
      assertNormLaunch(launches[launches.length - 1], a, `step ${step} layer ${k}`)
    }
  assert.equal(prepared.norm, layers.length)
})

test('eager deviceRmsNorm has its own entries: the same arguments launch the reference kernel, not the fused one', () => {
  const { comm, launches, prepared } = fakeCommunicator()
  const a = norm({ algorithm: undefined })
  comm.deviceAllReduceRmsNorm(a)
  comm.deviceRmsNorm(a)
  comm.deviceAllReduceRmsNorm(a)
  comm.deviceRmsNorm(a)
  assert.equal(prepared.norm, 2)
  assert.deepEqual(
    launches.map((l) => /rmsnorm_oneshot|fused/.test(l.kernel)),
    [true, false, true, false],
    launches.map((l) => l.kernel).join(', '),
  )
  for (const l of launches) assertNormLaunch(l, a, l.kernel)
})

test('eager fused calls: BUSY before the preparation and on a reused call; CLOSED and a poisoned communicator stop a reused call', () => {
  const { comm, fields, launches, prepared, setBusy } = fakeCommunicator()
  const a = norm({ stream: S1 })
  const b = norm({ stream: S2 })
  comm.deviceAllReduceRmsNorm(a) // packed, claims S1
  setBusy(S1)
  assert.throws(() => comm.deviceAllReduceRmsNorm(b), { code: 'BUSY' })
  assert.equal(prepared.norm, 1, 'BUSY came before the preparation')
  assert.equal(launches.length, 1)
  setBusy(undefined)
  comm.deviceAllReduceRmsNorm(b) // packed, claims S2
  comm.deviceAllReduceRmsNorm(a) // reused, claims S1 (S2 idle)
  assert.equal(prepared.norm, 2)
  setBusy(S1)
  assert.throws(() => comm.deviceAllReduceRmsNorm(b), { code: 'BUSY' }, 'a reused call on another stream')
  assert.equal(launches.length, 3)
  comm.deviceAllReduceRmsNorm(a) // the same stream: no query, runs
  assert.equal(launches.length, 4)
  setBusy(undefined)

  fields.broken = new LlcommError('TIMEOUT', 'rank 1 waited for peer 0 (epoch 7)')
  assert.throws(() => comm.deviceAllReduceRmsNorm(a), { code: 'TIMEOUT' })
  assert.throws(
    () =>
      comm.deviceAllReduceMany({
        inputs: [[ptr(0), ptr(1)]],
        outputs: [[ptr(2), ptr(3)]],
        counts: [64],
        dtype: 'f32',
        stream: S1,
      }),
    { code: 'TIMEOUT' },
  )
  fields.broken = undefined
  fields.closed = true
  assert.throws(() => comm.deviceAllReduceRmsNorm(a), { code: 'CLOSED' })
  assert.throws(() => comm.deviceRmsNorm(a), { code: 'CLOSED' })
  assert.equal(launches.length, 4, 'nothing launched while poisoned or closed')
})

const M = ALLREDUCE_MANY_PARAMS_LAYOUT.byName

function many(over: Partial<DeviceAllReduceManyArgs> = {}): DeviceAllReduceManyArgs {
  return {
    inputs: [
      [ptr(0), ptr(1)],
      [ptr(2), ptr(3)],
    ],
    outputs: [
      [ptr(4), ptr(5)],
      [ptr(6), ptr(7)],
    ],
    counts: [4096, 40],
    dtype: 'bf16',
    stream: S1,
    ...over,
  }
}

function assertManyLaunch(l: RecordedLaunch, a: DeviceAllReduceManyArgs, what: string): void {
  const v = l.params
  assert.equal(u32(v, M.buffers), a.counts.length, `${what}: buffers`)
  for (let b = 0; b < a.counts.length; b++) {
    assert.deepEqual(u64s(v, M.input, NRANKS, b * LLCOMM_MAX_RANKS), [...a.inputs[b]], `${what}: inputs[${b}]`)
    assert.deepEqual(u64s(v, M.output, NRANKS, b * LLCOMM_MAX_RANKS), [...a.outputs[b]], `${what}: outputs[${b}]`)
    assert.equal(u64s(v, M.count, 1, b)[0], a.counts[b], `${what}: counts[${b}]`)
  }
  assert.equal(l.stream, a.stream, `${what}: stream`)
}

test('eager deviceAllReduceMany: packed once per distinct call; nested pointer lists and counts changed in place are re-packed', () => {
  const { comm, launches, prepared } = fakeCommunicator()
  const a = many()
  comm.deviceAllReduceMany(a)
  comm.deviceAllReduceMany(a)
  assert.equal(prepared.many, 1)
  assert.equal(launches.length, 2)
  for (const l of launches) assertManyLaunch(l, a, 'repeated')
  const steps: [string, () => void][] = [
    ['inputs[1][0]', () => ((a.inputs[1] as DevicePtr[])[0] = ptr(20))],
    ['outputs[0][1]', () => ((a.outputs[0] as DevicePtr[])[1] = ptr(21))],
    ['counts[1]', () => ((a.counts as number[])[1] = 48)],
    ['inputs[0] replaced', () => ((a.inputs as DevicePtr[][])[0] = [ptr(22), ptr(23)])],
  ]
  for (const [name, step] of steps) {
    const before: number = prepared.many
    step()
    comm.deviceAllReduceMany(a)
    assert.equal(prepared.many, before + 1, `${name}: packed anew`)
    assertManyLaunch(launches[launches.length - 1], a, name)
  }
  const c = many({
    counts: [4096, 40, 8],
    inputs: [...many().inputs, [ptr(24), ptr(25)]],
    outputs: [...many().outputs, [ptr(26), ptr(27)]],
  })
  comm.deviceAllReduceMany(c)
  assertManyLaunch(launches[launches.length - 1], c, 'a third buffer')
  comm.deviceAllReduceMany(a)
  assertManyLaunch(launches[launches.length - 1], a, 'back to the changed call')
  assert.equal(prepared.many, 1 + steps.length + 1, 'the last call reused its entry')
})
