// Long runs on device buffers: 100,000 back-to-back calls with per-rank skew (graph replays of spin + AllReduce),
// 10,000 replays of captured graphs with fresh data each replay, and a provoked device timeout.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { AlgorithmName, Dtype, TensorArray } from '../../src/api/types.js'
import { DTYPE_BYTES } from '../../src/api/types.js'
import { packSpinParams } from '../../src/backends/cuda/abi.js'
import { type CudaCommunicator, createCudaCommunicator } from '../../src/backends/cuda/communicator.js'
import { countWrong, numericModel, ranksAgreeBitwise, referenceSum } from '../../src/backends/cuda/reference.js'
import { type CuStream, cudaDriver, type DevicePtr, PreparedLaunch } from '../../src/ffi/index.js'
import { makeInput, ON_GPU, REDUCED, recordCase, rng } from './gpu-harness.js'

const POISON = 0x7fbfdead // a NaN pattern the kernels never write
const KERNEL_ALGORITHMS: AlgorithmName[] = [
  'oneshot-ll',
  'oneshot-sentinel',
  'twoshot-sentinel',
  'twoshot-atomic',
  'oneshot-barrier',
  'ring',
]

interface RankBuffers {
  inputs: DevicePtr[]
  outputs: DevicePtr[]
  host: TensorArray[]
}

/** Allocates one set of per-rank input/output buffers on device 0 (virtual ranks) filled with fresh data. */
function makeSet(comm: CudaCommunicator, dtype: Dtype, count: number, seed: number, free: DevicePtr[]): RankBuffers {
  const d = cudaDriver()
  const bytes = count * DTYPE_BYTES[dtype]
  const random = rng(seed)
  const set: RankBuffers = { inputs: [], outputs: [], host: [] }
  for (let r = 0; r < comm.size; r++) {
    const x = makeInput(dtype, count, 'random', r, random)
    const i = d.memAlloc(Math.ceil(bytes / 256) * 256)
    const o = d.memAlloc(Math.ceil(bytes / 256) * 256)
    free.push(i, o)
    d.copyHtoD(i, x, bytes)
    d.memsetD32(o, POISON, Math.ceil(bytes / 4))
    set.inputs.push(i)
    set.outputs.push(o)
    set.host.push(x)
  }
  return set
}

function checkSet(
  comm: CudaCommunicator,
  set: RankBuffers,
  outputs: readonly DevicePtr[],
  dtype: Dtype,
  count: number,
  algorithm: AlgorithmName,
): { wrong: number; disagreeAt: number } {
  const d = cudaDriver()
  const bytes = count * DTYPE_BYTES[dtype]
  const outs = outputs.map((p) => {
    const o = dtype === 'f32' ? new Float32Array(count) : new Uint16Array(count)
    d.copyDtoH(o, p, bytes)
    return o
  })
  const ref = referenceSum(set.host, dtype, count)
  let wrong = 0
  for (const o of outs) wrong += countWrong(o, ref, comm.size, dtype, count, numericModel(algorithm, dtype))
  return { wrong, disagreeAt: ranksAgreeBitwise(outs, count) }
}

test('100,000 back-to-back calls with per-rank skew (graph replays of spin + AllReduce)', {
  skip: !ON_GPU,
}, async () => {
  const ranks = 8
  const dtype: Dtype = 'f32'
  const count = 1000
  const callsPerGraph = 100
  const replays = REDUCED ? 10 : 1000
  const comm = await createCudaCommunicator({ backend: 'cuda', devices: new Array(ranks).fill(0), timeoutMs: 5000 })
  const d = cudaDriver()
  const free: DevicePtr[] = []
  const failures: string[] = []
  try {
    const algorithms = KERNEL_ALGORITHMS.filter((a) => comm.algorithms.includes(a))
    const stream = d.streamCreate()
    // Spin kernel: random per-rank delays (0..3 µs) per call, one row per call of the graph.
    const { toolKernel } = await import('../../src/backends/cuda/tool-kernels.js')
    const spin = toolKernel('llcomm_spin_ns')
    const delays = new BigUint64Array(callsPerGraph * ranks)
    const random = rng(4242)
    for (let i = 0; i < delays.length; i++) delays[i] = BigInt(Math.floor(random() * 3000))
    const delaysDev = d.memAlloc(delays.byteLength)
    free.push(delaysDev)
    d.copyHtoD(delaysDev, delays)
    // The spin kernel is compiled through the communicator's module cache by running a benchmark-free path:
    // load it with the same NVRTC options through a tiny communicator-independent KernelModules.
    const { KernelModules } = await import('../../src/backends/cuda/modules.js')
    const { DeviceSet } = await import('../../src/backends/cuda/devices.js')
    const { kernelSources } = await import('../../src/backends/cuda/kernel-table.js')
    const { nvrtc } = await import('../../src/ffi/index.js')
    const devs = new DeviceSet(d, [0])
    const mods = new KernelModules(d, nvrtc(), { headers: kernelSources() })
    const spinFn = mods.function(devs.groups[0], spin.sourceFile, spin.kernelName)
    const spinLaunch = new PreparedLaunch(
      d,
      spinFn,
      spin.kernelName,
      { gridDimX: ranks, blockDimX: 32, sharedBytes: 0 },
      { cooperative: false, pdl: false },
      88,
    )
    const spinParams = Array.from(
      { length: callsPerGraph },
      (_, c) =>
        new Uint8Array(
          packSpinParams({
            delayNs: BigInt(delaysDev + c * ranks * 8),
            maxDelayNs: 3000,
            blocksPerRank: 1,
            ranksInLaunch: ranks,
            launchRanks: [...Array(ranks).keys()],
          }),
        ),
    )
    for (const algorithm of algorithms) {
      const sets = [0, 1, 2, 3].map((k) => makeSet(comm, dtype, count, 9000 + k, free))
      const calls = sets.map((s) =>
        comm.prepareDeviceAllReduce({
          inputs: s.inputs,
          outputs: s.outputs,
          count,
          dtype,
          algorithm,
          fallback: false,
          stream,
        }),
      )
      const { CapturedGraph } = await import('../../src/backends/cuda/graph.js')
      const graph = CapturedGraph.capture(
        d,
        [stream],
        () => {},
        () => {
          for (let c = 0; c < callsPerGraph; c++) {
            spinLaunch.setParams(spinParams[c])
            spinLaunch.launchOn(stream)
            calls[c % 4].issue([stream])
          }
        },
      )
      const sampleAt = new Set([Math.floor(replays / 7), Math.floor(replays / 3), Math.floor(replays / 2), replays - 1])
      let checked = 0
      let bad = 0
      const t0 = performance.now()
      for (let i = 0; i < replays; i++) {
        graph.replay(stream)
        if (sampleAt.has(i)) {
          d.streamSynchronize(stream)
          comm.checkDeviceError()
          for (const s of sets) {
            const r = checkSet(comm, s, s.outputs, dtype, count, algorithm)
            checked++
            if (r.wrong > 0 || r.disagreeAt >= 0) bad++
            for (const o of s.outputs) d.memsetD32Async(o, POISON, count, stream) // next sample must see fresh writes
          }
        }
      }
      d.streamSynchronize(stream)
      const ms = performance.now() - t0
      graph.destroy()
      const passed = bad === 0 && checked > 0
      recordCase({
        name: `back-to-back/skew/${algorithm}`,
        passed,
        ranks,
        calls: replays * callsPerGraph,
        samplesChecked: checked,
        samplesBad: bad,
        ms,
      })
      if (!passed) failures.push(`${algorithm}: ${bad}/${checked} sampled sets wrong`)
    }
    spinLaunch.dispose()
    mods.unloadAll()
    devs.release()
    d.streamDestroy(stream)
  } catch (e) {
    const err = e as Error & { code?: string }
    recordCase({ name: 'back-to-back/skew', passed: false, error: `${err.code ?? ''} ${err.message}` })
    throw e
  } finally {
    for (const p of free.reverse()) d.memFree(p)
    await comm.close()
  }
  assert.deepEqual(failures, [])
})

test('10,000 replays of captured graphs with fresh data each replay', { skip: !ON_GPU }, async () => {
  const ranks = 4
  const dtype: Dtype = 'bf16'
  const count = 2049
  const pool = 8 // graphs G_k: copy pool set k into the inputs, AllReduce, copy the outputs to results[k]
  const replays = REDUCED ? 200 : 10_000
  const checkEvery = REDUCED ? 100 : 1000
  const comm = await createCudaCommunicator({ backend: 'cuda', devices: new Array(ranks).fill(0), timeoutMs: 5000 })
  const d = cudaDriver()
  const free: DevicePtr[] = []
  const failures: string[] = []
  const bytes = count * DTYPE_BYTES[dtype]
  const { CapturedGraph } = await import('../../src/backends/cuda/graph.js')
  try {
    const stream: CuStream = d.streamCreate()
    const algorithms = KERNEL_ALGORITHMS.filter((a) => comm.algorithms.includes(a))
    for (const algorithm of algorithms) {
      const sets = Array.from({ length: pool }, (_, k) => makeSet(comm, dtype, count, 500 + k, free))
      const work = makeSet(comm, dtype, count, 1, free) // the buffers the collective runs on
      const call = comm.prepareDeviceAllReduce({
        inputs: work.inputs,
        outputs: work.outputs,
        count,
        dtype,
        algorithm,
        fallback: false,
        stream,
      })
      const graphs = sets.map((s) =>
        CapturedGraph.capture(
          d,
          [stream],
          () => {},
          () => {
            for (let r = 0; r < ranks; r++) d.copyDtoDAsync(work.inputs[r], s.inputs[r], bytes, stream)
            call.issue([stream])
            for (let r = 0; r < ranks; r++) d.copyDtoDAsync(s.outputs[r], work.outputs[r], bytes, stream)
          },
        ),
      )
      let bad = 0
      let checked = 0
      const t0 = performance.now()
      for (let i = 0; i < replays; i++) {
        graphs[i % pool].replay(stream)
        if ((i + 1) % checkEvery === 0) {
          d.streamSynchronize(stream)
          comm.checkDeviceError()
          for (const s of sets) {
            const r = checkSet(comm, s, s.outputs, dtype, count, algorithm)
            checked++
            if (r.wrong > 0 || r.disagreeAt >= 0) bad++
            for (const o of s.outputs) d.memsetD32Async(o, POISON, Math.ceil(bytes / 4), stream)
          }
        }
      }
      d.streamSynchronize(stream)
      const ms = performance.now() - t0
      for (const g of graphs) g.destroy()
      const passed = bad === 0 && checked >= pool
      recordCase({
        name: `graph-replay/fresh-data/${algorithm}`,
        passed,
        ranks,
        dtype,
        count,
        replays,
        setsChecked: checked,
        setsBad: bad,
        ms,
      })
      if (!passed) failures.push(`${algorithm}: ${bad}/${checked} checked sets wrong`)
    }
    d.streamDestroy(stream)
  } catch (e) {
    const err = e as Error & { code?: string }
    recordCase({ name: 'graph-replay/fresh-data', passed: false, error: `${err.code ?? ''} ${err.message}` })
    throw e
  } finally {
    for (const p of free.reverse()) d.memFree(p)
    await comm.close()
  }
  assert.deepEqual(failures, [])
})

test('a peer that never arrives becomes TIMEOUT naming rank, peer and epoch', { skip: !ON_GPU }, async () => {
  const comm = await createCudaCommunicator({ backend: 'cuda', devices: [0, 0], timeoutMs: 200 })
  const d = cudaDriver()
  try {
    const x = [Float32Array.from([1, 2, 3, 4]), Float32Array.from([5, 6, 7, 8])]
    const ok = await comm.allReduce(x, { algorithm: 'oneshot-ll', dtype: 'f32', fallback: false })
    assert.deepEqual([...ok[0]], [6, 8, 10, 12])
    // Rank 1's channel epochs jump ahead (scratch offset 0 holds the epochs): its packets carry flags rank 0 never
    // waits for, and it waits for flags rank 0 never sends, so both ranks' waits reach the deadline.
    d.memsetD32(comm.deviceBuffersOf(1).scratch, 0x5555, 64)
    const t0 = performance.now()
    await assert.rejects(
      comm.allReduce(x, { algorithm: 'oneshot-ll', dtype: 'f32', fallback: false }),
      (e: Error & { code?: string; details?: Record<string, unknown> }) => {
        assert.equal(e.code, 'TIMEOUT')
        assert.ok([0, 1].includes(e.details?.rank as number), `rank named: ${e.message}`)
        assert.ok([0, 1].includes(e.details?.peer as number), `peer named: ${e.message}`)
        assert.equal(typeof e.details?.epoch, 'number')
        recordCase({ name: 'timeout/provoked', passed: true, message: e.message, ms: performance.now() - t0 })
        return true
      },
    )
    await assert.rejects(
      comm.allReduce(x),
      (e: Error & { code?: string }) => e.code === 'TIMEOUT',
      'poisoned after a timeout, until recover()',
    )
    await comm.recover()
    const again = await comm.allReduce(x, { algorithm: 'oneshot-ll', dtype: 'f32', fallback: false })
    assert.deepEqual([...again[1]], [6, 8, 10, 12])
  } finally {
    await comm.close()
  }
})

test('a call on a second stream while the first still has one in flight fails at once with BUSY', {
  skip: !ON_GPU,
}, async () => {
  const ranks = 2
  const comm = await createCudaCommunicator({ backend: 'cuda', devices: [0, 0], timeoutMs: 5000 })
  const d = cudaDriver()
  const free: DevicePtr[] = []
  const { KernelModules } = await import('../../src/backends/cuda/modules.js')
  const { DeviceSet } = await import('../../src/backends/cuda/devices.js')
  const { kernelSources } = await import('../../src/backends/cuda/kernel-table.js')
  const { toolKernel } = await import('../../src/backends/cuda/tool-kernels.js')
  const { nvrtc } = await import('../../src/ffi/index.js')
  const devs = new DeviceSet(d, [0])
  const mods = new KernelModules(d, nvrtc(), { headers: kernelSources() })
  const spin = toolKernel('llcomm_spin_ns')
  const a = d.streamCreate()
  const b = d.streamCreate()
  try {
    const set = makeSet(comm, 'f32', 64, 3, free)
    const delays = BigUint64Array.from([1_000_000_000n, 1_000_000_000n]) // 1 s on both ranks
    const delaysDev = d.memAlloc(16)
    free.push(delaysDev)
    d.copyHtoD(delaysDev, delays)
    const f = mods.function(devs.groups[0], spin.sourceFile, spin.kernelName)
    const launch = new PreparedLaunch(
      d,
      f,
      spin.kernelName,
      { gridDimX: ranks, blockDimX: 32, sharedBytes: 0 },
      { cooperative: false, pdl: false },
      88,
    )
    launch.setParams(
      new Uint8Array(
        packSpinParams({
          delayNs: BigInt(delaysDev),
          maxDelayNs: 1_000_000_000,
          blocksPerRank: 1,
          ranksInLaunch: ranks,
          launchRanks: [0, 1],
        }),
      ),
    )
    // Warm the communicator's kernel on stream b first, so nothing slow (module load) happens after the spin.
    comm.deviceAllReduce({
      inputs: set.inputs,
      outputs: set.outputs,
      count: 64,
      dtype: 'f32',
      algorithm: 'oneshot-sentinel',
      stream: b,
    })
    d.streamSynchronize(b)
    const t0 = performance.now()
    launch.launchOn(a)
    comm.deviceAllReduce({
      inputs: set.inputs,
      outputs: set.outputs,
      count: 64,
      dtype: 'f32',
      algorithm: 'oneshot-sentinel',
      stream: a,
    })
    const aBusyBefore = !d.streamQuery(a)
    let code = 'none'
    try {
      comm.deviceAllReduce({
        inputs: set.inputs,
        outputs: set.outputs,
        count: 64,
        dtype: 'f32',
        algorithm: 'oneshot-sentinel',
        stream: b,
      })
    } catch (e) {
      code = (e as Error & { code?: string }).code ?? 'other'
    }
    const msSinceSpin = performance.now() - t0
    d.streamSynchronize(a)
    const spinMs = performance.now() - t0
    recordCase({
      name: 'concurrency/busy-diagnostics',
      passed: code === 'BUSY',
      aBusyBefore,
      code,
      msSinceSpin,
      spinMs,
    })
    assert.equal(
      code,
      'BUSY',
      `stream a busy before the call: ${aBusyBefore}, ${msSinceSpin.toFixed(1)} ms after the spin launch, spin took ${spinMs.toFixed(1)} ms`,
    )
    comm.deviceAllReduce({
      inputs: set.inputs,
      outputs: set.outputs,
      count: 64,
      dtype: 'f32',
      algorithm: 'oneshot-sentinel',
      stream: b,
    })
    d.streamSynchronize(b)
    comm.checkDeviceError()
    const r = checkSet(comm, set, set.outputs, 'f32', 64, 'oneshot-sentinel')
    launch.dispose()
    recordCase({ name: 'concurrency/second-stream-busy', passed: r.wrong === 0 && r.disagreeAt < 0 })
    assert.equal(r.wrong, 0)
  } finally {
    d.streamSynchronize(a)
    d.streamSynchronize(b)
    d.streamDestroy(a)
    d.streamDestroy(b)
    for (const p of free.reverse()) d.memFree(p)
    mods.unloadAll()
    devs.release()
    await comm.close()
  }
})
