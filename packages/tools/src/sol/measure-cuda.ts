/**
 * The sol primitives on the GPU, with the device side's microbenchmarks (packages/tools/kernels/sol.cu) and the host
 * side's driver layer (src/ffi, src/backends/cuda: contexts, NVRTC cubin cache, launches, graphs, events):
 *   L2 round trip  llcomm_sol_l2_rtt mode 0: `iters` fence.sc.gpu (__threadfence) in a row, one thread; also
 *                  mode 1 (dependent L2 loads) for the record
 *   ping-pong      llcomm_sol_pingpong ordering 1 (release/acquire: a flag that publishes data, the hop the
 *                  formula models) between rank 0 and rank 1 of `devices` (0,0: two blocks of one GPU; 0,1: two
 *                  GPUs over NVLink); ordering 0 (relaxed, an LL packet) recorded too
 *   kernel floor   llcomm_sol_empty captured 100 times in one CUDA graph; replay time / 100
 *   copy           llcomm_sol_copy of 256 MB, one grid over all SMs; local, and to the peer GPU when there is one
 * Times inside kernels come from %globaltimer; graph and copy times from events around replays/launches.
 */
import {
  CapturedGraph,
  CU_EVENT_DEFAULT,
  type CudaDriver,
  type CuStream,
  cudaDriver,
  DeviceAllocations,
  type DevicePtr,
  DeviceSet,
  KernelModules,
  kernelSources,
  type LaunchGroup,
  LLCOMM_ERROR_WORD_BYTES,
  LLCOMM_THREADS,
  LlcommError,
  nvrtc as loadNvrtc,
  PreparedLaunch,
  readErrorWord,
} from 'llcomm/internal'
import { median } from '../bench/stats.js'
import { packSolCopyParams, packSolEmptyParams, packSolL2Params, packSolPingPongParams } from '../kernels/abi.js'
import { TOOLS_KERNELS } from '../kernels/table.js'
import { remoteStoreFromPingPongUs, type SolPrimitives } from './model.js'

export interface CudaSolOptions {
  /** Two device indices: the ping-pong's two sides (equal: two blocks on one GPU). */
  devices: number[]
  timeoutMs?: number
  cacheDir?: string
}

export interface CudaSolRaw extends Record<string, number> {
  fenceUs: number
  dependentL2LoadUs: number
  pingPongRoundTripUs: number
  pingPongRelaxedRoundTripUs: number
  emptyKernelInGraphUs: number
  localCopyBandwidthGBs: number
  peerCopyBandwidthGBs: number
}

const FENCE_ITERS = 20_000
const PINGPONG_ITERS = 20_000
const EMPTY_PER_GRAPH = 100
const COPY_BYTES = 256 << 20
const REPEATS = 5

/** The sol kernels, by name, from the device side's tool-kernel table (all in one source file). */
function solKernel(name: string): { kernelName: string; sourceFile: string } {
  const k = TOOLS_KERNELS.find((t) => t.kernelName === name)
  if (!k) throw new LlcommError('UNSUPPORTED_ALGORITHM', `tool kernel ${name} is not in the kernel table`)
  return k
}
const SOL_L2 = 'llcomm_sol_l2_rtt'
const SOL_PINGPONG = 'llcomm_sol_pingpong'
const SOL_EMPTY = 'llcomm_sol_empty'
const SOL_COPY = 'llcomm_sol_copy'

class SolSession {
  readonly driver: CudaDriver
  readonly devices: DeviceSet
  readonly allocs: DeviceAllocations
  readonly modules: KernelModules
  readonly streams: CuStream[] = []
  readonly launches: PreparedLaunch[] = []

  constructor(devices: number[], cacheDir: string | undefined) {
    this.driver = cudaDriver()
    this.devices = new DeviceSet(this.driver, devices)
    try {
      this.allocs = new DeviceAllocations(this.driver)
      this.modules = new KernelModules(this.driver, loadNvrtc(), { headers: kernelSources(), cacheDir })
      for (const g of this.devices.groups) {
        this.devices.use(g)
        this.streams.push(this.driver.streamCreate())
      }
    } catch (e) {
      this.devices.release()
      throw e
    }
  }

  group(rank: number): LaunchGroup {
    return this.devices.groups[this.devices.rankGroup[rank]]
  }

  launch(
    g: LaunchGroup,
    kernel: string,
    gridDimX: number,
    blockDimX: number,
    params: Uint8Array,
    cooperative = false,
  ): PreparedLaunch {
    const k = solKernel(kernel)
    const fn = this.modules.function(g, k.sourceFile, k.kernelName)
    const shape = { gridDimX, blockDimX, sharedBytes: 0 }
    const l = new PreparedLaunch(this.driver, fn, kernel, shape, { cooperative, pdl: false }, params.byteLength)
    this.launches.push(l)
    l.setParams(params)
    return l
  }

  zeroed(g: LaunchGroup, bytes: number, label: string): DevicePtr {
    const p = this.allocs.alloc(g.context, bytes, label)
    this.driver.memsetD32(p, 0, Math.ceil(bytes / 4))
    // cuMemsetD32 on device memory is asynchronous to the host and runs on the legacy stream, which our
    // non-blocking streams do not wait for: finish it before any kernel can read the zeros.
    this.driver.contextSynchronize()
    return p
  }

  readU64(g: LaunchGroup, ptr: DevicePtr, words: number): bigint[] {
    this.devices.use(g)
    const out = new BigUint64Array(words)
    this.driver.copyDtoH(out, ptr, words * 8)
    return [...out]
  }

  /** Event-timed µs of `body` enqueued on stream i. */
  timeOnStream(i: number, body: (s: CuStream) => void): number {
    const g = this.devices.groups[i]
    this.devices.use(g)
    const s = this.streams[i]
    const start = this.driver.eventCreate(CU_EVENT_DEFAULT)
    const end = this.driver.eventCreate(CU_EVENT_DEFAULT)
    try {
      this.driver.eventRecord(start, s)
      body(s)
      this.devices.use(g)
      this.driver.eventRecord(end, s)
      this.driver.eventSynchronize(end)
      return this.driver.eventElapsedMs(start, end) * 1000
    } finally {
      this.driver.eventDestroy(start)
      this.driver.eventDestroy(end)
    }
  }

  dispose(): void {
    const errors: unknown[] = []
    const attempt = (f: () => void) => {
      try {
        f()
      } catch (e) {
        errors.push(e)
      }
    }
    for (const l of this.launches.splice(0).reverse()) attempt(() => l.dispose())
    for (const [i, stream] of this.streams.splice(0).entries()) {
      attempt(() => {
        this.devices.use(this.devices.groups[i])
        this.driver.streamDestroy(stream)
      })
    }
    attempt(() => this.allocs.freeAll())
    attempt(() => this.modules.unloadAll())
    attempt(() => this.devices.release())
    if (errors.length > 0) throw errors[0]
  }
}

function fenceAndL2(s: SolSession): { fenceUs: number; dependentL2LoadUs: number } {
  const g = s.group(0)
  const result = s.zeroed(g, 64, 'sol l2 result')
  const probe = s.zeroed(g, 256, 'sol l2 probe')
  const perMode = (mode: 0 | 1) => {
    const l = s.launch(g, SOL_L2, 1, 32, packSolL2Params({ result, probe, iters: FENCE_ITERS, mode }))
    const samples: number[] = []
    for (let r = 0; r <= REPEATS; r++) {
      s.devices.use(g)
      l.launchOn(s.streams[0])
      s.driver.streamSynchronize(s.streams[0])
      const [ns] = s.readU64(g, result, 3)
      if (r > 0) samples.push(Number(ns) / 1000 / FENCE_ITERS) // first launch: warm-up (module load, clocks)
    }
    return median(samples)
  }
  return { fenceUs: perMode(0), dependentL2LoadUs: perMode(1) }
}

function pingPong(s: SolSession, ordering: 0 | 1, timeoutMs: number): number {
  const g0 = s.group(0)
  const g1 = s.group(1)
  const errorWord = s.zeroed(g0, LLCOMM_ERROR_WORD_BYTES, 'sol error word')
  const result = s.zeroed(g0, 64, 'sol pingpong result')
  const flags: [DevicePtr, DevicePtr] = [s.zeroed(g0, 256, 'sol flag 0'), s.zeroed(g1, 256, 'sol flag 1')]
  const base = {
    flag: flags as readonly [number, number],
    result,
    errorWord,
    timeoutNs: Math.floor(timeoutMs * 1e6),
    iters: PINGPONG_ITERS,
    ordering,
  }
  const samples: number[] = []
  for (let r = 0; r <= REPEATS; r++) {
    // Flags restart from 0 each launch (the kernel counts 1..iters).
    for (const [i, f] of flags.entries()) {
      s.devices.use(s.group(i))
      s.driver.memsetD32(f, 0, 64)
      s.driver.contextSynchronize() // the zeroed flag must land before the launch (see zeroed())
    }
    if (g0 === g1) {
      // Both sides in one cooperative launch: co-residency is guaranteed or the launch fails (never a hang).
      const l = s.launch(
        g0,
        SOL_PINGPONG,
        2,
        32,
        packSolPingPongParams({ ...base, ranksInLaunch: 2, launchRanks: [0, 1] }),
        true,
      )
      s.devices.use(g0)
      l.launchOn(s.streams[0])
      s.driver.streamSynchronize(s.streams[0])
    } else {
      const l0 = s.launch(
        g0,
        SOL_PINGPONG,
        1,
        32,
        packSolPingPongParams({ ...base, ranksInLaunch: 1, launchRanks: [0] }),
      )
      const l1 = s.launch(
        g1,
        SOL_PINGPONG,
        1,
        32,
        packSolPingPongParams({ ...base, ranksInLaunch: 1, launchRanks: [1] }),
      )
      s.devices.use(g1)
      l1.launchOn(s.streams[g1.index])
      s.devices.use(g0)
      l0.launchOn(s.streams[g0.index])
      s.driver.streamSynchronize(s.streams[g0.index])
      s.devices.use(g1)
      s.driver.streamSynchronize(s.streams[g1.index])
    }
    s.devices.use(g0)
    const deviceError = readErrorWord(s.driver, errorWord)
    if (deviceError) throw deviceError
    const [ns, done] = s.readU64(g0, result, 2)
    if (Number(done) !== PINGPONG_ITERS)
      throw new LlcommError('CUDA_ERROR', `sol ping-pong completed ${done} of ${PINGPONG_ITERS} round trips`)
    if (r > 0) samples.push(Number(ns) / 1000 / PINGPONG_ITERS)
  }
  return median(samples)
}

function emptyKernelInGraph(s: SolSession): number {
  const g = s.group(0)
  const l = s.launch(g, SOL_EMPTY, 1, 32, packSolEmptyParams())
  const graph = CapturedGraph.capture(
    s.driver,
    [s.streams[0]],
    () => s.devices.use(g),
    () => {
      for (let i = 0; i < EMPTY_PER_GRAPH; i++) l.launchOn(s.streams[0])
    },
  )
  try {
    const samples: number[] = []
    for (let r = 0; r <= REPEATS * 2; r++) {
      const us = s.timeOnStream(0, (stream) => graph.replay(stream))
      if (r > 0) samples.push(us / EMPTY_PER_GRAPH)
    }
    return median(samples)
  } finally {
    graph.destroy()
  }
}

function copyBandwidth(s: SolSession, dstGroup: LaunchGroup): number {
  const g = s.group(0)
  const src = s.zeroed(g, COPY_BYTES, 'sol copy src')
  const dst = s.zeroed(dstGroup, COPY_BYTES, 'sol copy dst')
  const l = s.launch(g, SOL_COPY, g.smCount * 2, LLCOMM_THREADS, packSolCopyParams({ src, dst, bytes: COPY_BYTES }))
  const samples: number[] = []
  for (let r = 0; r <= REPEATS; r++) {
    const us = s.timeOnStream(0, (stream) => l.launchOn(stream))
    if (r > 0) samples.push(COPY_BYTES / us / 1e3)
  }
  s.allocs.release(dst)
  s.allocs.release(src)
  return median(samples)
}

export async function measureCudaPrimitives(
  o: CudaSolOptions,
): Promise<{ primitives: SolPrimitives; raw: CudaSolRaw }> {
  if (o.devices.length !== 2)
    throw new LlcommError(
      'INVALID_ARGUMENT',
      `sol's ping-pong needs exactly two devices (e.g. 0,0 or 0,1), got ${o.devices.join(',')}`,
    )
  const timeoutMs = o.timeoutMs ?? 10_000
  const s = new SolSession(o.devices, o.cacheDir)
  try {
    const { fenceUs, dependentL2LoadUs } = fenceAndL2(s)
    const pingPongRoundTripUs = pingPong(s, 1, timeoutMs)
    const pingPongRelaxedRoundTripUs = pingPong(s, 0, timeoutMs)
    const emptyKernelInGraphUs = emptyKernelInGraph(s)
    const localCopyBandwidthGBs = copyBandwidth(s, s.group(0))
    const peerCopyBandwidthGBs = s.devices.multiDevice ? copyBandwidth(s, s.group(1)) : localCopyBandwidthGBs
    return {
      primitives: {
        l2RoundTripUs: fenceUs,
        remoteStoreUs: remoteStoreFromPingPongUs(pingPongRoundTripUs, fenceUs),
        kernelFloorUs: emptyKernelInGraphUs,
        copyBandwidthGBs: peerCopyBandwidthGBs,
      },
      raw: {
        fenceUs,
        dependentL2LoadUs,
        pingPongRoundTripUs,
        pingPongRelaxedRoundTripUs,
        emptyKernelInGraphUs,
        localCopyBandwidthGBs,
        peerCopyBandwidthGBs,
      },
    }
  } finally {
    s.dispose()
  }
}
