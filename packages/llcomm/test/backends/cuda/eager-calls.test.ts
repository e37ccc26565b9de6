// The eager deviceAllReduce cache (backends/cuda/eager-calls.ts) without a GPU: a call is reused only when every
// argument equals what it was packed for, the caller's arrays are copied, and the oldest entry goes first.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { DeviceAllReduceArgs, PreparedDeviceAllReduce } from '../../../src/backends/cuda/device-call.js'
import { EAGER_CALLS_KEPT, EagerCallCache } from '../../../src/backends/cuda/eager-calls.js'
import type { CuStream, DevicePtr } from '../../../src/ffi/types.js'

const ptr = (n: number) => (0x7e0000000000 + n * 0x100000) as DevicePtr
const stream = 0x4000 as CuStream
const prepared: PreparedDeviceAllReduce = { algorithm: 'oneshot-ll', chunks: 1, issue: () => {} }
const info = { algorithm: 'oneshot-ll' as const, chunks: 1 }

function args(over: Partial<DeviceAllReduceArgs> = {}): DeviceAllReduceArgs {
  return { inputs: [ptr(0), ptr(1)], outputs: [ptr(2), ptr(3)], count: 4096, dtype: 'bf16', stream, ...over }
}

test('a call is reused only when every argument equals the packed one', () => {
  const cache = new EagerCallCache()
  const a = args()
  const entry = cache.remember(a, [stream], prepared, info)
  assert.equal(cache.find(a), entry)
  assert.equal(cache.find(args()), entry, 'an equal fresh object')
  assert.equal(cache.find(args({ op: 'sum', pdl: false, fallback: true, algorithm: 'auto' })), entry, 'the defaults')
  for (const changed of [
    { count: 4097 },
    { dtype: 'f16' as const },
    { algorithm: 'ring' as const },
    { protocol: 'll16' as const },
    { pdl: true },
    { fallback: false },
    { fallback: 'nccl' as const },
    { deterministic: true },
    { stream: 0x4001 as CuStream },
    { streams: [stream] },
    { inputs: [ptr(0), ptr(9)] },
    { outputs: [ptr(2)] },
  ])
    assert.equal(cache.find(args(changed)), undefined, JSON.stringify(changed))
})

test('the cache keeps copies: a caller rewriting its own pointer array misses', () => {
  const cache = new EagerCallCache()
  const a = args()
  cache.remember(a, [stream], prepared, info)
  ;(a.outputs as DevicePtr[])[1] = ptr(7)
  assert.equal(cache.find(a), undefined)
})

test(`at most ${EAGER_CALLS_KEPT} calls stay packed, the oldest replaced first`, () => {
  const cache = new EagerCallCache()
  for (let i = 0; i <= EAGER_CALLS_KEPT; i++) cache.remember(args({ count: i + 1 }), [stream], prepared, info)
  assert.equal(cache.size, EAGER_CALLS_KEPT)
  assert.equal(cache.find(args({ count: 1 })), undefined, 'the first one went')
  for (let i = 1; i <= EAGER_CALLS_KEPT; i++) assert.ok(cache.find(args({ count: i + 1 })), `count ${i + 1}`)
  cache.clear()
  assert.equal(cache.size, 0)
})
