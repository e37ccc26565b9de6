// The GPU tests on distinct GPUs (issue 5, item 1), run when at least two GPUs are visible:
//   1. back-to-back eager calls with per-rank skew (spin kernel on every device's stream before each call), every
//      kernel algorithm (and nccl on one rank per GPU), bf16, four small counts in rotation, sampled
//      outputs checked against the float64 reference and bitwise across ranks;
//   2. graph replays with fresh inputs: one graph over every device's stream (fork/join events) and one graph per
//      device (captured at once on each device's stream), 2,000 replays each, checked every 500;
//   3. the LL16 torn-packet stress across NVLink: writer on GPU 0, reader on GPU 1, the packets on the reader's GPU
//      (llcomm's pattern: peers store into the receiver's buffer) and on the writer's (remote loads), both layouts;
//   4. the nccl and nccl-symmetric baselines through the communicator (driver view), and a mixed layout refusing
//      nccl without fallback and reporting the fallback with it.
// Layouts: one rank per GPU [0..n-1], two virtual ranks per GPU contiguous [0,0,1,1] and interleaved [0,1,0,1].
// Every case catches its own errors and records a failed case; waits on the device are polled against a deadline.
// Expected GPU time on 2 GPUs: well under a minute once the kernels are in the cubin cache (back-to-back cases stop
// at CASE_BUDGET_MS each, so the worst case is bounded at about 3 layouts x 7 algorithms x 4 s).
import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { AlgorithmName, Dtype, TensorArray } from '../../src/api/types.js'
import { DTYPE_BYTES } from '../../src/api/types.js'
import { packStressParams } from '../../src/backends/cuda/abi.js'
import { type CudaCommunicator, createCudaCommunicator } from '../../src/backends/cuda/communicator.js'
import { DeviceSet } from '../../src/backends/cuda/devices.js'
import { CapturedGraph } from '../../src/backends/cuda/graph.js'
import { kernelSources } from '../../src/backends/cuda/kernel-table.js'
import { DeviceAllocations } from '../../src/backends/cuda/memory.js'
import { KernelModules } from '../../src/backends/cuda/modules.js'
import { countWrong, numericModel, ranksAgreeBitwise, referenceSum } from '../../src/backends/cuda/reference.js'
import { SkewSpinner } from '../../src/backends/cuda/skew.js'
import { STRESS_LL16_KERNEL_NAME, toolKernel } from '../../src/backends/cuda/tool-kernels.js'
import {
  type CudaDriver,
  type CuGraph,
  type CuGraphExec,
  type CuStream,
  cudaDriver,
  type DevicePtr,
  nvrtc,
  PreparedLaunch,
} from '../../src/ffi/index.js'
import { makeInput, ON_GPU, type Pattern, REDUCED, recordCase, rng } from './gpu-harness.js'

const POISON = 0x7fbfdead // a NaN pattern the kernels never write
const KERNEL_ALGORITHMS: readonly AlgorithmName[] = [
  'oneshot-ll',
  'oneshot-sentinel',
  'twoshot-sentinel',
  'twoshot-atomic',
  'oneshot-barrier',
  'ring',
]
const NCCL_ALGORITHMS: readonly AlgorithmName[] = ['nccl', 'nccl-symmetric']
/** Device timeout of the communicators: a wait that long is a hang, not skew. */
const TIMEOUT_MS = 5000
/** Host-side bound on any wait for the streams (the kernels' own deadline is TIMEOUT_MS per wait). */
const SYNC_DEADLINE_MS = 30_000
/** Wall-clock budget per back-to-back case: calls stop early (recorded as truncated) past it. */
const CASE_BUDGET_MS = 4000

interface Layout {
  label: string
  devices: number[]
  /** Back-to-back calls per kernel algorithm. */
  calls: number
}

/** Number of visible GPUs, or the reason this file cannot run. */
function gpuCountOrReason(): { n: number } | { reason: string } {
  if (!ON_GPU) return { reason: 'LLCOMM_TEST_BACKEND is not cuda' }
  try {
    const n = cudaDriver().deviceCount()
    return n >= 2 ? { n } : { reason: `only ${n} GPU visible` }
  } catch (e) {
    return { reason: `no CUDA driver: ${(e as Error).message}` }
  }
}

function layoutsFor(n: number): Layout[] {
  const one = Array.from({ length: n }, (_, i) => i)
  const scale = REDUCED ? 0.05 : 1
  return [
    { label: `gpus${n}`, devices: one, calls: Math.round(20_000 * scale) },
    { label: `gpus${n}/mixed2x`, devices: one.flatMap((i) => [i, i]), calls: Math.round(20_000 * scale) },
    { label: `gpus${n}/interleaved2x`, devices: [...one, ...one], calls: Math.round(10_000 * scale) },
  ]
}

function errorText(e: unknown): string {
  const err = e as Error & { code?: string }
  return `${err?.code ?? ''} ${err?.message ?? String(e)}`.trim()
}

function isTimeout(e: unknown): boolean {
  return (e as { code?: string })?.code === 'TIMEOUT'
}

/**
 * Test-side view of the communicator's devices: our own DeviceSet (the same primary contexts), allocations freed
 * in reverse order, and a module cache for the tool kernels. Streams are created here, one per launch group.
 */
class DeviceSide {
  readonly driver: CudaDriver
  readonly devs: DeviceSet
  readonly allocs: DeviceAllocations
  readonly mods: KernelModules
  readonly streams: CuStream[] = []
  /** Set when a wait did not end: device memory may still be in use, so it is leaked rather than freed. */
  wedged = false

  constructor(devices: readonly number[]) {
    this.driver = cudaDriver()
    this.devs = new DeviceSet(this.driver, devices)
    this.allocs = new DeviceAllocations(this.driver)
    this.mods = new KernelModules(this.driver, nvrtc(), { headers: kernelSources() })
    for (const g of this.devs.groups) {
      this.devs.use(g)
      this.streams.push(this.driver.streamCreate())
    }
  }

  use(groupIndex: number): void {
    this.devs.use(this.devs.groups[groupIndex])
  }

  useRank(rank: number): number {
    const gi = this.devs.rankGroup[rank]
    this.use(gi)
    return gi
  }

  /**
   * Waits for each device's null-stream work (cuMemsetD32, and the DMA of cuMemcpyHtoD from pageable memory, may
   * still be running when those calls return): our streams are non-blocking and would not wait for it. Call only
   * with nothing of ours in flight (a blocking wait).
   */
  settleNullStreams(): void {
    for (const [i] of this.devs.groups.entries()) {
      this.use(i)
      this.driver.contextSynchronize()
    }
  }

  /** Waits for every stream by polling (never a blocking call that could outlive the deadline). */
  sync(deadlineMs = SYNC_DEADLINE_MS): void {
    const until = performance.now() + deadlineMs
    for (const [i, s] of this.streams.entries()) {
      this.use(i)
      while (!this.driver.streamQuery(s)) {
        if (performance.now() > until) {
          this.wedged = true
          throw new Error(`stream of device ${this.devs.groups[i].ordinal} still busy after ${deadlineMs} ms`)
        }
      }
    }
  }

  dispose(): void {
    try {
      if (!this.wedged) this.sync()
    } catch {
      // wedged: leave the memory allocated
    }
    if (!this.wedged) {
      for (const [i, s] of this.streams.entries()) {
        try {
          this.use(i)
          this.driver.streamDestroy(s)
        } catch {
          // keep releasing
        }
      }
      try {
        this.allocs.freeAll()
      } catch {
        // keep releasing
      }
    }
    try {
      if (!this.wedged) this.mods.unloadAll() // a kernel of these modules may still run while wedged
    } catch {
      // keep releasing
    }
    this.devs.release()
  }
}

interface RankSet {
  count: number
  inputs: DevicePtr[]
  outputs: DevicePtr[]
  host: TensorArray[]
}

/** Per-rank input/output buffers on each rank's own device, inputs filled with fresh data, outputs poisoned. */
function makeSet(side: DeviceSide, nranks: number, dtype: Dtype, count: number, seed: number): RankSet {
  const bytes = count * DTYPE_BYTES[dtype]
  const random = rng(seed)
  const set: RankSet = { count, inputs: [], outputs: [], host: [] }
  for (let r = 0; r < nranks; r++) {
    const x = makeInput(dtype, count, 'random', r, random)
    const ctx = side.devs.groups[side.devs.rankGroup[r]].context
    const i = side.allocs.alloc(ctx, bytes, `in[${r}]`)
    const o = side.allocs.alloc(ctx, bytes, `out[${r}]`)
    side.driver.copyHtoD(i, x, bytes)
    side.driver.memsetD32(o, POISON, Math.ceil(bytes / 4))
    set.inputs.push(i)
    set.outputs.push(o)
    set.host.push(x)
  }
  side.settleNullStreams()
  return set
}

/** Reads every rank's output; returns elements outside the error bound and the first cross-rank disagreement. */
function checkSet(
  side: DeviceSide,
  set: RankSet,
  dtype: Dtype,
  algorithm: AlgorithmName,
): { wrong: number; disagreeAt: number } {
  const { count } = set
  const bytes = count * DTYPE_BYTES[dtype]
  const outs = set.outputs.map((p, r) => {
    side.useRank(r)
    const o = dtype === 'f32' ? new Float32Array(count) : new Uint16Array(count)
    side.driver.copyDtoH(o, p, bytes)
    return o
  })
  const ref = referenceSum(set.host, dtype, count)
  let wrong = 0
  for (const o of outs) wrong += countWrong(o, ref, set.host.length, dtype, count, numericModel(algorithm, dtype))
  return { wrong, disagreeAt: ranksAgreeBitwise(outs, count) }
}

/** Poisons a set's outputs on each rank's stream, so the next check sees only writes made after it. */
function poisonOutputs(side: DeviceSide, set: RankSet, dtype: Dtype): void {
  const words = Math.ceil((set.count * DTYPE_BYTES[dtype]) / 4)
  for (const [r, o] of set.outputs.entries()) {
    const gi = side.useRank(r)
    side.driver.memsetD32Async(o, POISON, words, side.streams[gi])
  }
}

const DISTINCT = gpuCountOrReason()

test('distinct GPUs: back-to-back calls with per-rank skew', { skip: !ON_GPU }, async (t) => {
  if ('reason' in DISTINCT) {
    t.skip(DISTINCT.reason)
    return
  }
  const dtype: Dtype = 'bf16'
  const counts = [1000, 1, 4099, 257] // rotated call by call: different channel counts per call
  const failures: string[] = []
  for (const layout of layoutsFor(DISTINCT.n)) {
    let comm: CudaCommunicator | undefined
    let side: DeviceSide | undefined
    let spinner: SkewSpinner | undefined
    try {
      comm = await createCudaCommunicator({ backend: 'cuda', devices: layout.devices, timeoutMs: TIMEOUT_MS })
      side = new DeviceSide(layout.devices)
      const nranks = comm.size
      spinner = new SkewSpinner(side.driver, side.devs, side.allocs, side.mods, nranks, 128, 5000, rng(31))
      const offered = comm.algorithms.filter((a): a is AlgorithmName => a !== 'auto')
      const algorithms = [
        ...KERNEL_ALGORITHMS.filter((a) => offered.includes(a)),
        // nccl only: in the device view nccl-symmetric runs on the caller's buffers, which are not NCCL windows,
        // so it would be the same NCCL path under another name (its windows are tested in the driver view below).
        ...(['nccl'] as const).filter((a) => offered.includes(a)),
      ]
      for (const algorithm of algorithms) {
        const name = `${layout.label}/back-to-back/skew/${algorithm}`
        const planned = NCCL_ALGORITHMS.includes(algorithm) ? Math.min(2000, layout.calls) : layout.calls
        let calls = 0
        let checked = 0
        let bad = 0
        const t0 = performance.now()
        try {
          const sets = counts.map((count, k) => makeSet(side as DeviceSide, nranks, dtype, count, 9100 + k))
          const prepared = sets.map((s) =>
            (comm as CudaCommunicator).prepareDeviceAllReduce({
              inputs: s.inputs,
              outputs: s.outputs,
              count: s.count,
              dtype,
              algorithm,
              fallback: false,
              streams: (side as DeviceSide).streams,
            }),
          )
          const samples = new Set([
            Math.floor(planned / 7),
            Math.floor(planned / 3),
            Math.floor(planned / 2),
            planned - 1,
          ])
          const sample = () => {
            const s = side as DeviceSide
            s.sync()
            ;(comm as CudaCommunicator).checkDeviceError()
            for (const set of sets) {
              const r = checkSet(s, set, dtype, algorithm)
              checked++
              if (r.wrong > 0 || r.disagreeAt >= 0) bad++
              poisonOutputs(s, set, dtype)
            }
          }
          for (let c = 0; c < planned; c++) {
            spinner.issue(c, side.streams)
            prepared[c % prepared.length].issue(side.streams)
            calls++
            if (samples.has(c)) sample()
            else if (c % 1000 === 999 && performance.now() - t0 > CASE_BUDGET_MS) {
              // Over budget: the last four calls wrote every set since the previous poison; check them and stop.
              sample()
              break
            }
          }
          side.sync()
          comm.checkDeviceError()
          const ms = performance.now() - t0
          const passed = bad === 0 && checked >= sets.length
          recordCase({
            name,
            passed,
            ranks: nranks,
            devices: layout.devices,
            dtype,
            counts,
            calls,
            planned,
            truncated: calls < planned,
            maxSkewNs: 5000,
            samplesChecked: checked,
            samplesBad: bad,
            ms,
          })
          if (!passed) failures.push(`${name}: ${bad}/${checked} sampled sets wrong`)
        } catch (e) {
          recordCase({ name, passed: false, ranks: nranks, devices: layout.devices, calls, error: errorText(e) })
          failures.push(`${name}: ${errorText(e)}`)
          if (isTimeout(e) || side.wedged) break // the communicator (or the streams) cannot be trusted any more
        }
      }
    } catch (e) {
      recordCase({
        name: `${layout.label}/back-to-back/setup`,
        passed: false,
        devices: layout.devices,
        error: errorText(e),
      })
      failures.push(`${layout.label} setup: ${errorText(e)}`)
    } finally {
      try {
        if (!side?.wedged) spinner?.dispose() // while wedged its delays may still be read: leaked with the rest
      } catch {
        // freed with the allocations below
      }
      side?.dispose()
      await comm?.close()
    }
  }
  assert.deepEqual(failures, [], failures.join('\n'))
})

/** One graph per device: every stream captured at once, each on its own; replayed on its own stream. */
class PerDeviceGraphs {
  private readonly side: DeviceSide
  private readonly graphs: CuGraph[] = []
  private readonly execs: CuGraphExec[] = []

  constructor(side: DeviceSide, body: () => void) {
    this.side = side
    const d = side.driver
    const begun: number[] = []
    let failure: unknown
    try {
      for (const [i, s] of side.streams.entries()) {
        side.use(i)
        d.beginCapture(s)
        begun.push(i)
      }
      body()
    } catch (e) {
      failure = e
    }
    for (const i of begun) {
      try {
        side.use(i)
        this.graphs.push(d.endCapture(side.streams[i]))
      } catch (e) {
        failure ??= e
      }
    }
    try {
      if (failure) throw failure
      for (const [i, g] of this.graphs.entries()) {
        side.use(i)
        this.execs.push(d.graphInstantiate(g))
      }
    } catch (e) {
      this.destroy()
      throw e
    }
  }

  replay(): void {
    for (const [i, e] of this.execs.entries()) {
      this.side.use(i)
      this.side.driver.graphLaunch(e, this.side.streams[i])
    }
  }

  destroy(): void {
    for (const [i, e] of this.execs.splice(0).entries()) {
      try {
        this.side.use(i)
        this.side.driver.graphExecDestroy(e)
      } catch {
        // keep destroying
      }
    }
    for (const [i, g] of this.graphs.splice(0).entries()) {
      try {
        this.side.use(i)
        this.side.driver.graphDestroy(g)
      } catch {
        // keep destroying
      }
    }
  }
}

test('distinct GPUs: graph replays with fresh inputs (one graph over all devices, one graph per device)', {
  skip: !ON_GPU,
}, async (t) => {
  if ('reason' in DISTINCT) {
    t.skip(DISTINCT.reason)
    return
  }
  const dtype: Dtype = 'bf16'
  const count = 2049
  const pool = 4 // graphs G_k: copy pool set k into the work inputs, AllReduce, copy the outputs to set k
  const replays = REDUCED ? 200 : 2000
  const checkEvery = REDUCED ? 100 : 500
  const bytes = count * DTYPE_BYTES[dtype]
  const failures: string[] = []
  for (const layout of layoutsFor(DISTINCT.n)) {
    let comm: CudaCommunicator | undefined
    let side: DeviceSide | undefined
    try {
      comm = await createCudaCommunicator({ backend: 'cuda', devices: layout.devices, timeoutMs: TIMEOUT_MS })
      side = new DeviceSide(layout.devices)
      const nranks = comm.size
      const algorithms = KERNEL_ALGORITHMS.filter((a) => (comm as CudaCommunicator).algorithms.includes(a))
      let stop = false
      for (const algorithm of algorithms) {
        if (stop) break
        for (const mode of ['one-graph', 'graph-per-device'] as const) {
          const name = `${layout.label}/graph-replay/${mode}/${algorithm}`
          const graphs: { replay(): void; destroy(): void }[] = []
          let done = 0
          let checked = 0
          let bad = 0
          const t0 = performance.now()
          try {
            const s = side
            const c = comm
            const sets = Array.from({ length: pool }, (_, k) => makeSet(s, nranks, dtype, count, 700 + k))
            const work = makeSet(s, nranks, dtype, count, 1)
            const call = c.prepareDeviceAllReduce({
              inputs: work.inputs,
              outputs: work.outputs,
              count,
              dtype,
              algorithm,
              fallback: false,
              streams: s.streams,
            })
            const body = (set: RankSet) => () => {
              for (let r = 0; r < nranks; r++) {
                const gi = s.useRank(r)
                s.driver.copyDtoDAsync(work.inputs[r], set.inputs[r], bytes, s.streams[gi])
              }
              call.issue(s.streams)
              for (let r = 0; r < nranks; r++) {
                const gi = s.useRank(r)
                s.driver.copyDtoDAsync(set.outputs[r], work.outputs[r], bytes, s.streams[gi])
              }
            }
            for (const set of sets) {
              if (mode === 'one-graph') {
                const g = CapturedGraph.capture(s.driver, s.streams, (i) => s.use(i), body(set))
                graphs.push({
                  replay: () => {
                    s.use(0)
                    g.replay(s.streams[0])
                  },
                  destroy: () => {
                    s.use(0)
                    g.destroy()
                  },
                })
              } else {
                graphs.push(new PerDeviceGraphs(s, body(set)))
              }
            }
            for (let i = 0; i < replays; i++) {
              graphs[i % pool].replay()
              done++
              if ((i + 1) % checkEvery === 0) {
                s.sync()
                c.checkDeviceError()
                for (const set of sets) {
                  const r = checkSet(s, set, dtype, algorithm)
                  checked++
                  if (r.wrong > 0 || r.disagreeAt >= 0) bad++
                  poisonOutputs(s, set, dtype)
                }
                // One graph is replayed on stream 0 only: the poison (on each rank's stream) must land before it.
                s.sync()
              }
            }
            s.sync()
            c.checkDeviceError()
            const passed = bad === 0 && checked >= pool
            recordCase({
              name,
              passed,
              ranks: nranks,
              devices: layout.devices,
              dtype,
              count,
              replays: done,
              setsChecked: checked,
              setsBad: bad,
              ms: performance.now() - t0,
            })
            if (!passed) failures.push(`${name}: ${bad}/${checked} checked sets wrong`)
          } catch (e) {
            recordCase({
              name,
              passed: false,
              ranks: nranks,
              devices: layout.devices,
              replays: done,
              error: errorText(e),
            })
            failures.push(`${name}: ${errorText(e)}`)
            if (isTimeout(e) || side.wedged) stop = true
          } finally {
            if (!side.wedged) {
              try {
                side.sync()
              } catch {
                // wedged: graphs are leaked with the memory
              }
            }
            if (!side.wedged) for (const g of graphs) g.destroy()
          }
          if (stop) break
        }
      }
    } catch (e) {
      recordCase({
        name: `${layout.label}/graph-replay/setup`,
        passed: false,
        devices: layout.devices,
        error: errorText(e),
      })
      failures.push(`${layout.label} setup: ${errorText(e)}`)
    } finally {
      side?.dispose()
      await comm?.close()
    }
  }
  assert.deepEqual(failures, [], failures.join('\n'))
})

test('distinct GPUs: LL16 torn-packet stress across NVLink (writer GPU 0, reader GPU 1)', { skip: !ON_GPU }, (t) => {
  if ('reason' in DISTINCT) {
    t.skip(DISTINCT.reason)
    return
  }
  const n = DISTINCT.n
  const numPackets = 1 << 16
  const iters = REDUCED ? 50 : 2000
  const blocksPerRank = 16
  const threads = 512
  const timeoutNs = 10e9
  const failures: string[] = []
  let side: DeviceSide | undefined
  try {
    side = new DeviceSide([0, 1]) // group 0 = GPU 0 (writer, rank 0), group 1 = GPU 1 (reader, rank 1)
    const s = side
    const k = toolKernel(STRESS_LL16_KERNEL_NAME)
    const fns = s.devs.groups.map((g) => s.mods.function(g, k.sourceFile, k.kernelName))
    // Reader's counters live on the reader's GPU (only the reader adds to them).
    const counters = s.allocs.alloc(s.devs.groups[1].context, 32, 'stress counters')
    const packetsOn = [
      s.allocs.alloc(s.devs.groups[0].context, numPackets * 16, 'packets on GPU 0'),
      s.allocs.alloc(s.devs.groups[1].context, numPackets * 16, 'packets on GPU 1'),
    ]
    // placement: where the packets live. 'reader-gpu' is llcomm's pattern (stores over NVLink, local polling).
    for (const placement of ['reader-gpu', 'writer-gpu'] as const) {
      for (const layout of [0, 1] as const) {
        const name = `gpus${n}/ll16-stress/${placement}/layout${layout}`
        const launches: PreparedLaunch[] = []
        try {
          const home = placement === 'reader-gpu' ? 1 : 0
          const packets = packetsOn[home]
          s.use(home)
          s.driver.memsetD32(packets, 0, numPackets * 4)
          s.use(1)
          s.driver.memsetD32(counters, 0, 8)
          s.settleNullStreams()
          const paramsFor = (rank: 0 | 1) =>
            new Uint8Array(
              packStressParams({
                packets: BigInt(packets),
                counters: BigInt(counters),
                timeoutNs,
                numPackets,
                iters,
                layout,
                writerRank: 0,
                readerRank: 1,
                blocksPerRank,
                ranksInLaunch: 1,
                launchRanks: [rank],
              }),
            )
          const t0 = performance.now()
          // Reader first, so it is polling while the writer stores; if the writer never starts the reader stops at
          // its own deadline (timeoutNs) and `checked` stays 0, which fails the case.
          for (const rank of [1, 0] as const) {
            const params = paramsFor(rank)
            s.use(rank)
            const l = new PreparedLaunch(
              s.driver,
              fns[rank],
              k.kernelName,
              { gridDimX: blocksPerRank, blockDimX: threads, sharedBytes: 0 },
              { cooperative: true, pdl: false },
              params.byteLength,
            )
            launches.push(l)
            l.setParams(params)
            l.launchOn(s.streams[rank])
          }
          s.sync(timeoutNs / 1e6 + 10_000)
          const ms = performance.now() - t0
          s.use(1)
          const c = new BigUint64Array(4)
          s.driver.copyDtoH(c, counters)
          const r = {
            torn: Number(c[0]),
            halfNew: Number(c[1]),
            checked: Number(c[2]),
            readerThreadsFinished: Number(c[3]),
            readerThreads: blocksPerRank * threads,
          }
          // Layout 0 is llcomm's LL16: never torn. Layout 1 (seed paper) is measured and reported, not asserted.
          const passed = layout === 0 ? r.torn === 0 && r.checked > 0 : r.checked > 0
          recordCase({ name, passed, asserted: layout === 0, placement, layout, numPackets, iters, ...r, ms })
          if (!passed) failures.push(`${name}: ${JSON.stringify(r)}`)
        } catch (e) {
          recordCase({ name, passed: false, placement, layout, error: errorText(e) })
          failures.push(`${name}: ${errorText(e)}`)
        } finally {
          if (!s.wedged) for (const l of launches) l.dispose()
        }
        if (s.wedged) break
      }
      if (s.wedged) break
    }
  } catch (e) {
    recordCase({ name: `gpus${n}/ll16-stress/setup`, passed: false, error: errorText(e) })
    failures.push(`setup: ${errorText(e)}`)
  } finally {
    side?.dispose()
  }
  assert.deepEqual(failures, [], failures.join('\n'))
})

test('distinct GPUs: nccl and nccl-symmetric baselines; a mixed layout refuses nccl', { skip: !ON_GPU }, async (t) => {
  if ('reason' in DISTINCT) {
    t.skip(DISTINCT.reason)
    return
  }
  const n = DISTINCT.n
  const failures: string[] = []
  const fail = (name: string, extra: Record<string, unknown>, why: string) => {
    recordCase({ name, passed: false, ...extra })
    failures.push(`${name}: ${why}`)
  }
  let comm: CudaCommunicator | undefined
  try {
    comm = await createCudaCommunicator({
      backend: 'cuda',
      devices: Array.from({ length: n }, (_, i) => i),
      timeoutMs: TIMEOUT_MS,
    })
    const c = comm
    // Offered: nccl always on distinct GPUs; nccl-symmetric exactly when the loaded NCCL has symmetric windows.
    let windows: boolean | string
    try {
      windows = c.nccl().symmetricSupported
    } catch (e) {
      windows = errorText(e)
    }
    const offeredName = `gpus${n}/nccl-baselines/offered`
    const offered = {
      nccl: c.algorithms.includes('nccl'),
      ncclSymmetric: c.algorithms.includes('nccl-symmetric'),
      windows,
      library: c.libraries.nccl,
    }
    const offeredOk = offered.nccl && offered.ncclSymmetric === (windows === true)
    recordCase({ name: offeredName, passed: offeredOk, ...offered })
    if (!offeredOk) failures.push(`${offeredName}: ${JSON.stringify(offered)}`)
    let seed = 4100
    for (const algorithm of NCCL_ALGORITHMS.filter((a) => c.algorithms.includes(a))) {
      for (const dtype of ['f32', 'f16', 'bf16'] as const) {
        for (const count of [1, 4099, 262_147]) {
          for (const pattern of ['random', 'adversarial'] as Pattern[]) {
            const name = `gpus${n}/nccl-baselines/${algorithm}/${dtype}/n=${count}/${pattern}`
            const random = rng(seed++)
            try {
              const inputs = Array.from({ length: c.size }, (_, r) => makeInput(dtype, count, pattern, r, random))
              const t0 = performance.now()
              const outs = await c.allReduce(inputs, { algorithm, dtype, fallback: false })
              const ref = referenceSum(inputs, dtype, count)
              let wrong = 0
              for (const o of outs) wrong += countWrong(o, ref, c.size, dtype, count, numericModel(algorithm, dtype))
              const disagreeAt = ranksAgreeBitwise(outs, count)
              const passed = wrong === 0 && disagreeAt < 0 && outs.info.algorithm === algorithm
              recordCase({
                name,
                passed,
                ranks: c.size,
                wrong,
                disagreeAt,
                ran: outs.info.algorithm,
                ms: performance.now() - t0,
              })
              if (!passed) failures.push(`${name}: wrong=${wrong} disagreeAt=${disagreeAt} ran=${outs.info.algorithm}`)
            } catch (e) {
              fail(name, { ranks: c.size, error: errorText(e) }, errorText(e))
            }
          }
        }
      }
    }
  } catch (e) {
    fail(`gpus${n}/nccl-baselines/setup`, { error: errorText(e) }, errorText(e))
  } finally {
    await comm?.close()
  }

  // Two virtual ranks per GPU: NCCL cannot serve repeated devices; without fallback that is an error, with it the
  // call runs a kernel algorithm and says why.
  const mixed = Array.from({ length: n }, (_, i) => [i, i]).flat()
  let mixedComm: CudaCommunicator | undefined
  const name = `gpus${n}/mixed2x/nccl-refused`
  try {
    mixedComm = await createCudaCommunicator({ backend: 'cuda', devices: mixed, timeoutMs: TIMEOUT_MS })
    const m = mixedComm
    const random = rng(55)
    const inputs = Array.from({ length: m.size }, (_, r) => makeInput('f32', 1001, 'random', r, random))
    let refusedCode = 'none'
    try {
      await m.allReduce(inputs, { algorithm: 'nccl', dtype: 'f32', fallback: false })
    } catch (e) {
      refusedCode = (e as { code?: string }).code ?? 'other'
    }
    const outs = await m.allReduce(inputs, { algorithm: 'nccl', dtype: 'f32', fallback: true })
    const ref = referenceSum(inputs, 'f32', 1001)
    let wrong = 0
    for (const o of outs) wrong += countWrong(o, ref, m.size, 'f32', 1001, numericModel(outs.info.algorithm, 'f32'))
    const passed =
      !m.algorithms.includes('nccl') &&
      refusedCode === 'UNSUPPORTED_ALGORITHM' &&
      outs.info.algorithm !== 'nccl' &&
      typeof outs.info.fallbackReason === 'string' &&
      wrong === 0 &&
      ranksAgreeBitwise(outs, 1001) < 0
    recordCase({
      name,
      passed,
      devices: mixed,
      offered: m.algorithms,
      refusedCode,
      fellBackTo: outs.info.algorithm,
      fallbackReason: outs.info.fallbackReason,
      wrong,
    })
    if (!passed) failures.push(`${name}: refused=${refusedCode} ran=${outs.info.algorithm} wrong=${wrong}`)
  } catch (e) {
    fail(name, { devices: mixed, error: errorText(e) }, errorText(e))
  } finally {
    await mixedComm?.close()
  }
  assert.deepEqual(failures, [], failures.join('\n'))
})
