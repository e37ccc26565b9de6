// The eager-call caches (backends/cuda/eager-calls.ts) without a GPU: a call is reused only when every argument equals
// what it was packed for, the caller's arrays are copied, and the oldest entry goes first. One table of changed
// arguments per kind of call, typed over every field of its arguments: a field added to the arguments and not to the
// table is a type error here, and a field the kind does not compare makes its row fail.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import type {
  ProcessDeviceAllReduceManyRequest,
  ProcessDeviceAllReduceRequest,
  ProcessDeviceAllReduceRmsNormRequest,
} from '../../../src/api/types.js'
import type {
  DeviceAllReduceArgs,
  DeviceAllReduceManyArgs,
  DeviceAllReduceRmsNormArgs,
  PreparedDeviceAllReduce,
  PreparedFusedDeviceCall,
} from '../../../src/backends/cuda/device-call.js'
import {
  allReduceManyCalls,
  deviceAllReduceCalls,
  EAGER_CALLS_KEPT,
  fusedNormCalls,
  type ProcessPreparedCall,
  processAllReduceManyCalls,
  processDeviceAllReduceCalls,
  processFusedNormCalls,
} from '../../../src/backends/cuda/eager-calls.js'
import type { CuStream, DevicePtr } from '../../../src/ffi/types.js'

const ptr = (n: number) => (0x7e0000000000 + n * 0x100000) as DevicePtr
const stream = 0x4000 as CuStream
const prepared: PreparedDeviceAllReduce = { algorithm: 'oneshot-ll', chunks: 1, issue: () => {} }
const info = { algorithm: 'oneshot-ll' as const, chunks: 1 }
const fusedPrepared: PreparedFusedDeviceCall = { algorithm: 'oneshot', launches: 1, issue: () => {} }
const fusedInfo = { algorithm: 'oneshot', launches: 1 }

/** Changed values for every field of A (each one must miss). */
type ChangeTable<A> = { [F in keyof Required<A>]: Partial<A>[] }

function args(over: Partial<DeviceAllReduceArgs> = {}): DeviceAllReduceArgs {
  return { inputs: [ptr(0), ptr(1)], outputs: [ptr(2), ptr(3)], count: 4096, dtype: 'bf16', stream, ...over }
}

const ALL_REDUCE_CHANGES: ChangeTable<DeviceAllReduceArgs> = {
  inputs: [{ inputs: [ptr(0), ptr(9)] }, { inputs: [ptr(0)] }],
  outputs: [{ outputs: [ptr(2)] }, { outputs: [ptr(3), ptr(2)] }],
  count: [{ count: 4097 }],
  dtype: [{ dtype: 'f16' }],
  // sum is the only op today; another value (refused when packing) must not reuse the sum's call
  op: [{ op: 'max' as unknown as 'sum' }],
  algorithm: [{ algorithm: 'ring' }],
  protocol: [{ protocol: 'll16' }],
  pdl: [{ pdl: true }],
  fallback: [{ fallback: false }, { fallback: 'nccl' }],
  deterministic: [{ deterministic: true }, { deterministic: false }],
  stream: [{ stream: 0x4001 as CuStream }, { stream: undefined }],
  streams: [{ streams: [stream] }],
}

test('deviceAllReduce: a call is reused only when every argument equals the packed one', () => {
  const cache = deviceAllReduceCalls()
  const a = args()
  const entry = cache.remember(a, [stream], prepared, info)
  assert.equal(cache.find(a), entry)
  assert.equal(cache.find(args()), entry, 'an equal fresh object')
  assert.equal(cache.find(args({ op: 'sum', pdl: false, fallback: true, algorithm: 'auto' })), entry, 'the defaults')
  for (const [field, changes] of Object.entries(ALL_REDUCE_CHANGES))
    for (const changed of changes)
      assert.equal(cache.find(args(changed)), undefined, `${field}: ${JSON.stringify(changed)}`)
})

test('deviceAllReduce: the cache keeps copies: a caller rewriting its own pointer arrays misses', () => {
  for (const field of ['inputs', 'outputs', 'streams'] as const) {
    const cache = deviceAllReduceCalls()
    const a = args({ streams: [stream] })
    cache.remember(a, [stream], prepared, info)
    ;(a[field] as unknown as number[])[0] = 0x7e0000f00000
    assert.equal(cache.find(a), undefined, field)
  }
})

test(`at most ${EAGER_CALLS_KEPT} calls stay packed, the oldest replaced first`, () => {
  const cache = deviceAllReduceCalls()
  for (let i = 0; i <= EAGER_CALLS_KEPT; i++) cache.remember(args({ count: i + 1 }), [stream], prepared, info)
  assert.equal(cache.size, EAGER_CALLS_KEPT)
  assert.equal(cache.find(args({ count: 1 })), undefined, 'the first one went')
  for (let i = 1; i <= EAGER_CALLS_KEPT; i++) assert.ok(cache.find(args({ count: i + 1 })), `count ${i + 1}`)
  cache.clear()
  assert.equal(cache.size, 0)
})

test('the entry found is the one packed for these arguments, not another one (several entries)', () => {
  const cache = deviceAllReduceCalls()
  const entries = [0, 1, 2].map((i) =>
    cache.remember(args({ outputs: [ptr(10 + i), ptr(20 + i)] }), [stream], prepared, { ...info, chunks: i }),
  )
  for (const i of [2, 0, 1]) assert.equal(cache.find(args({ outputs: [ptr(10 + i), ptr(20 + i)] })), entries[i])
})

// ---- deviceAllReduceRmsNorm / deviceRmsNorm ----

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
    stream,
    ...over,
  }
}

const NORM_CHANGES: ChangeTable<DeviceAllReduceRmsNormArgs> = {
  inputs: [{ inputs: [ptr(0), ptr(9)] }, { inputs: [ptr(1), ptr(0)] }],
  residuals: [{ residuals: [ptr(2), ptr(9)] }, { residuals: [ptr(2)] }],
  outputs: [{ outputs: [ptr(9), ptr(5)] }],
  // the weights: one rank's differs, or the same pointer on every rank
  weights: [{ weights: [ptr(6), ptr(8)] }, { weights: [ptr(6), ptr(6)] }],
  rows: [{ rows: 5 }, { rows: 3 }],
  hidden: [{ hidden: 8192 }],
  // an eps that rounds to another f32, and one that rounds to the same f32 (re-packed: harmless)
  eps: [{ eps: 1e-6 }, { eps: 1e-5 * (1 + 1e-12) }],
  dtype: [{ dtype: 'f16' }],
  residualF32: [{ residualF32: true }],
  noResidualIn: [{ noResidualIn: true }],
  algorithm: [{ algorithm: 'twoshot' }, { algorithm: 'oneshot' }, { algorithm: 'split-ll' }],
  pdl: [{ pdl: true }],
  outDtype: [{ outDtype: 'e4m3' }],
  outScale: [{ outScale: 2 }, { outScale: 1 + 2 ** -30 }],
  stream: [{ stream: 0x4001 as CuStream }, { stream: undefined }],
  streams: [{ streams: [stream] }],
}

test('deviceAllReduceRmsNorm: reused only when every argument (pointers, weights, eps, shape, flags, scale, streams) equals the packed one', () => {
  const cache = fusedNormCalls()
  const a = norm()
  const entry = cache.remember(a, [stream], fusedPrepared, fusedInfo)
  assert.equal(cache.find(a), entry)
  assert.equal(cache.find(norm()), entry, 'an equal fresh object')
  assert.equal(
    cache.find(
      norm({
        residualF32: false,
        noResidualIn: false,
        algorithm: 'auto',
        pdl: false,
        outScale: 1,
        outDtype: undefined,
      }),
    ),
    entry,
    'the defaults',
  )
  for (const [field, changes] of Object.entries(NORM_CHANGES))
    for (const changed of changes)
      assert.equal(cache.find(norm(changed)), undefined, `${field}: ${JSON.stringify(changed)}`)
})

test('deviceAllReduceRmsNorm: eps and outScale compare as the bits they pack (-0 is not 0)', () => {
  const cache = fusedNormCalls()
  cache.remember(norm({ eps: 0, outScale: 1 }), [stream], fusedPrepared, fusedInfo)
  assert.ok(cache.find(norm({ eps: 0 })))
  assert.equal(cache.find(norm({ eps: -0 })), undefined)
  const scaled = fusedNormCalls()
  scaled.remember(norm({ outDtype: 'e4m3', outScale: 4 }), [stream], fusedPrepared, fusedInfo)
  assert.ok(scaled.find(norm({ outDtype: 'e4m3', outScale: 4 })))
  assert.equal(scaled.find(norm({ outDtype: 'e4m3' })), undefined, 'the default scale 1 is not 4')
})

test('deviceAllReduceRmsNorm: a caller rewriting any of its pointer arrays in place misses', () => {
  for (const field of ['inputs', 'residuals', 'outputs', 'weights', 'streams'] as const) {
    const cache = fusedNormCalls()
    const a = norm({ streams: [stream] })
    cache.remember(a, [stream], fusedPrepared, fusedInfo)
    assert.ok(cache.find(a), `${field}: before the change`)
    ;(a[field] as unknown as number[])[0] = 0x7e0000f00000
    assert.equal(cache.find(a), undefined, field)
    // and an array grown in place
    const b = norm({ streams: [stream] })
    cache.remember(b, [stream], fusedPrepared, fusedInfo)
    ;(b[field] as unknown as number[]).push(0x7e0000f00000)
    assert.equal(cache.find(b), undefined, `${field} grown`)
  }
})

test('deviceAllReduceRmsNorm: mutating the args object itself (eps, weights) between calls misses', () => {
  const cache = fusedNormCalls()
  const a = norm()
  cache.remember(a, [stream], fusedPrepared, fusedInfo)
  a.eps = 1e-6
  assert.equal(cache.find(a), undefined, 'eps')
  a.eps = 1e-5
  assert.ok(cache.find(a), 'eps back')
  a.weights = [ptr(8), ptr(9)]
  assert.equal(cache.find(a), undefined, 'weights replaced')
})

// ---- deviceAllReduceMany ----

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
    counts: [4096, 37],
    dtype: 'bf16',
    stream,
    ...over,
  }
}

const MANY_CHANGES: ChangeTable<DeviceAllReduceManyArgs> = {
  inputs: [
    {
      inputs: [
        [ptr(0), ptr(1)],
        [ptr(2), ptr(9)],
      ],
    },
    { inputs: [[ptr(0), ptr(1)]] },
    {
      inputs: [
        [ptr(2), ptr(3)],
        [ptr(0), ptr(1)],
      ],
    },
  ],
  outputs: [
    {
      outputs: [
        [ptr(4), ptr(9)],
        [ptr(6), ptr(7)],
      ],
    },
    {
      outputs: [
        [ptr(4), ptr(5)],
        [ptr(6), ptr(7)],
        [ptr(8), ptr(9)],
      ],
    },
  ],
  counts: [{ counts: [4096, 38] }, { counts: [37, 4096] }, { counts: [4096] }],
  dtype: [{ dtype: 'f32' }],
  pdl: [{ pdl: true }],
  stream: [{ stream: 0x4001 as CuStream }],
  streams: [{ streams: [stream] }],
}

test('deviceAllReduceMany: reused only when every pointer list, count, dtype, pdl and stream equals the packed one', () => {
  const cache = allReduceManyCalls()
  const a = many()
  const entry = cache.remember(a, [stream], fusedPrepared, fusedInfo)
  assert.equal(cache.find(a), entry)
  assert.equal(cache.find(many({ pdl: false })), entry, 'an equal fresh object, the default pdl')
  for (const [field, changes] of Object.entries(MANY_CHANGES))
    for (const changed of changes)
      assert.equal(cache.find(many(changed)), undefined, `${field}: ${JSON.stringify(changed)}`)
})

test('deviceAllReduceMany: the key copies nested arrays: an inner pointer list or the counts changed in place miss', () => {
  const edits: [string, (a: DeviceAllReduceManyArgs) => void][] = [
    ['inputs[1][0]', (a) => ((a.inputs[1] as unknown as number[])[0] = 0x7e0000f00000)],
    ['outputs[0][1]', (a) => ((a.outputs[0] as unknown as number[])[1] = 0x7e0000f00000)],
    ['inputs[1] replaced', (a) => ((a.inputs as DevicePtr[][])[1] = [ptr(8), ptr(9)])],
    ['counts[0]', (a) => ((a.counts as number[])[0] = 4095)],
    ['outputs grown', (a) => (a.outputs as DevicePtr[][]).push([ptr(8), ptr(9)])],
  ]
  for (const [name, edit] of edits) {
    const cache = allReduceManyCalls()
    const a = many()
    cache.remember(a, [stream], fusedPrepared, fusedInfo)
    edit(a)
    assert.equal(cache.find(a), undefined, name)
  }
})

// ---- the per-process communicator's deviceAllReduce ----

function request(over: Partial<ProcessDeviceAllReduceRequest> = {}): ProcessDeviceAllReduceRequest {
  return { input: ptr(0), output: ptr(1), count: 4096, dtype: 'bf16', stream, ...over }
}
const processPrepared: ProcessPreparedCall = { kind: 'kernel', chunks: [] }

const PROCESS_CHANGES: ChangeTable<ProcessDeviceAllReduceRequest> = {
  // a bigint for the same address is another key (re-packed, never a wrong reuse)
  input: [{ input: ptr(9) }, { input: BigInt(ptr(0)) }],
  output: [{ output: ptr(0) }],
  count: [{ count: 4095 }, { count: 0 }],
  dtype: [{ dtype: 'f32' }],
  op: [{ op: 'max' as unknown as 'sum' }],
  algorithm: [{ algorithm: 'twoshot-sentinel' }, { algorithm: 'nccl' }],
  // 0 and undefined both mean the communicator's stream, but stay separate keys (harmless re-pack)
  stream: [{ stream: 0x4001 }, { stream: 0 }, { stream: undefined }],
  protocol: [{ protocol: 'll8' }],
  pdl: [{ pdl: true }],
  fallback: [{ fallback: false }],
  deterministic: [{ deterministic: true }, { deterministic: false }],
}

test('per-process deviceAllReduce: a request is reused only when every field equals the packed one', () => {
  const cache = processDeviceAllReduceCalls(16)
  const r = request()
  const entry = cache.remember(r, [stream], processPrepared, info)
  assert.equal(cache.find(r), entry)
  assert.equal(cache.find(request()), entry, 'an equal fresh object')
  assert.equal(cache.find(request({ op: 'sum', pdl: false, fallback: true, algorithm: 'auto' })), entry, 'defaults')
  for (const [field, changes] of Object.entries(PROCESS_CHANGES))
    for (const changed of changes)
      assert.equal(cache.find(request(changed)), undefined, `${field}: ${String(Object.values(changed)[0])}`)
  // the caller's own object changed in place after the call: the key is a copy, so it misses
  r.count = 8
  assert.equal(cache.find(r), undefined, 'request mutated in place')
})

test('per-process deviceAllReduce: the cache keeps the size it is given (16), the oldest replaced first', () => {
  const cache = processDeviceAllReduceCalls(16)
  for (let i = 0; i <= 16; i++) cache.remember(request({ count: i + 1 }), [stream], processPrepared, info)
  assert.equal(cache.size, 16)
  assert.equal(cache.find(request({ count: 1 })), undefined, 'the first one went')
  for (let i = 1; i <= 16; i++) assert.ok(cache.find(request({ count: i + 1 })), `count ${i + 1}`)
  assert.throws(() => processDeviceAllReduceCalls(0), RangeError)
})

// ---- the per-process communicator's fused calls ----

function processNorm(over: Partial<ProcessDeviceAllReduceRmsNormRequest> = {}): ProcessDeviceAllReduceRmsNormRequest {
  return {
    input: ptr(0),
    residual: ptr(1),
    output: ptr(2),
    weight: ptr(3),
    rows: 4,
    hidden: 4096,
    eps: 1e-5,
    dtype: 'bf16',
    stream: 0x4000,
    ...over,
  }
}

const PROCESS_NORM_CHANGES: ChangeTable<ProcessDeviceAllReduceRmsNormRequest> = {
  // a bigint for the same address is another key (re-packed, never a wrong reuse)
  input: [{ input: ptr(9) }, { input: BigInt(ptr(0)) }],
  residual: [{ residual: ptr(9) }],
  output: [{ output: ptr(9) }],
  weight: [{ weight: ptr(9) }],
  rows: [{ rows: 5 }],
  hidden: [{ hidden: 8192 }],
  eps: [{ eps: 1e-6 }, { eps: -0 }],
  dtype: [{ dtype: 'f16' }],
  residualF32: [{ residualF32: true }],
  noResidualIn: [{ noResidualIn: true }],
  algorithm: [{ algorithm: 'split' }],
  pdl: [{ pdl: true }],
  outDtype: [{ outDtype: 'e4m3' }],
  outScale: [{ outScale: 2 }, { outScale: -0 }],
  stream: [{ stream: 0x4001 }, { stream: 0 }, { stream: undefined }],
}

test('per-process deviceAllReduceRmsNorm: a request is reused only when every field equals the packed one', () => {
  const cache = processFusedNormCalls(16)
  const r = processNorm()
  const entry = cache.remember(r, [stream], fusedPrepared, fusedInfo)
  assert.equal(cache.find(r), entry)
  assert.equal(cache.find(processNorm()), entry, 'an equal fresh object')
  assert.equal(
    cache.find(processNorm({ residualF32: false, noResidualIn: false, algorithm: 'auto', pdl: false, outScale: 1 })),
    entry,
    'the defaults',
  )
  for (const [field, changes] of Object.entries(PROCESS_NORM_CHANGES))
    for (const changed of changes)
      assert.equal(cache.find(processNorm(changed)), undefined, `${field}: ${String(Object.values(changed)[0])}`)
  r.rows = 8
  assert.equal(cache.find(r), undefined, 'request mutated in place')
})

function processMany(over: Partial<ProcessDeviceAllReduceManyRequest> = {}): ProcessDeviceAllReduceManyRequest {
  return { inputs: [ptr(0), ptr(1)], outputs: [ptr(2), ptr(3)], counts: [4096, 37], dtype: 'bf16', ...over }
}

const PROCESS_MANY_CHANGES: ChangeTable<ProcessDeviceAllReduceManyRequest> = {
  inputs: [{ inputs: [ptr(0), ptr(9)] }, { inputs: [ptr(0)] }, { inputs: [ptr(0), BigInt(ptr(1))] }],
  outputs: [{ outputs: [ptr(3), ptr(2)] }],
  counts: [{ counts: [4096, 38] }, { counts: [4096] }],
  dtype: [{ dtype: 'f32' }],
  pdl: [{ pdl: true }],
  stream: [{ stream: 0x4001 }, { stream: 0 }],
}

test('per-process deviceAllReduceMany: reused only when every field equals the packed one; the key copies the arrays', () => {
  const cache = processAllReduceManyCalls(16)
  const r = processMany()
  const entry = cache.remember(r, [stream], fusedPrepared, fusedInfo)
  assert.equal(cache.find(r), entry)
  assert.equal(cache.find(processMany({ pdl: false })), entry, 'an equal fresh object, the default pdl')
  for (const [field, changes] of Object.entries(PROCESS_MANY_CHANGES))
    for (const changed of changes)
      assert.equal(
        cache.find(processMany(changed)),
        undefined,
        `${field}: ${JSON.stringify(changed, (_, v) => (typeof v === 'bigint' ? `${v}n` : v))}`,
      )
  r.counts[1] = 38
  assert.equal(cache.find(r), undefined, 'counts changed in place')
})
