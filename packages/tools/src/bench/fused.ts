/**
 * Kernel-level bench of the fused AllReduce + residual add + RMSNorm against the unfused composition (issue 21),
 * measured side by side in one run: for each shape, CUDA-graph replays of `callsPerGraph` back-to-back calls
 * rotating over INPUT_SETS buffer sets, timed with events on the stream, per-call time = replay time / calls; the
 * median over replays is reported. Variants per shape:
 *   fused-oneshot, fused-twoshot (where the row fits the kernel's lanes), fused-split, fused-split-ll (a row shared
 *   by the blocks of a thread-block cluster; sentinel / LL16), fused-split-twoshot (the same, each block's slots
 *   exchanged two-shot), fused-auto (what deviceAllReduceRmsNorm
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
  type FusedProbe,
  fusedRowsPerBlock,
  LlcommError,
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
  /** --probes: each candidate's outputs (out and residual, every rank, one call from the same state) against
   * fused-split-ll's: 'bitwise equal' or what differed. */
  checks?: Record<string, string>
}

export interface FusedBenchOptions {
  callsPerGraph?: number
  replays?: number
  eps?: number
  /** Also time the cost-decomposition probes (FUSED_BENCH_PROBES; bf16 only). */
  probes?: boolean
  /** Also time `unfused:<algorithm>` for every llcomm AllReduce algorithm that can serve the shape (not NCCL), each
   * followed by the same RMSNorm kernel: the strictest unfused baseline is the fastest of these and `unfused`. */
  unfusedAll?: boolean
}

/**
 * The probe columns (--probes): each a kernel of kernels/allreduce/fused_rmsnorm_split_probe.cu (or a shipped split
 * kernel) on the split plan's launch shape, with or without the cluster / cooperative attributes (FusedProbe).
 * Differences between columns isolate one part (research/notes/fused-probes.md has the table and the predictions).
 */
export const FUSED_BENCH_PROBES: Readonly<Record<string, FusedProbe>> = {
  // launch only (no work), on split-ll's grid
  'p:empty-small': {
    kernel: 'llcomm_fused_probe_empty_small',
    plan: 'split-ll',
    cluster: false,
    cooperative: true,
    smallParams: true,
  },
  'p:empty-nocoop': { kernel: 'llcomm_fused_probe_empty', plan: 'split-ll', cluster: false, cooperative: false },
  'p:empty': { kernel: 'llcomm_fused_probe_empty', plan: 'split-ll', cluster: false, cooperative: true },
  'p:empty-cl': { kernel: 'llcomm_fused_probe_empty', plan: 'split-ll', cluster: true, cooperative: true },
  'p:empty-cl-nocoop': { kernel: 'llcomm_fused_probe_empty', plan: 'split-ll', cluster: true, cooperative: false },
  // split-ll with parts taken out
  'p:ll-xchg-nocl': {
    kernel: 'llcomm_fused_probe_ll_xchg_flagc',
    plan: 'split-ll',
    cluster: false,
    cooperative: true,
    flagC: true,
  },
  'p:ll-xchg': { kernel: 'llcomm_fused_probe_ll_xchg', plan: 'split-ll', cluster: true, cooperative: true },
  'p:ll-nobar-nonorm': {
    kernel: 'llcomm_fused_probe_ll_nobar_nonorm',
    plan: 'split-ll',
    cluster: true,
    cooperative: true,
  },
  'p:ll-nobar': { kernel: 'llcomm_fused_probe_ll_nobar', plan: 'split-ll', cluster: true, cooperative: true },
  'p:ll-nonorm': { kernel: 'llcomm_fused_probe_ll_nonorm', plan: 'split-ll', cluster: true, cooperative: true },
  'p:split-ll-nocoop': {
    kernel: 'llcomm_fused_rmsnorm_split_ll_bf16',
    sourceFile: 'allreduce/fused_rmsnorm_split_ll.cu',
    plan: 'split-ll',
    cluster: true,
    cooperative: false,
  },
  // the shipped split-ll kernel without the cluster attribute: clusters of one, a row per block (correct outputs)
  'p:split-ll-c1': {
    kernel: 'llcomm_fused_rmsnorm_split_ll_bf16',
    sourceFile: 'allreduce/fused_rmsnorm_split_ll.cu',
    plan: 'split-ll',
    cluster: false,
    cooperative: true,
  },
  // split (sentinel)
  'p:s-xchg': { kernel: 'llcomm_fused_probe_s_xchg', plan: 'split', cluster: true, cooperative: true },
  'p:s-nonorm': { kernel: 'llcomm_fused_probe_s_nonorm', plan: 'split', cluster: true, cooperative: true },
  'p:split-nocoop': {
    kernel: 'llcomm_fused_rmsnorm_split_bf16',
    sourceFile: 'allreduce/fused_rmsnorm_split.cu',
    plan: 'split',
    cluster: true,
    cooperative: false,
  },
  // candidate (same outputs): split-ll with the residual stored after the cluster barriers (LLC_SPLIT_LATE_RESIDUAL)
  'i:ll-late': { kernel: 'llcomm_fused_probe_ll_late', plan: 'split-ll', cluster: true, cooperative: true },
  // candidates (same outputs; only where fusedSplitSpreadApplies: 8 ranks, 4096 bf16, batch 1-2): the AllReduce's
  // peer-parallel exchange (LLC_SPLIT_SPREAD), alone and with the late residual
  'i:ll-spread': {
    kernel: 'llcomm_fused_probe_ll_spread',
    plan: 'split-ll',
    cluster: true,
    cooperative: true,
    spread: true,
  },
  'i:ll-late-spread': {
    kernel: 'llcomm_fused_probe_ll_late_spread',
    plan: 'split-ll',
    cluster: true,
    cooperative: true,
    spread: true,
  },
}
/** Candidates among FUSED_BENCH_PROBES whose outputs must equal fused-split-ll's bit for bit (checked per shape). */
export const FUSED_BENCH_CANDIDATES: readonly string[] = ['i:ll-late', 'i:ll-spread', 'i:ll-late-spread']

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
    const allReduce = sets.map((s) =>
      comm.prepareDeviceAllReduce({ inputs: s.x, outputs: s.sum, count: n, dtype, streams }),
    )
    const allReduceAlgorithm = allReduce[0].algorithm
    const norm = sets.map((s) => comm.prepareDeviceRmsNorm({ ...normArgs(s), inputs: s.sum }))
    const skipped: Record<string, string> = {}
    const variants: Record<string, (() => void)[]> = {
      unfused: sets.map((_, k) => () => {
        allReduce[k].issue(streams)
        norm[k].issue(streams)
      }),
      allreduce: allReduce.map((c) => () => c.issue(streams)),
      rmsnorm: norm.map((c) => () => c.issue(streams)),
    }
    if (o.unfusedAll)
      for (const a of comm.algorithms) {
        if (a === 'auto' || a.startsWith('nccl')) continue // llcomm's own kernels only
        try {
          const ar = sets.map((s) =>
            comm.prepareDeviceAllReduce({ inputs: s.x, outputs: s.sum, count: n, dtype, algorithm: a, streams }),
          )
          variants[`unfused:${a}`] = sets.map((_, k) => () => {
            ar[k].issue(streams)
            norm[k].issue(streams)
          })
        } catch (e) {
          skipped[`unfused:${a}`] = e instanceof Error ? e.message : String(e)
        }
      }
    for (const a of ['oneshot', 'twoshot'] as const)
      if (fusedRowsPerBlock(a, ranks, hidden, dtype, comm.bufferBytes) > 0) {
        const fused = sets.map((s) => comm.prepareDeviceAllReduceRmsNorm(normArgs(s, a)))
        variants[`fused-${a}`] = fused.map((c) => () => c.issue(streams))
      }
    // The split kernels (thread-block clusters): tried once eagerly, so that a driver or device that refuses the
    // cluster launch drops the column (reason in `skipped`) instead of breaking the graph capture of the others.
    const launchesOf: Record<string, number> = {}
    for (const a of ['split', 'split-ll', 'split-twoshot'] as const) {
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
    // fused-auto: the library's own 'auto' call (prepared with no algorithm), as a user gets it; it may take the
    // split kernel on sm_90, which planFusedNorm without its device arguments would not say.
    const autoCalls = sets.map((s) => comm.prepareDeviceAllReduceRmsNorm(normArgs(s)))
    const auto = autoCalls[0].algorithm as FusedNormAlgorithm // a fused RMSNorm call: one of the four
    variants['fused-auto'] = autoCalls.map((c) => () => c.issue(streams))
    const checks: Record<string, string> = {}
    if (o.probes && variants['fused-split-ll']) {
      // One call of fused-split-ll and of each candidate from the same residual state (set 0), outputs compared.
      const s = sets[0]
      const save = (list: DevicePtr[]) =>
        list.map((p) => {
          const h = new Uint8Array(bytes)
          d.copyDtoH(h, p, bytes)
          return h
        })
      // The copies and memsets run on the null stream, which the (non-blocking) communicator streams do not wait
      // for: the context is synchronized after them, before the next launch.
      const restore = (list: DevicePtr[], hs: Uint8Array[]) => {
        for (const [r, p] of list.entries()) d.copyHtoD(p, hs[r], bytes)
        d.contextSynchronize()
      }
      const sync = () => {
        for (const st of streams) d.streamSynchronize(st)
        comm.checkDeviceError()
      }
      sync()
      const residual0 = save(s.residual)
      comm.prepareDeviceAllReduceRmsNorm(normArgs(s, 'split-ll')).issue(streams)
      sync()
      const want = [...save(s.out), ...save(s.residual)]
      for (const name of FUSED_BENCH_CANDIDATES) {
        try {
          restore(s.residual, residual0)
          for (const p of s.out) d.memsetD32(p, 0, bytes / 4)
          d.contextSynchronize()
          comm.prepareDeviceFusedProbe(normArgs(s), FUSED_BENCH_PROBES[name]).issue(streams)
          sync()
          const got = [...save(s.out), ...save(s.residual)]
          let diff = 0
          for (const [i, g] of got.entries()) for (const [j, b] of g.entries()) if (b !== want[i][j]) diff++
          checks[name] = diff === 0 ? 'bitwise equal' : `DIFFERS: ${diff} bytes of out/residual`
        } catch (e) {
          checks[name] = `not run: ${e instanceof Error ? e.message : String(e)}`
        }
      }
      restore(s.residual, residual0)
    }
    if (o.probes)
      for (const [name, probe] of Object.entries(FUSED_BENCH_PROBES)) {
        try {
          const fused = sets.map((s) => comm.prepareDeviceFusedProbe(normArgs(s), probe))
          fused[0].issue(streams)
          for (const st of streams) d.streamSynchronize(st)
          comm.checkDeviceError()
          variants[name] = fused.map((c) => () => c.issue(streams))
        } catch (e) {
          skipped[name] = e instanceof Error ? e.message : String(e)
        }
      }
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
    return { ...shape, ranks, us, allReduceAlgorithm, fusedAuto: auto, skipped, launches: launchesOf, checks }
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
