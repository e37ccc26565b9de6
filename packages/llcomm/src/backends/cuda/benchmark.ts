/**
 * `benchmark()` on cuda: timing by CUDA-graph replay. One graph holds `callsPerGraph` back-to-back AllReduces
 * rotating over `INPUT_SETS` input/output buffer sets (so repeated calls do not just re-read one cached input);
 * each replay is timed with a pair of events on the first stream, and the per-call time is the replay's time over
 * callsPerGraph (per-call times inside one graph are not separable without perturbing them). With skew, each call is
 * preceded by the spin kernel (skew.ts); a second graph with only the spins is timed the same way and its per-call
 * time is reported as `skewWaitUs` and subtracted from the collective's time. The outputs of the last call of the
 * last replay are checked against a float64 reference (reference.ts) and for bitwise agreement across ranks.
 */
import type {
  Accumulation,
  AlgorithmChoice,
  AlgorithmName,
  BenchmarkRequest,
  BenchmarkResult,
  Dtype,
  ReduceOp,
  TensorArray,
} from '../../api/types.js'
import { DTYPE_BYTES, DTYPES } from '../../api/types.js'
import { DTYPE_CODECS } from '../../dtype/index.js'
import { LlcommError } from '../../errors.js'
import { CU_EVENT_DEFAULT, type CudaDriver, type CuStream, type DevicePtr } from '../../ffi/index.js'
import type { DeviceAllReduceArgs, PreparedDeviceAllReduce } from './device-call.js'
import type { DeviceSet } from './devices.js'
import { CapturedGraph, drainStreams } from './graph.js'
import type { DeviceAllocations } from './memory.js'
import type { KernelModules } from './modules.js'
import { countWrong, numericModel, ranksAgreeBitwise, referenceSum } from './reference.js'
import { SkewSpinner } from './skew.js'

export const INPUT_SETS = 4
export const MAX_CALLS_PER_GRAPH = 100

/** Random values in [-1, 1) in the dtype's typed array (raw bits for f16/bf16). */
export function randomInput(dtype: Dtype, count: number, random: () => number = Math.random): TensorArray {
  if (dtype === 'f32') {
    const a = new Float32Array(count)
    for (let i = 0; i < count; i++) a[i] = random() * 2 - 1
    return a
  }
  const codec = DTYPE_CODECS[dtype]
  const a = new Uint16Array(count)
  for (let i = 0; i < count; i++) a[i] = codec.encodeLane(random() * 2 - 1)
  return a
}

/** What the benchmark needs of the CUDA communicator (structural, so that this file does not import it). */
export interface BenchmarkedCommunicator {
  readonly size: number
  readonly streams: readonly CuStream[]
  /** Option `accumulation`: the numeric model of the correctness check (tolerance.ts numericModel). */
  readonly accumulation: Accumulation
  resolveAlgorithm(
    requested: AlgorithmChoice,
    dtype: Dtype,
    op: ReduceOp,
    bytes: number,
    fallback?: boolean,
  ): { algorithm: AlgorithmName; fallbackReason?: string }
  nccl(): { allocSymmetric(bytes: number): DevicePtr[] }
  prepareDeviceAllReduce(args: DeviceAllReduceArgs): PreparedDeviceAllReduce
  checkDeviceError(): void
}

export async function runCudaBenchmark(
  comm: BenchmarkedCommunicator,
  driver: CudaDriver,
  devices: DeviceSet,
  allocs: DeviceAllocations,
  modules: KernelModules,
  req: BenchmarkRequest,
): Promise<BenchmarkResult> {
  const { count, iters, dtype } = req
  if (!DTYPES.includes(dtype)) throw new LlcommError('UNSUPPORTED_DTYPE', `dtype ${String(dtype)}`)
  if (!Number.isInteger(count) || count <= 0)
    throw new LlcommError('INVALID_ARGUMENT', `count must be a positive integer, got ${count}`)
  if (!Number.isInteger(iters) || iters <= 0)
    throw new LlcommError('INVALID_ARGUMENT', `iters must be a positive integer, got ${iters}`)
  const op = req.op ?? 'sum'
  const nranks = comm.size
  const bytes = count * DTYPE_BYTES[dtype]
  const { algorithm } = comm.resolveAlgorithm(req.algorithm, dtype, op, bytes, false)
  const streams = comm.streams
  const callsPerGraph = Math.min(iters, MAX_CALLS_PER_GRAPH)
  const replays = Math.ceil(iters / callsPerGraph)
  const warmupReplays = Math.max(1, Math.ceil((req.warmup ?? 10) / callsPerGraph))
  const setCurrent = (i: number) => devices.use(devices.groups[i])

  const owned: DevicePtr[] = []
  const hostInputs: TensorArray[][] = []
  const sets: { inputs: DevicePtr[]; outputs: DevicePtr[] }[] = []
  let spinner: SkewSpinner | undefined
  let graph: CapturedGraph | undefined
  let spinGraph: CapturedGraph | undefined
  const events: ReturnType<CudaDriver['eventCreate']>[] = []
  try {
    const symmetric = algorithm === 'nccl-symmetric'
    for (let s = 0; s < INPUT_SETS; s++) {
      const hs: TensorArray[] = []
      const set = { inputs: [] as DevicePtr[], outputs: [] as DevicePtr[] }
      const symIn = symmetric ? comm.nccl().allocSymmetric(bytes) : undefined
      const symOut = symmetric ? comm.nccl().allocSymmetric(bytes) : undefined
      for (let r = 0; r < nranks; r++) {
        const g = devices.groups[devices.rankGroup[r]]
        const x = randomInput(dtype, count)
        hs.push(x)
        const inp = symIn ? symIn[r] : allocs.alloc(g.context, bytes, `bench.in[${s}][${r}]`)
        const out = symOut ? symOut[r] : allocs.alloc(g.context, bytes, `bench.out[${s}][${r}]`)
        if (!symIn) owned.push(inp, out)
        driver.setCurrent(g.context)
        driver.copyHtoD(inp, x, bytes)
        driver.memsetD32(out, 0x7fbfdead, Math.floor(bytes / 4)) // poison: an unwritten output is caught
        set.inputs.push(inp)
        set.outputs.push(out)
      }
      hostInputs.push(hs)
      sets.push(set)
    }
    const calls: PreparedDeviceAllReduce[] = sets.map((s) =>
      comm.prepareDeviceAllReduce({
        inputs: s.inputs,
        outputs: s.outputs,
        count,
        dtype,
        op,
        algorithm,
        protocol: req.protocol,
        pdl: req.pdl ?? false,
        fallback: false,
        streams,
      }),
    )
    const skewNs = (req.skewUs ?? 0) * 1000
    const computeNs = (req.computeUs ?? 0) * 1000
    if (skewNs > 0 || computeNs > 0)
      spinner = new SkewSpinner(driver, devices, allocs, modules, nranks, callsPerGraph, skewNs, Math.random, computeNs)
    graph = CapturedGraph.capture(driver, streams, setCurrent, () => {
      for (let c = 0; c < callsPerGraph; c++) {
        spinner?.issue(c, streams)
        calls[c % INPUT_SETS].issue(streams)
      }
    })
    if (spinner) {
      const sp = spinner
      spinGraph = CapturedGraph.capture(driver, streams, setCurrent, () => {
        for (let c = 0; c < callsPerGraph; c++) sp.issue(c, streams)
      })
    }
    setCurrent(0)
    const s0: CuStream = streams[0]
    const e0 = driver.eventCreate(CU_EVENT_DEFAULT)
    events.push(e0)
    const e1 = driver.eventCreate(CU_EVENT_DEFAULT)
    events.push(e1)
    for (let w = 0; w < warmupReplays; w++) graph.replay()
    driver.streamSynchronize(s0)
    comm.checkDeviceError()
    const timeReplay = (gr: CapturedGraph): number => {
      setCurrent(0)
      driver.eventRecord(e0, s0)
      gr.replay()
      driver.eventRecord(e1, s0)
      driver.eventSynchronize(e1)
      return (driver.eventElapsedMs(e0, e1) * 1000) / callsPerGraph
    }
    const timesUs: number[] = []
    const skewWaitUs: number[] = []
    for (let i = 0; i < replays; i++) {
      const total = timeReplay(graph)
      if (spinGraph) {
        const wait = timeReplay(spinGraph)
        skewWaitUs.push(wait)
        timesUs.push(Math.max(0, total - wait))
      } else {
        timesUs.push(total)
        skewWaitUs.push(0)
      }
    }
    comm.checkDeviceError()
    // Correctness of the last call of the last replay.
    const lastSet = (callsPerGraph - 1) % INPUT_SETS
    const outs: TensorArray[] = []
    for (let r = 0; r < nranks; r++) {
      const g = devices.groups[devices.rankGroup[r]]
      driver.setCurrent(g.context)
      const o = dtype === 'f32' ? new Float32Array(count) : new Uint16Array(count)
      driver.copyDtoH(o, sets[lastSet].outputs[r], bytes)
      outs.push(o)
    }
    const ref = referenceSum(hostInputs[lastSet], dtype, count)
    let wrong = 0
    const model = numericModel(algorithm, dtype, comm.accumulation)
    for (const o of outs) wrong += countWrong(o, ref, nranks, dtype, count, model)
    if (ranksAgreeBitwise(outs, count) >= 0) {
      // Count every element where some rank differs from rank 0 (each such element is wrong on some rank).
      const w0 = outs[0]
      for (let r = 1; r < nranks; r++) {
        const a = new Uint8Array(outs[r].buffer)
        const b = new Uint8Array(w0.buffer)
        const eb = DTYPE_BYTES[dtype]
        for (let i = 0; i < count; i++) {
          for (let k = 0; k < eb; k++) {
            if (a[i * eb + k] !== b[i * eb + k]) {
              wrong++
              break
            }
          }
        }
      }
    }
    return { algorithm, timesUs, skewWaitUs, wrong }
  } finally {
    drainStreams(driver, streams, setCurrent)
    for (const e of events) driver.eventDestroy(e)
    spinGraph?.destroy()
    graph?.destroy()
    spinner?.dispose()
    for (const p of owned.reverse()) allocs.release(p)
  }
}
