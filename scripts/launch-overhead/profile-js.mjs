#!/usr/bin/env node
// The JS share of one eager launch, measured without a GPU: llcomm's per-call path with the driver replaced by a
// stand-in whose cuLaunchKernelEx is a real koffi call of the same signature (libc memcmp(a, b, 0, x): four
// uint64_t numbers in, an int out, returns 0 at once), so koffi's crossing cost is inside the figures.
//
//   node --expose-gc --max-semi-space-size=64 scripts/launch-overhead/profile-js.mjs [--calls 200000] [--noop]
//
// --noop replaces the koffi stand-in by a JS function returning 0, so what is left is llcomm's own per-call JS.
// --evict KB: before every timed call, KB kilobytes of native memory are written (libc memset, untimed): a crude
// model of the driver's own memory traffic between two launches, which evicts from the core's caches what the JS
// side touches (docs/launch-overhead.md: on the GPU machine llcomm's layers cost 3-4 x their instruction cost). Each
// call is then timed alone (performance.now() around it; the `timer floor` row is an empty call timed the same way)
// and a row's figure is the median over calls (median of 5 repetitions); two more rows time the eager path's own
// pieces: the communicator's open check and the eager-call cache's lookup. Only the data caches are modelled: a
// memset evicts no instructions from L1i.
//
// Prints ns per call and heap bytes per call (used-heap growth over a window with no GC; -1 when a GC ran inside
// the window) for: the bare koffi call, PreparedLaunch.launch(), prepareDeviceAllReduce().issue(),
// deviceAllReduce(args) with the same args object, and deviceAllReduce({...}) with a fresh args object each call;
// the same for the fused AllReduce + residual + RMSNorm (prepareDeviceAllReduceRmsNorm().issue(), the eager
// deviceAllReduceRmsNorm with the same / a fresh args object, and prepare+issue per call: the eager path before its
// cache, with CALLS / 100 calls).
import { parseArgs } from 'node:util'
import v8 from 'node:v8'
import koffi from 'koffi'

const { values: opts } = parseArgs({
  options: {
    calls: { type: 'string', default: '200000' },
    json: { type: 'boolean' },
    noop: { type: 'boolean' },
    evict: { type: 'string', default: '0' },
  },
})
const CALLS = Number(opts.calls)
const EVICT_BYTES = Number(opts.evict) * 1024
if (!Number.isInteger(EVICT_BYTES) || EVICT_BYTES < 0) throw new RangeError(`--evict ${opts.evict}: kilobytes, >= 0`)

const { AllReduceLauncher, deviceAllReduceCalls, FusedLauncher, fusedNormCalls, allReduceManyCalls } = await import(
  'llcomm/internal'
)
const { FUSED_NORM_PARAMS_LAYOUT, f32Bits } = await import('llcomm/internal')
const { CommunicatorBase, CudaCommunicator } = await import('llcomm/internal')
const { deviceBufferLayout } = await import('llcomm/internal')
const { loadTuningTable } = await import('llcomm/internal')

const libc = koffi.load('libc.so.6')
const launchStandIn = libc.func('int memcmp(uint64_t a, uint64_t b, uint64_t n, uint64_t unused)')
const memset = libc.func('uint64_t memset(uint64_t s, int c, uint64_t n)')
const evictAddress = EVICT_BYTES > 0 ? Number(koffi.address(koffi.alloc('uint8_t', EVICT_BYTES))) : 0
let evictRound = 0
const evict = () => memset(evictAddress, ++evictRound & 255, EVICT_BYTES)

let launches = 0
const fakeDriver = {
  cuLaunchKernelExRaw: (config, f, kernelParams, extra) => {
    launches++
    // --noop: a JS stand-in (no crossing), so the figures are llcomm's own layers alone
    return opts.noop ? 0 : launchStandIn(config, f, 0, extra + kernelParams)
  },
  setCurrent() {},
  occupancyMaxActiveBlocksPerSm: () => 1,
  setFunctionAttribute() {},
  streamQuery: () => true,
  error: (call, rc) => new Error(`${call} ${rc}`),
}
const group = {
  index: 0,
  ordinal: 0,
  device: 0,
  context: 0x1000,
  ranks: [0, 1],
  name: 'fake',
  smCount: 132,
  arch: 'sm_90',
  cooperativeLaunch: true,
}
const deviceSet = { groups: [group], rankGroup: [0, 0], multiDevice: false, use() {} }
const fakeModules = { function: () => 0x2000 }
const nranks = 2
const bufferBytes = 1 << 20
const layout = deviceBufferLayout(nranks, bufferBytes)
const state = {
  nranks,
  recvBuf: [0x7f0000000000, 0x7f0000200000],
  scratch: [0x7f0000400000, 0x7f0000500000],
  errorWord: 0x7f0000600000,
  timeoutNs: 10e9,
  bufferBytes,
  layout: { ll: layout.ll, sentinel: layout.sentinel, ll128: layout.ll128, plain: layout.plain },
}
const launcher = new AllReduceLauncher(fakeDriver, deviceSet, fakeModules, state)
// A communicator without a GPU: the prototype's methods over the fields its constructor would have set. Only the
// base's constructor runs (it installs the lifecycle state, CommunicatorBase's private fields); the cuda
// constructor, which would open the driver, does not.
const comm = Reflect.construct(CommunicatorBase, [], CudaCommunicator)
Object.assign(comm, {
  size: nranks,
  devices: [0, 0],
  algorithms: ['oneshot-ll', 'oneshot-sentinel', 'twoshot-sentinel', 'ring', 'oneshot-barrier', 'auto'],
  kernelAlgorithms: ['oneshot-ll', 'oneshot-sentinel', 'twoshot-sentinel', 'ring', 'oneshot-barrier'],
  timeoutMs: 10_000,
  bufferBytes,
  driver: fakeDriver,
  deviceSet,
  launcher,
  internalStreams: [0x3000],
  ncclReason: 'no NCCL in this profile',
  tuning: loadTuningTable(undefined),
  closed: false,
  broken: undefined,
  lastStreams: undefined,
  eagerCalls: deviceAllReduceCalls(), // the eager-call caches (eager-calls.ts)
  eagerNormCalls: fusedNormCalls(),
  eagerReferenceNormCalls: fusedNormCalls(),
  eagerManyCalls: allReduceManyCalls(),
  fusedLauncher: new FusedLauncher(fakeDriver, deviceSet, fakeModules, state),
  deterministic: false,
  // the capability table the resolver reads (every kernel serves every call here)
  capabilities: {
    backend: 'cuda',
    ranks: nranks,
    available: ['oneshot-ll', 'oneshot-sentinel', 'twoshot-sentinel', 'ring', 'oneshot-barrier'],
    cannotServe: () => undefined,
    autoPreference: ['oneshot-ll', 'oneshot-sentinel', 'twoshot-sentinel', 'ring'],
    fallbacks: ['ring'],
    tuning: loadTuningTable(undefined),
  },
  // pointer checks ask the driver about the allocation; the fake pointers here have none
  user: { checkDevicePointer() {} },
})

const stream = 0x4000
const inputs = [0x7e0000000000, 0x7e0000100000]
const outputs = [0x7e0000200000, 0x7e0000300000]
const COUNT = 4096
const args = {
  inputs,
  outputs,
  count: COUNT,
  dtype: 'bf16',
  algorithm: 'oneshot-ll',
  protocol: 'll8',
  pdl: false,
  fallback: false,
  stream,
}
const prepared = comm.prepareDeviceAllReduce(args)
prepared.issue()
const launch = [...launcher.launches.values()][0]
comm.deviceAllReduce(args) // packs the eager call, so that the lookup row below finds it

/** --evict: every call timed alone after the caches were evicted (untimed); the median over calls. */
function measureEvicted(name, f, calls) {
  for (let i = 0; i < Math.min(2000, calls); i++) {
    evict()
    f()
  }
  const perRep = []
  const ts = new Float64Array(calls)
  for (let rep = 0; rep < 5; rep++) {
    for (let i = 0; i < calls; i++) {
      evict()
      const t0 = performance.now()
      f()
      ts[i] = performance.now() - t0
    }
    ts.sort()
    perRep.push(ts[calls >> 1] * 1e6)
  }
  perRep.sort((a, b) => a - b)
  return { name, nsPerCallMedian: perRep[2], nsPerCallMin: perRep[0], heapBytesPerCall: Number.NaN }
}

function measure(name, f, calls = CALLS) {
  if (EVICT_BYTES > 0) return measureEvicted(name, f, calls)
  for (let i = 0; i < Math.min(20000, calls); i++) f() // warm-up: let the JIT settle
  const times = []
  for (let rep = 0; rep < 5; rep++) {
    const t0 = performance.now()
    for (let i = 0; i < calls; i++) f()
    times.push(((performance.now() - t0) * 1e6) / calls)
  }
  times.sort((a, b) => a - b)
  // Heap growth per call over a short window; run with a large young generation (--max-semi-space-size=64) so that
  // no scavenge falls inside it. A shrinking heap means one did: reported as -1.
  globalThis.gc?.()
  const window = Math.min(2000, calls)
  const before = v8.getHeapStatistics().used_heap_size
  for (let i = 0; i < window; i++) f()
  const after = v8.getHeapStatistics().used_heap_size
  const bytesPerCall = after >= before ? (after - before) / window : -1
  return { name, nsPerCallMedian: times[2], nsPerCallMin: times[0], heapBytesPerCall: bytesPerCall }
}

const rows = [
  ...(EVICT_BYTES > 0
    ? [
        measure('timer floor (an empty call)', () => 0),
        measure('communicator open check (assertOpen)', () => comm.assertOpen()),
        measure('eager-call cache lookup (find)', () => comm.eagerCalls.find(args)),
        (() => {
          const entry = comm.eagerCalls.find(args)
          return measure('the cached entry: issue(its streams)', () => entry.prepared.issue(entry.streams))
        })(),
      ]
    : []),
  measure('koffi memcmp stand-in (4 × uint64 → int)', () => launchStandIn(0x7f0000000000, 0x2000, 0, 0x7f0000000100)),
  measure('PreparedLaunch.launch()', () => launch.launch()),
  measure('prepareDeviceAllReduce().issue()', () => prepared.issue()),
  measure('deviceAllReduce(args) same object', () => comm.deviceAllReduce(args)),
  measure('deviceAllReduce({...}) fresh object', () =>
    comm.deviceAllReduce({
      inputs,
      outputs,
      count: COUNT,
      dtype: 'bf16',
      algorithm: 'oneshot-ll',
      protocol: 'll8',
      pdl: false,
      fallback: false,
      stream,
    }),
  ),
]

// The fused call (fused-launcher.ts): 2 ranks, 4 rows of 4096 bf16, the one-shot kernel.
const fusedArgs = {
  inputs,
  residuals: [0x7e0000400000, 0x7e0000500000],
  outputs: [0x7e0000600000, 0x7e0000700000],
  weights: [0x7e0000800000, 0x7e0000900000],
  rows: 4,
  hidden: 4096,
  eps: 1e-5,
  dtype: 'bf16',
  algorithm: 'oneshot',
  stream,
}
const fusedPrepared = comm.prepareDeviceAllReduceRmsNorm(fusedArgs)
rows.push(
  measure('prepareDeviceAllReduceRmsNorm().issue()', () => fusedPrepared.issue()),
  measure('deviceAllReduceRmsNorm(args) same object', () => comm.deviceAllReduceRmsNorm(fusedArgs)),
  measure('deviceAllReduceRmsNorm({...}) fresh object', () =>
    comm.deviceAllReduceRmsNorm({
      inputs,
      residuals: fusedArgs.residuals,
      outputs: fusedArgs.outputs,
      weights: fusedArgs.weights,
      rows: 4,
      hidden: 4096,
      eps: 1e-5,
      dtype: 'bf16',
      algorithm: 'oneshot',
      stream,
    }),
  ),
  measure(
    'fused prepare+issue per call (old eager path)',
    () => comm.prepareDeviceAllReduceRmsNorm(fusedArgs).issue(),
    Math.max(1, Math.floor(CALLS / 100)),
  ),
)
if (launches === 0) throw new Error('the stand-in launch was never called')

// Self-check of the eager-call cache (communicator.ts): the launched parameter bytes must follow the arguments, also
// when the caller rewrites its own pointer array in place between calls.
const paramsHold = (ptr) => {
  const { bytes } = launch.snapshot()
  const v = new DataView(bytes.buffer, 256, launch.paramBytes)
  for (let off = 0; off + 8 <= launch.paramBytes; off += 8) if (v.getBigUint64(off, true) === BigInt(ptr)) return true
  return false
}
const reused = [...outputs]
comm.deviceAllReduce({ ...args, outputs: reused })
if (!paramsHold(outputs[1])) throw new Error('cache check: output pointer missing from the launched params')
reused[1] = 0x7e0000400000
comm.deviceAllReduce({ ...args, outputs: reused })
if (!paramsHold(0x7e0000400000) || paramsHold(outputs[1]))
  throw new Error('cache check: an in-place change of the outputs array was not re-packed')
comm.deviceAllReduce(args)
if (!paramsHold(outputs[1])) throw new Error('cache check: switching back to the first call did not restore its params')
console.log('eager-call cache check: parameters follow the arguments (3 calls)')

// The same for the fused call: its launch's weight pointers and eps follow the arguments, also changed in place.
const fusedLaunch = [...comm.fusedLauncher.configs.values()][0]
const fusedField = (name, i = 0) => {
  const { bytes } = fusedLaunch.snapshot()
  const f = FUSED_NORM_PARAMS_LAYOUT.byName[name]
  // the parameter struct ends the launch's native block (ffi/launch.ts)
  const v = new DataView(bytes.buffer, bytes.byteLength - fusedLaunch.paramBytes, fusedLaunch.paramBytes)
  return f.kind === 'u64' ? Number(v.getBigUint64(f.offset + 8 * i, true)) : v.getUint32(f.offset, true)
}
const fusedReused = { ...fusedArgs, weights: [...fusedArgs.weights] }
comm.deviceAllReduceRmsNorm(fusedReused)
if (fusedField('weight', 1) !== fusedArgs.weights[1]) throw new Error('fused cache check: weight pointer missing')
fusedReused.weights[1] = 0x7e0000a00000
comm.deviceAllReduceRmsNorm(fusedReused)
if (fusedField('weight', 1) !== 0x7e0000a00000)
  throw new Error('fused cache check: an in-place change of the weights array was not re-packed')
fusedReused.eps = 1e-3
comm.deviceAllReduceRmsNorm(fusedReused)
if (fusedField('epsBits') !== f32Bits(1e-3)) throw new Error('fused cache check: a changed eps was not re-packed')
comm.deviceAllReduceRmsNorm(fusedArgs)
if (fusedField('weight', 1) !== fusedArgs.weights[1] || fusedField('epsBits') !== f32Bits(1e-5))
  throw new Error('fused cache check: switching back to the first call did not restore its params')
console.log('fused eager-call cache check: parameters follow the arguments (4 calls)')
if (opts.json)
  console.log(JSON.stringify({ node: process.version, calls: CALLS, evictKB: EVICT_BYTES / 1024, rows }, null, 1))
for (const r of rows) {
  console.log(
    `${r.name.padEnd(44)} ${r.nsPerCallMedian.toFixed(1).padStart(9)} ns/call (min ${r.nsPerCallMin.toFixed(1)})  ${Number.isNaN(r.heapBytesPerCall) ? '' : r.heapBytesPerCall < 0 ? 'GC in window' : `${r.heapBytesPerCall.toFixed(0)} heap bytes/call`}`,
  )
}
