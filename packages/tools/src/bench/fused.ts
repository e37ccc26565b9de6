/**
 * Kernel-level bench of the fused AllReduce + residual add + RMSNorm against the unfused composition (issue 21),
 * measured side by side in one run: for each shape, CUDA-graph replays of `callsPerGraph` back-to-back calls
 * rotating over INPUT_SETS buffer sets, timed with events on the stream, per-call time = replay time / calls; the
 * median over replays is reported. Variants per shape:
 *   fused-oneshot, fused-twoshot (where the row fits the kernel's lanes), fused-split, fused-split-ll (a row shared
 *   by the blocks of a thread-block cluster; sentinel / LL16), fused-auto (what deviceAllReduceRmsNorm
 *   picks), unfused = deviceAllReduce (llcomm auto) + deviceRmsNorm, allreduce alone, rmsnorm alone, and
 *   nccl + rmsnorm when NCCL is usable.
 * Virtual ranks on one device (all ranks' buffers are allocated in device 0's context).
 */
import type { AlgorithmName, CudaCommunicator, Dtype } from 'llcomm/internal'
import {
  CapturedGraph,
  CU_EVENT_DEFAULT,
  type CuStream,
  cudaDriver,
  type DevicePtr,
  DTYPE_BYTES,
  DTYPE_CODECS,
  type FusedNormAlgorithm,
  fusedRowsPerBlock,
  LlcommError,
  planFusedNorm,
} from 'llcomm/internal'

export const FUSED_BENCH_INPUT_SETS = 4

export interface FusedBenchShape {
  rows: number
  hidden: number
  dtype: Dtype
}
export interface FusedBenchRow extends FusedBenchShape {
  ranks: number
  /** Median µs per call of each variant (absent: not runnable at this shape). */
  us: Record<string, number>
  /** What the unfused AllReduce and fused-auto resolved to. */
  allReduceAlgorithm: AlgorithmName
  fusedAuto: FusedNormAlgorithm
  /** Variants that could not run at this shape, with the reason (the split kernels' cluster launch). */
  skipped?: Record<string, string>
  /** Launches per call of the split variants (rows beyond one launch's lanes go to further launches). */
  launches?: Record<string, number>
}

export interface FusedBenchOptions {
  callsPerGraph?: number
  replays?: number
  eps?: number
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b)
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2
}

/** Runs every variant of one shape on `comm` (virtual ranks on device 0). */
export function benchFusedShape(
  comm: CudaCommunicator,
  shape: FusedBenchShape,
  o: FusedBenchOptions = {},
): FusedBenchRow {
  if (comm.launchGroupDevices.length !== 1)
    throw new LlcommError('INVALID_ARGUMENT', 'the fused bench runs virtual ranks on one device')
  const d = cudaDriver()
  const { rows, hidden, dtype } = shape
  const calls = o.callsPerGraph ?? 50
  const replays = o.replays ?? 20
  const eps = o.eps ?? 1e-5
  const n = rows * hidden
  const bytes = n * DTYPE_BYTES[dtype]
  const ranks = comm.size
  const streams = comm.streams
  const s0: CuStream = streams[0]
  const owned: DevicePtr[] = []
  const alloc = (b: number) => {
    const p = d.memAlloc(Math.max(256, Math.ceil(b / 256) * 256))
    owned.push(p)
    return p
  }
  const graphs: CapturedGraph[] = []
  const e0 = d.eventCreate(CU_EVENT_DEFAULT)
  const e1 = d.eventCreate(CU_EVENT_DEFAULT)
  try {
    const codec = DTYPE_CODECS[dtype]
    const host = new Uint8Array(bytes)
    const view = new DataView(host.buffer)
    const fillRandom = (p: DevicePtr, scale: number) => {
      for (let i = 0; i < n; i++) {
        const x = (Math.random() * 2 - 1) * scale
        if (dtype === 'f32') view.setFloat32(4 * i, x, true)
        else view.setUint16(2 * i, codec.encodeLane(x), true)
      }
      d.copyHtoD(p, host, bytes)
    }
    const weight = Array.from({ length: ranks }, () => alloc(hidden * DTYPE_BYTES[dtype]))
    for (const w of weight)
      d.memsetD32(w, dtype === 'f32' ? 0x3f800000 : codec.encodeLane(1) * 0x10001, (hidden * DTYPE_BYTES[dtype]) / 4)
    const sets = Array.from({ length: FUSED_BENCH_INPUT_SETS }, () => {
      const s = {
        x: Array.from({ length: ranks }, () => alloc(bytes)),
        residual: Array.from({ length: ranks }, () => alloc(bytes)),
        out: Array.from({ length: ranks }, () => alloc(bytes)),
        sum: Array.from({ length: ranks }, () => alloc(bytes)),
      }
      for (const p of s.x) fillRandom(p, 1)
      for (const p of s.residual) fillRandom(p, 2)
      return s
    })
    const normArgs = (s: (typeof sets)[number], algorithm?: FusedNormAlgorithm) => ({
      inputs: s.x,
      residuals: s.residual,
      outputs: s.out,
      weights: weight,
      rows,
      hidden,
      eps,
      dtype,
      algorithm,
      streams,
    })
    const auto = planFusedNorm('auto', ranks, rows, hidden, dtype, comm.bufferBytes).algorithm
    const allReduce = sets.map((s) =>
      comm.prepareDeviceAllReduce({ inputs: s.x, outputs: s.sum, count: n, dtype, streams }),
    )
    const allReduceAlgorithm = allReduce[0].algorithm
    const norm = sets.map((s) => comm.prepareDeviceRmsNorm({ ...normArgs(s), inputs: s.sum }))
    const variants: Record<string, (() => void)[]> = {
      unfused: sets.map((_, k) => () => {
        allReduce[k].issue(streams)
        norm[k].issue(streams)
      }),
      allreduce: allReduce.map((c) => () => c.issue(streams)),
      rmsnorm: norm.map((c) => () => c.issue(streams)),
    }
    for (const a of ['oneshot', 'twoshot'] as const)
      if (fusedRowsPerBlock(a, ranks, hidden, dtype, comm.bufferBytes) > 0) {
        const fused = sets.map((s) => comm.prepareDeviceAllReduceRmsNorm(normArgs(s, a)))
        variants[`fused-${a}`] = fused.map((c) => () => c.issue(streams))
      }
    // The split kernels (thread-block clusters): tried once eagerly, so that a driver or device that refuses the
    // cluster launch drops the column (reason in `skipped`) instead of breaking the graph capture of the others.
    const skipped: Record<string, string> = {}
    const launchesOf: Record<string, number> = {}
    for (const a of ['split', 'split-ll'] as const) {
      try {
        const fused = sets.map((s) => comm.prepareDeviceAllReduceRmsNorm(normArgs(s, a)))
        fused[0].issue(streams)
        for (const st of streams) d.streamSynchronize(st)
        comm.checkDeviceError()
        launchesOf[`fused-${a}`] = fused[0].launches
        variants[`fused-${a}`] = fused.map((c) => () => c.issue(streams))
      } catch (e) {
        skipped[`fused-${a}`] = e instanceof Error ? e.message : String(e)
      }
    }
    variants['fused-auto'] = variants[`fused-${auto}`]
    if (comm.algorithms.includes('nccl')) {
      const nccl = sets.map((s) =>
        comm.prepareDeviceAllReduce({ inputs: s.x, outputs: s.sum, count: n, dtype, algorithm: 'nccl', streams }),
      )
      variants['nccl+rmsnorm'] = sets.map((_, k) => () => {
        nccl[k].issue(streams)
        norm[k].issue(streams)
      })
    }
    const us: Record<string, number> = {}
    const captured = Object.entries(variants).map(([name, issue]) => {
      const g = CapturedGraph.capture(
        d,
        streams,
        () => {},
        () => {
          for (let c = 0; c < calls; c++) issue[c % FUSED_BENCH_INPUT_SETS]()
        },
      )
      graphs.push(g)
      return { name, g, times: [] as number[] }
    })
    for (const v of captured) v.g.replay() // warm-up
    d.streamSynchronize(s0)
    comm.checkDeviceError()
    // Interleaved: replay i of every variant before replay i + 1 of any, so drift hits them alike.
    for (let i = 0; i < replays; i++)
      for (const v of captured) {
        d.eventRecord(e0, s0)
        v.g.replay()
        d.eventRecord(e1, s0)
        d.eventSynchronize(e1)
        v.times.push((d.eventElapsedMs(e0, e1) * 1000) / calls)
      }
    comm.checkDeviceError()
    for (const v of captured) us[v.name] = median(v.times)
    return { ...shape, ranks, us, allReduceAlgorithm, fusedAuto: auto, skipped, launches: launchesOf }
  } finally {
    try {
      d.streamSynchronize(s0)
    } catch {
      // freeing below still runs
    }
    for (const g of graphs) g.destroy()
    d.eventDestroy(e0)
    d.eventDestroy(e1)
    for (const p of owned.reverse()) d.memFree(p)
  }
}
