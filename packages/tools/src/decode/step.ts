/**
 * `llcomm decode` on cuda: one tensor-parallel decode step of a Llama-style model (src/decode/plan.ts: real shapes,
 * random weights, packages/tools/kernels/decode.cu) captured as one CUDA graph per AllReduce algorithm, plus one graph with
 * no AllReduce at all (`none`: each rank adds its own partial sum, so the step does the same compute). Every rank
 * runs its shard on its device's stream; the step's 2 × layers AllReduces are the only communication.
 *
 * Timing: each graph is replayed `warmup` times, then rounds × replays single replays are timed with events on the
 * first stream (one replay = one decode step, graph launch included), the algorithms taking turns within each
 * round (the first one rotates) so that drift hits them alike. The step's time per AllReduce is
 * (median step − median step without AllReduce) / AllReduces per step: what one call costs where it lives.
 *
 * Checks: after timing, every rank's residual stream (f32) must be bitwise identical (all ranks add the same
 * AllReduce outputs in the same order) and finite; each algorithm's residual is compared with the first
 * algorithm's (a max relative difference, reported: the reduction order differs between algorithms).
 */
import type { AlgorithmName, DeviceAllocations, DeviceSet, KernelModules, LaunchGroup } from 'llcomm/internal'
import {
  CapturedGraph,
  CU_EVENT_DEFAULT,
  type CudaCommunicator,
  type CudaDriver,
  type CuStream,
  cudaCommunicatorInternals,
  type DevicePtr,
  drainStreams,
  LlcommError,
  offsetDevicePtr,
  type PreparedDeviceAllReduce,
  PreparedLaunch,
} from 'llcomm/internal'
import {
  f32Bits,
  LLCOMM_DECODE_MMA_ROWS,
  LLCOMM_DECODE_NORM_THREADS,
  LLCOMM_DECODE_THREADS,
  packDecodeAttentionParams,
  packDecodeFillParams,
  packDecodeGemvParams,
  packDecodeNormParams,
} from '../kernels/abi.js'
import { DECODE_SOURCE } from '../kernels/table.js'
import type { ModelArchitecture } from '../model/decode-tables.js'
import type { DecodeStepPlan, SlabBuffer } from './plan.js'
import { DECODE_RMS_EPS, DECODE_ROPE_THETA, decodeFillSpecs, planDecodeStep } from './plan.js'

/** The step without any AllReduce (the compute alone). */
export const NO_ALLREDUCE = 'none'
/**
 * The step's AllReduce + RMSNorm pairs run by llcomm's fused kernels or by the same arithmetic unfused (issue 21;
 * fused-launcher.ts). Every pair is residual += AllReduce(partial); normed = RMSNorm(residual) * weight:
 *   fused, fused-oneshot, fused-twoshot: one deviceAllReduceRmsNorm (auto / forced kernel);
 *   unfused:       deviceAllReduce (llcomm auto) then deviceRmsNorm (the fused kernels' RMSNorm, unfused);
 *   nccl+rmsnorm:  NCCL's AllReduce then the same deviceRmsNorm;
 *   none+rmsnorm:  no AllReduce (each rank adds its own partial sum) then the same deviceRmsNorm.
 * The first layer's input norm (the embedding, no AllReduce before it) stays the decode kernel's in every variant.
 */
export const FUSED_DECODE_VARIANTS = [
  'fused',
  'fused-oneshot',
  'fused-twoshot',
  'unfused',
  'nccl+rmsnorm',
  'none+rmsnorm',
] as const
export type FusedDecodeVariant = (typeof FUSED_DECODE_VARIANTS)[number]
export type DecodeAlgorithm = AlgorithmName | typeof NO_ALLREDUCE | FusedDecodeVariant
export function isFusedDecodeVariant(a: string): a is FusedDecodeVariant {
  return (FUSED_DECODE_VARIANTS as readonly string[]).includes(a)
}

export interface DecodeStepRequest {
  architecture: ModelArchitecture
  batch: number
  context: number
  layers?: number
  algorithms: readonly DecodeAlgorithm[]
  /** Timed replays per algorithm and round. */
  replays: number
  rounds: number
  /** Untimed replays per algorithm before the first round. */
  warmup: number
  pdl?: boolean
  /**
   * GEMV grid: at most this many 128-thread blocks per SM, taking several rows in turn (0 or absent: every block
   * launched: a warp per row pair at batch 1, a block per LLCOMM_DECODE_MMA_ROWS rows above).
   */
  gemvBlocksPerSm?: number
  /** Keep every rank's final residual (f32) and logits (bf16 bits) per algorithm: the decode test's reference. */
  keepOutputs?: boolean
  /** Called after each timed replay (progress bars). */
  onReplay?: (done: number, total: number) => void
}

export interface DecodeStepRow {
  algorithm: DecodeAlgorithm
  /** Every timed replay (µs), in order. */
  stepUs: number[]
  /** Every rank's residual bitwise equal to rank 0's. */
  ranksAgree: boolean
  /** No NaN or Inf in any rank's residual. */
  finite: boolean
  /** max |residual − first algorithm's| / max |first algorithm's| over rank 0's residual. */
  maxRelDiffVsFirst: number
}

export interface DecodeStepOutputs {
  /** [rank] f32[batch × hidden] */
  residual: Float32Array[]
  /** [rank] bf16 bits [batch × vocabRows] */
  logits: Uint16Array[]
}

export interface DecodeStepResult {
  plan: DecodeStepPlan
  rows: DecodeStepRow[]
  outputs?: Partial<Record<DecodeAlgorithm, DecodeStepOutputs>>
}

/** The kernels of one device, one PreparedLaunch per (kernel, grid), reused with new parameters per launch. */
class DecodeLaunches {
  private readonly launches = new Map<string, PreparedLaunch>()
  constructor(
    private readonly driver: CudaDriver,
    private readonly modules: KernelModules,
    private readonly group: LaunchGroup,
  ) {}

  launch(name: string, grid: number, threads: number, params: Uint8Array, stream: CuStream): void {
    const key = `${name}|${grid}|${threads}`
    let l = this.launches.get(key)
    if (!l) {
      const f = this.modules.function(this.group, DECODE_SOURCE, name)
      l = new PreparedLaunch(
        this.driver,
        f,
        name,
        { gridDimX: grid, blockDimX: threads, sharedBytes: 0 },
        { cooperative: false, pdl: false },
        params.byteLength,
      )
      this.launches.set(key, l)
    }
    l.setParams(params)
    l.launchOn(stream)
  }

  dispose(): void {
    for (const l of this.launches.values()) l.dispose()
    this.launches.clear()
  }
}

export async function runCudaDecodeStep(
  comm: CudaCommunicator,
  driver: CudaDriver,
  devices: DeviceSet,
  allocs: DeviceAllocations,
  modules: KernelModules,
  req: DecodeStepRequest,
): Promise<DecodeStepResult> {
  const nranks = comm.size
  const smCount = Math.min(...devices.groups.map((g) => g.smCount))
  const plan = planDecodeStep(req.architecture, {
    tp: nranks,
    batch: req.batch,
    context: req.context,
    layers: req.layers,
    smCount,
  })
  if (req.algorithms.length === 0) throw new LlcommError('INVALID_ARGUMENT', 'no algorithm to run the step with')
  const counts = {
    replays: req.replays,
    rounds: req.rounds,
    warmup: req.warmup,
    gemvBlocksPerSm: req.gemvBlocksPerSm ?? 0,
  }
  for (const [k, v] of Object.entries(counts))
    if (!Number.isInteger(v) || v < (k === 'replays' || k === 'rounds' ? 1 : 0))
      throw new LlcommError(
        'INVALID_ARGUMENT',
        `${k} must be a whole number ≥ ${k === 'replays' || k === 'rounds' ? 1 : 0}, got ${v}`,
      )
  const streams = comm.streams
  const setCurrent = (i: number) => devices.use(devices.groups[i])
  const slabs: DevicePtr[] = []
  const owned: DevicePtr[] = []
  const launchers = devices.groups.map((g) => new DecodeLaunches(driver, modules, g))
  const graphs: CapturedGraph[] = []
  const events: ReturnType<CudaDriver['eventCreate']>[] = []
  const at = (r: number, b: SlabBuffer): bigint => BigInt(slabs[r]) + BigInt(b.offset)
  const groupOf = (r: number) => devices.groups[devices.rankGroup[r]]
  try {
    // ---- memory and random weights ----
    for (let r = 0; r < nranks; r++) {
      const g = groupOf(r)
      try {
        slabs.push(allocs.alloc(g.context, plan.slabBytes, `decode.slab[${r}]`))
      } catch (e) {
        const onDevice = g.ranks.length
        throw new LlcommError(
          'INVALID_ARGUMENT',
          `the decode step needs ${(plan.slabBytes / 2 ** 30).toFixed(2)} GiB per rank (${onDevice} rank(s) on device ${g.ordinal}); allocation failed: ${e instanceof Error ? e.message : String(e)}. Use fewer --layers, a smaller --batch or --context, or more GPUs.`,
          { slabBytes: plan.slabBytes, device: g.ordinal },
        )
      }
    }
    for (let r = 0; r < nranks; r++) {
      const g = groupOf(r)
      driver.setCurrent(g.context)
      for (const f of decodeFillSpecs(plan, r)) {
        const count = f.buffer.bytes / 2
        const grid = Math.min(g.smCount * 8, Math.max(1, Math.ceil(count / LLCOMM_DECODE_THREADS)))
        launchers[g.index].launch(
          'llcomm_decode_fill',
          grid,
          LLCOMM_DECODE_THREADS,
          packDecodeFillParams({ data: at(r, f.buffer), count, seed: f.seed, scaleBits: f32Bits(f.scale) }),
          streams[g.index],
        )
      }
    }
    // ---- the AllReduce buffers and calls ----
    const arBytes = plan.allReduceBytes
    const arBuffers = new Map<'plain' | 'symmetric', { inputs: DevicePtr[]; outputs: DevicePtr[] }>()
    const buffersFor = (alg: DecodeAlgorithm) => {
      const kind = alg === 'nccl-symmetric' ? 'symmetric' : 'plain'
      let b = arBuffers.get(kind)
      if (!b) {
        if (kind === 'symmetric') {
          b = { inputs: comm.nccl().allocSymmetric(arBytes), outputs: comm.nccl().allocSymmetric(arBytes) }
        } else {
          b = { inputs: [], outputs: [] }
          for (let r = 0; r < nranks; r++) {
            const g = groupOf(r)
            const i = allocs.alloc(g.context, arBytes, `decode.allReduceIn[${r}]`)
            const o = allocs.alloc(g.context, arBytes, `decode.allReduceOut[${r}]`)
            owned.push(i, o)
            b.inputs.push(i)
            b.outputs.push(o)
          }
        }
        arBuffers.set(kind, b)
      }
      return b
    }
    const calls = new Map<DecodeAlgorithm, PreparedDeviceAllReduce | undefined>()
    for (const alg of req.algorithms) {
      const b = buffersFor(alg)
      calls.set(
        alg,
        alg === NO_ALLREDUCE || isFusedDecodeVariant(alg)
          ? undefined
          : comm.prepareDeviceAllReduce({
              inputs: b.inputs,
              outputs: b.outputs,
              count: plan.allReduceCount,
              dtype: 'bf16',
              op: 'sum',
              algorithm: alg,
              pdl: req.pdl ?? false,
              fallback: false,
              streams,
            }),
      )
    }

    // ---- one step, issued on every rank's stream ----
    const eachRank = (issue: (r: number, launch: DecodeLaunches, stream: CuStream) => void) => {
      for (const g of devices.groups) {
        if (devices.multiDevice) driver.setCurrent(g.context)
        for (const r of g.ranks) issue(r, launchers[g.index], streams[g.index])
      }
    }
    const B = plan.batch
    const gemv = (gated: boolean) => `llcomm_decode_gemv_${gated ? 'gated_' : ''}b${plan.gemvBatch}`
    const gemvCap = req.gemvBlocksPerSm ? req.gemvBlocksPerSm * smCount : Number.POSITIVE_INFINITY
    // batch 1: a warp per row pair (plain) or gated row; above: a block per LLCOMM_DECODE_MMA_ROWS rows (tensor cores)
    const gemvGrid = (rows: number, gated: boolean) =>
      Math.min(
        gemvCap,
        plan.gemvBatch === 1
          ? Math.ceil((gated ? rows : rows / 2) / (LLCOMM_DECODE_THREADS / 32))
          : rows / LLCOMM_DECODE_MMA_ROWS,
      )
    const issueGemv = (
      x: SlabBuffer,
      w: SlabBuffer,
      y: (r: number) => bigint,
      rows: number,
      cols: number,
      gated: boolean,
    ) =>
      eachRank((r, l, s) =>
        l.launch(
          gemv(gated),
          gemvGrid(rows, gated),
          LLCOMM_DECODE_THREADS,
          packDecodeGemvParams({ x: at(r, x), weight: at(r, w), y: y(r), batch: B, rows, cols }),
          s,
        ),
      )
    const issueNorm = (delta: (r: number) => bigint, weight: SlabBuffer, mode: 0 | 1) =>
      eachRank((r, l, s) =>
        l.launch(
          'llcomm_decode_add_rmsnorm',
          B,
          LLCOMM_DECODE_NORM_THREADS,
          packDecodeNormParams({
            residual: at(r, plan.residual),
            delta: delta(r),
            weight: at(r, weight),
            out: at(r, plan.normed),
            batch: B,
            hidden: plan.hidden,
            mode,
            epsBits: f32Bits(DECODE_RMS_EPS),
          }),
          s,
        ),
      )
    const attentionParams = (r: number, layer: number) =>
      packDecodeAttentionParams({
        qkv: at(r, plan.qkvOut),
        kCache: at(r, plan.layerBuffers[layer].kCache),
        vCache: at(r, plan.layerBuffers[layer].vCache),
        partial: at(r, plan.attentionPartial),
        out: at(r, plan.attentionOut),
        batch: B,
        qHeads: plan.qHeads,
        kvHeads: plan.kvHeads,
        context: plan.context,
        maxContext: plan.context,
        splits: plan.attentionSplits,
        tokensPerSplit: plan.tokensPerSplit,
        ropeThetaBits: f32Bits(DECODE_ROPE_THETA),
      })
    // One layer's attention on every rank: RoPE + KV append, split-context attention, the splits' combine.
    const issueAttention = (layer: number) => {
      eachRank((r, l, s) =>
        l.launch(
          'llcomm_decode_rope_append',
          B * (plan.qHeads + 2 * plan.kvHeads),
          plan.headDim / 2,
          attentionParams(r, layer),
          s,
        ),
      )
      eachRank((r, l, s) =>
        l.launch(
          'llcomm_decode_attention',
          plan.attentionSplits * plan.kvHeads * B,
          LLCOMM_DECODE_THREADS,
          attentionParams(r, layer),
          s,
        ),
      )
      eachRank((r, l, s) =>
        l.launch(
          'llcomm_decode_attention_combine',
          plan.qHeads * B,
          LLCOMM_DECODE_THREADS,
          attentionParams(r, layer),
          s,
        ),
      )
    }
    const issueStep = (alg: DecodeAlgorithm) => {
      const call = calls.get(alg)
      const ar = buffersFor(alg)
      // The residual's delta after an AllReduce: its output, or (no AllReduce) the rank's own partial sum.
      const reduced = (r: number) => BigInt(call ? ar.outputs[r] : ar.inputs[r])
      const partialOut = (r: number) => BigInt(ar.inputs[r])
      plan.layerBuffers.forEach((lb, layer) => {
        issueNorm(layer === 0 ? (r) => at(r, plan.embedding) : reduced, lb.attentionNorm, layer === 0 ? 0 : 1)
        issueGemv(plan.normed, lb.qkv, (r) => at(r, plan.qkvOut), plan.qkvRows, plan.hidden, false)
        issueAttention(layer)
        issueGemv(plan.attentionOut, lb.o, partialOut, plan.hidden, plan.qHeads * plan.headDim, false)
        call?.issue(streams)
        issueNorm(reduced, lb.mlpNorm, 1)
        issueGemv(plan.normed, lb.gateUp, (r) => at(r, plan.activation), plan.intermediate, plan.hidden, true)
        issueGemv(plan.activation, lb.down, partialOut, plan.hidden, plan.intermediate, false)
        call?.issue(streams)
      })
      issueNorm(reduced, plan.finalNorm, 1)
      issueGemv(plan.normed, plan.lmHead, (r) => at(r, plan.logits), plan.vocabRows, plan.hidden, false)
    }

    // ---- the fused variants: every AllReduce + RMSNorm pair as one prepared call (or a pair of them) ----
    const ptrs = (b: SlabBuffer) => slabs.map((_, r) => Number(at(r, b)) as DevicePtr)
    const pairCalls = new Map<string, { issue(streams?: readonly CuStream[]): void }[]>()
    const pairFor = (alg: FusedDecodeVariant, weight: SlabBuffer) => {
      const key = `${alg}|${weight.offset}`
      let c = pairCalls.get(key)
      if (c) return c
      const ar = buffersFor(alg)
      const norm = {
        residuals: ptrs(plan.residual),
        outputs: ptrs(plan.normed),
        weights: ptrs(weight),
        rows: B,
        hidden: plan.hidden,
        eps: DECODE_RMS_EPS,
        dtype: 'bf16' as const,
        residualF32: true,
        pdl: req.pdl ?? false,
        streams,
      }
      if (alg === 'fused' || alg === 'fused-oneshot' || alg === 'fused-twoshot') {
        const algorithm = alg === 'fused' ? 'auto' : alg === 'fused-oneshot' ? 'oneshot' : 'twoshot'
        c = [comm.prepareDeviceAllReduceRmsNorm({ ...norm, inputs: ar.inputs, algorithm })]
      } else if (alg === 'none+rmsnorm') {
        c = [comm.prepareDeviceRmsNorm({ ...norm, inputs: ar.inputs })]
      } else {
        const allReduce = comm.prepareDeviceAllReduce({
          inputs: ar.inputs,
          outputs: ar.outputs,
          count: plan.allReduceCount,
          dtype: 'bf16',
          algorithm: alg === 'nccl+rmsnorm' ? 'nccl' : 'auto',
          pdl: req.pdl ?? false,
          fallback: false,
          streams,
        })
        c = [allReduce, comm.prepareDeviceRmsNorm({ ...norm, inputs: ar.outputs })]
      }
      pairCalls.set(key, c)
      return c
    }
    const issueFusedStep = (alg: FusedDecodeVariant) => {
      const ar = buffersFor(alg)
      const partialOut = (r: number) => BigInt(ar.inputs[r])
      const pair = (weight: SlabBuffer) => {
        for (const c of pairFor(alg, weight)) c.issue(streams)
      }
      plan.layerBuffers.forEach((lb, layer) => {
        if (layer === 0) issueNorm((r) => at(r, plan.embedding), lb.attentionNorm, 0)
        issueGemv(plan.normed, lb.qkv, (r) => at(r, plan.qkvOut), plan.qkvRows, plan.hidden, false)
        issueAttention(layer)
        issueGemv(plan.attentionOut, lb.o, partialOut, plan.hidden, plan.qHeads * plan.headDim, false)
        pair(lb.mlpNorm)
        issueGemv(plan.normed, lb.gateUp, (r) => at(r, plan.activation), plan.intermediate, plan.hidden, true)
        issueGemv(plan.activation, lb.down, partialOut, plan.hidden, plan.intermediate, false)
        pair(layer + 1 < plan.layerBuffers.length ? plan.layerBuffers[layer + 1].attentionNorm : plan.finalNorm)
      })
      issueGemv(plan.normed, plan.lmHead, (r) => at(r, plan.logits), plan.vocabRows, plan.hidden, false)
    }

    // Every pair is prepared before any capture (module loads and packing stay out of the captured stream).
    for (const alg of req.algorithms)
      if (isFusedDecodeVariant(alg))
        plan.layerBuffers.forEach((lb, layer) => {
          pairFor(alg, lb.mlpNorm)
          pairFor(
            alg,
            layer + 1 < plan.layerBuffers.length ? plan.layerBuffers[layer + 1].attentionNorm : plan.finalNorm,
          )
        })
    const byAlg = new Map<DecodeAlgorithm, CapturedGraph>()
    for (const alg of req.algorithms) {
      const gr = CapturedGraph.capture(driver, streams, setCurrent, () =>
        isFusedDecodeVariant(alg) ? issueFusedStep(alg) : issueStep(alg),
      )
      graphs.push(gr)
      byAlg.set(alg, gr)
    }
    for (const [i, s] of streams.entries()) {
      setCurrent(i)
      driver.streamSynchronize(s)
    }
    comm.checkDeviceError()

    // ---- timing ----
    setCurrent(0)
    const s0 = streams[0]
    const e0 = driver.eventCreate(CU_EVENT_DEFAULT)
    events.push(e0)
    const e1 = driver.eventCreate(CU_EVENT_DEFAULT)
    events.push(e1)
    for (const alg of req.algorithms) {
      const gr = byAlg.get(alg) as CapturedGraph
      for (let w = 0; w < req.warmup; w++) gr.replay()
      setCurrent(0)
      driver.streamSynchronize(s0)
      comm.checkDeviceError()
    }
    const stepUs = new Map<DecodeAlgorithm, number[]>(req.algorithms.map((a) => [a, []]))
    const total = req.rounds * req.replays * req.algorithms.length
    let done = 0
    for (let round = 0; round < req.rounds; round++) {
      for (let k = 0; k < req.algorithms.length; k++) {
        const alg = req.algorithms[(k + round) % req.algorithms.length]
        const gr = byAlg.get(alg) as CapturedGraph
        for (let i = 0; i < req.replays; i++) {
          setCurrent(0)
          driver.eventRecord(e0, s0)
          gr.replay()
          driver.eventRecord(e1, s0)
          driver.eventSynchronize(e1)
          stepUs.get(alg)?.push(driver.eventElapsedMs(e0, e1) * 1000)
          req.onReplay?.(++done, total)
        }
      }
      comm.checkDeviceError()
    }

    // ---- checks: one more replay per algorithm, then every rank's residual ----
    const rows: DecodeStepRow[] = []
    const outputs: Partial<Record<DecodeAlgorithm, DecodeStepOutputs>> = {}
    let first: Float32Array | undefined
    for (const alg of req.algorithms) {
      const gr = byAlg.get(alg) as CapturedGraph
      gr.replay()
      const residual: Float32Array[] = []
      const logits: Uint16Array[] = []
      for (const [i, s] of streams.entries()) {
        setCurrent(i)
        driver.streamSynchronize(s)
      }
      comm.checkDeviceError()
      for (let r = 0; r < nranks; r++) {
        driver.setCurrent(groupOf(r).context)
        const res = new Float32Array(plan.batch * plan.hidden)
        driver.copyDtoH(res, offsetDevicePtr(slabs[r], plan.residual.offset), res.byteLength)
        residual.push(res)
        if (req.keepOutputs) {
          const lg = new Uint16Array(plan.batch * plan.vocabRows)
          driver.copyDtoH(lg, offsetDevicePtr(slabs[r], plan.logits.offset), lg.byteLength)
          logits.push(lg)
        }
      }
      const bits0 = new Uint32Array(residual[0].buffer)
      const ranksAgree = residual.every((x) => {
        const b = new Uint32Array(x.buffer)
        for (let i = 0; i < b.length; i++) if (b[i] !== bits0[i]) return false
        return true
      })
      const finite = residual.every((x) => x.every(Number.isFinite))
      first ??= residual[0]
      let maxAbs = 0
      let maxDiff = 0
      for (let i = 0; i < first.length; i++) {
        maxAbs = Math.max(maxAbs, Math.abs(first[i]))
        maxDiff = Math.max(maxDiff, Math.abs(residual[0][i] - first[i]))
      }
      rows.push({
        algorithm: alg,
        stepUs: stepUs.get(alg) ?? [],
        ranksAgree,
        finite,
        maxRelDiffVsFirst: maxAbs > 0 ? maxDiff / maxAbs : maxDiff,
      })
      if (req.keepOutputs) outputs[alg] = { residual, logits }
    }
    return { plan, rows, ...(req.keepOutputs ? { outputs } : {}) }
  } finally {
    drainStreams(driver, streams, setCurrent)
    for (const e of events) driver.eventDestroy(e)
    for (const g of graphs) g.destroy()
    for (const l of launchers) l.dispose()
    for (const p of owned.reverse()) allocs.release(p)
    for (const p of slabs.reverse()) allocs.release(p)
  }
}

/** One tensor-parallel decode step per algorithm on an open communicator's devices (`llcomm decode`). */
export async function decodeStep(comm: CudaCommunicator, req: DecodeStepRequest): Promise<DecodeStepResult> {
  const { driver, deviceSet, allocations, modules } = cudaCommunicatorInternals(comm)
  return runCudaDecodeStep(comm, driver, deviceSet, allocations, modules, req)
}
