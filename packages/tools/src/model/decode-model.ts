/**
 * Decode cost model: the time of one decode step (one token per sequence) of a tensor-parallel model, in the
 * memory-bound regime of small batches:
 *
 *   memoryUs = (weight bytes read per GPU + KV-cache bytes read per GPU) / (HBM bandwidth × efficiency)
 *   kernels  = the step's kernel count, derived from the architecture and a kernel recipe (kernelsPerStep)
 *   graph:  stepUs = memoryUs + kernels × (graphKernelUs + graphKernelUsPerExtraSequence × (batch − 1))
 *           ITL    = stepUs + allReducesPerToken × (allReduceUs(algorithm, TP, batch × hidden × activation bytes)
 *                    + allReduceInStepUs)   (the in-step cost beyond a bench latency; decode-tp.ts fits it)
 *   eager:  ITL    = max(graph ITL, (kernels + allReducesPerToken) × eagerKernelIssueUs)   (host-issue bound)
 *   none:   ITL    = memoryUs + AllReduces (the model without a launch term)
 *
 * Two AllReduces per layer (after attention, after the MLP/MoE) when TP > 1. The per-kernel constants are fitted
 * on measured single-GPU shards (decode-calibration.ts; data/models/gpus.json says where and how well).
 */
import { LlcommError } from 'llcomm/internal'
import {
  DECODE_OPS,
  type DecodeOp,
  findKernelRecipe,
  type GpuSpec,
  type KernelRecipe,
  loadKernelRecipes,
  type ModelArchitecture,
  WEIGHT_DTYPE_BYTES,
} from './decode-tables.js'
import { type FitParam, type ParamValues, paramsFromPlatform, predictLatency } from './latency-model.js'
import type { AlgorithmTable, PlatformConstants } from './latency-tables.js'
import { getAlgorithm } from './latency-tables.js'

export interface ParamCounts {
  attentionPerLayer: number
  /** Of attentionPerLayer, the part every TP rank holds whole (MLA's down projections). */
  attentionReplicatedPerLayer: number
  denseMlpPerLayer: number
  expert: number
  routerPerLayer: number
  embedding: number
  lmHead: number
  total: number
  activePerToken: number
}

export function countParams(m: ModelArchitecture): ParamCounts {
  const h = m.hiddenSize
  let attention: number
  let replicated = 0
  if (m.attention === 'mla') {
    const q = m.qLoraRank ?? 0
    const kv = m.kvLoraRank ?? 0
    const nope = m.qkNopeHeadDim ?? 0
    const rope = m.qkRopeHeadDim ?? 0
    const v = m.vHeadDim ?? 0
    replicated = h * q + h * (kv + rope)
    attention = replicated + q * m.heads * (nope + rope) + kv * m.heads * (nope + v) + m.heads * v * h
  } else {
    attention = h * m.heads * m.headDim + 2 * h * m.kvHeads * m.headDim + m.heads * m.headDim * h
  }
  const denseMlp = 3 * h * m.intermediateSize
  const expert = m.moe ? 3 * h * m.moe.expertIntermediateSize : 0
  const router = m.moe ? h * m.moe.routedExperts : 0
  const embedding = m.vocabSize * h
  const lmHead = m.tiedEmbeddings ? 0 : m.vocabSize * h
  const denseLayers = m.moe ? m.moe.denseLayers : m.layers
  const moeLayers = m.layers - denseLayers
  const expertsTotal = m.moe ? m.moe.routedExperts + m.moe.sharedExperts : 0
  const expertsActive = m.moe ? m.moe.expertsPerToken + m.moe.sharedExperts : 0
  const common = m.layers * attention + denseLayers * denseMlp + embedding + lmHead
  return {
    attentionPerLayer: attention,
    attentionReplicatedPerLayer: replicated,
    denseMlpPerLayer: denseMlp,
    expert,
    routerPerLayer: router,
    embedding,
    lmHead,
    total: common + moeLayers * (expertsTotal * expert + router),
    activePerToken: common + moeLayers * (expertsActive * expert + router),
  }
}

/** Expected distinct routed experts a batch touches in one layer, tokens routed independently and uniformly. */
export function expectedExpertsTouched(routedExperts: number, expertsPerToken: number, batch: number): number {
  return routedExperts * (1 - (1 - expertsPerToken / routedExperts) ** batch)
}

/** graph: CUDA-graph replay; eager: a host thread issues every kernel; none: no launch term (memory + AllReduce). */
export const LAUNCH_MODES = ['graph', 'eager', 'none'] as const
export type LaunchMode = (typeof LAUNCH_MODES)[number]

export function parseLaunchMode(text: string): LaunchMode {
  if ((LAUNCH_MODES as readonly string[]).includes(text)) return text as LaunchMode
  throw new LlcommError(
    'INVALID_ARGUMENT',
    `launch mode must be one of ${LAUNCH_MODES.join(', ')}, got ${JSON.stringify(text)}`,
  )
}

/** The per-kernel constants as plain numbers (µs). */
export interface StepConstants {
  graphKernelUs: number
  graphKernelUsPerExtraSequence: number
  eagerKernelIssueUs: number
}

export function stepConstantsOf(gpu: GpuSpec): StepConstants | undefined {
  const d = gpu.decodeStep
  if (!d) return undefined
  const c = d.graphKernelUs.value
  const b = d.graphKernelUsPerExtraSequence.value
  const h = d.eagerKernelIssueUs.value
  if (c === null || b === null || h === null) return undefined
  return { graphKernelUs: c, graphKernelUsPerExtraSequence: b, eagerKernelIssueUs: h }
}

export type OpCounts = Record<DecodeOp, number>

function emptyOps(): OpCounts {
  return { rmsNorm: 0, gemm: 0, kvCacheWrite: 0, attention: 0, elementwise: 0, moeRouting: 0 }
}

/** The operations of one layer's attention block (norm, projections, cache write, attention, residual add). */
export function attentionOps(m: ModelArchitecture): OpCounts {
  const ops = emptyOps()
  if (m.attention === 'mla') {
    // input norm + q_a and kv_a latent norms; q_a, q_b, kv_a, o projections and, decoding in the absorbed form,
    // q_nope × W_kv_b(k) and out × W_kv_b(v); latent and RoPE caches written
    Object.assign(ops, { rmsNorm: 3, gemm: 6, kvCacheWrite: 2, attention: 1, elementwise: 1 })
  } else {
    // input norm; QKV (one fused projection) and O; K and V cache writes; residual add
    Object.assign(ops, { rmsNorm: 1, gemm: 2, kvCacheWrite: 2, attention: 1, elementwise: 1 })
  }
  return ops
}

/** A dense gated MLP block: norm, gate_up and down projections, SiLU, gate × up, residual add. */
export function denseMlpOps(): OpCounts {
  return { ...emptyOps(), rmsNorm: 1, gemm: 2, elementwise: 3 }
}

/**
 * A MoE block at a given batch: norm, router projection and routing, per routed expert touched (expected count)
 * gate_up and down projections plus SiLU, gate × up, × routing weight and accumulate; the shared experts as one
 * gated MLP plus the add of its output; residual add.
 */
export function moeOps(m: ModelArchitecture, batch: number): OpCounts {
  const moe = m.moe
  if (!moe) return emptyOps()
  const touched = expectedExpertsTouched(moe.routedExperts, moe.expertsPerToken, batch)
  const shared = moe.sharedExperts > 0 ? 1 : 0
  return {
    ...emptyOps(),
    rmsNorm: 1,
    gemm: 1 + 2 * touched + 2 * shared,
    moeRouting: 1,
    elementwise: 4 * touched + 3 * shared + 1,
  }
}

export interface StepKernels {
  /** Operations of the whole step (all layers, final norm, LM head). */
  ops: OpCounts
  /** Kernels of the whole step under the recipe (an expectation: MoE experts touched are an expected count). */
  kernels: number
  perDenseLayer: number
  perMoeLayer: number
}

function kernelsOf(ops: OpCounts, recipe: KernelRecipe): number {
  let n = 0
  for (const op of DECODE_OPS) {
    const k = recipe.kernelsPerOp[op]?.value
    if (ops[op] > 0 && (k === null || k === undefined))
      throw new LlcommError('INVALID_ARGUMENT', `kernel recipe lacks a kernel count for ${op}`)
    n += ops[op] * (k ?? 0)
  }
  return n
}

/** The kernels of one decode step, from the architecture's structure and a recipe's kernels per operation. */
export function kernelsPerStep(m: ModelArchitecture, recipe: KernelRecipe, batch: number): StepKernels {
  const denseLayers = m.moe ? m.moe.denseLayers : m.layers
  const moeLayers = m.layers - denseLayers
  const attention = attentionOps(m)
  const dense = denseMlpOps()
  const moe = moeOps(m, batch)
  const ops = emptyOps()
  for (const op of DECODE_OPS) ops[op] = m.layers * attention[op] + denseLayers * dense[op] + moeLayers * moe[op]
  // final norm and the LM head
  ops.rmsNorm += 1
  ops.gemm += 1
  const perDenseLayer = kernelsOf(attention, recipe) + kernelsOf(dense, recipe)
  const perMoeLayer = m.moe ? kernelsOf(attention, recipe) + kernelsOf(moe, recipe) : 0
  return { ops, kernels: kernelsOf(ops, recipe), perDenseLayer, perMoeLayer }
}

/** GPU time of the kernels of a graph-replayed step beyond their HBM bytes: kernels × per-kernel cost at this batch. */
export function graphLaunchUs(kernels: number, batch: number, c: StepConstants): number {
  return kernels * (c.graphKernelUs + c.graphKernelUsPerExtraSequence * (batch - 1))
}

export interface DecodeRequest {
  model: ModelArchitecture
  gpu: GpuSpec
  tp: number
  batch: number
  contextTokens: number
  /** AllReduce algorithms to price; each gets its own ITL. */
  algorithms: string[]
  usdPerGpuHour?: number
  /** Latency-model parameters for the GPU's platform (calibrated ones, or the table's). */
  latencyParams?: ParamValues
  /** Default graph. */
  launch?: LaunchMode
  /** Per-kernel constants; default the GPU table's (gpu.decodeStep). */
  stepConstants?: StepConstants
  /** Kernel recipe; default the one named by gpu.decodeStep (data/models/decode-kernels.json). */
  recipe?: KernelRecipe
}

export interface DecodeAlgorithmRow {
  algorithm: string
  allReduceUs: number
  commUs: number
  itlMs: number
  tokensPerSec: number
  usdPerMillionTokens?: number
  missingTerms: FitParam[]
}

export interface DecodeEstimate {
  model: string
  gpu: string
  tp: number
  batch: number
  contextTokens: number
  weightBytesPerGpu: number
  kvBytesPerGpu: number
  effectiveHbmGBs: number
  memoryUs: number
  launch: LaunchMode
  /** Kernels of one step without the AllReduces (0 when launch is none). */
  kernelsPerStep: number
  /** GPU time the kernels add beyond memoryUs (graph form; also the GPU side of eager). */
  launchUs: number
  /** Host time to issue the step's kernels one by one (eager only; 0 otherwise). */
  hostIssueUs: number
  /** The step without AllReduce: memoryUs + launchUs, or max(that, hostIssueUs) in eager mode. */
  stepUs: number
  allReducesPerToken: number
  allReduceBytes: number
  noAllReduce: { itlMs: number; tokensPerSec: number; usdPerMillionTokens?: number }
  perAlgorithm: DecodeAlgorithmRow[]
  notes: string[]
}

export function weightBytesPerGpu(m: ModelArchitecture, tp: number, batch: number): number {
  const c = countParams(m)
  const w = WEIGHT_DTYPE_BYTES[m.weightDtype]
  const e = WEIGHT_DTYPE_BYTES[m.embeddingDtype ?? m.weightDtype]
  const denseLayers = m.moe ? m.moe.denseLayers : m.layers
  const moeLayers = m.layers - denseLayers
  const attention =
    m.layers * ((c.attentionPerLayer - c.attentionReplicatedPerLayer) / tp + c.attentionReplicatedPerLayer) * w
  const dense = (denseLayers * c.denseMlpPerLayer * w) / tp
  let moe = 0
  if (m.moe) {
    const touched = expectedExpertsTouched(m.moe.routedExperts, m.moe.expertsPerToken, batch) + m.moe.sharedExperts
    moe = moeLayers * ((touched * c.expert * w) / tp + c.routerPerLayer * w)
  }
  // vocabulary-parallel LM head; the embedding lookup reads only batch rows (left out)
  const lmHead = (c.lmHead * e) / tp
  return attention + dense + moe + lmHead
}

/** KV-cache bytes one GPU reads per decode step: GQA heads split over TP (replicated below one head per rank); MLA's latent cache replicated. */
export function kvBytesPerGpu(m: ModelArchitecture, tp: number, batch: number, contextTokens: number): number {
  const kv = WEIGHT_DTYPE_BYTES[m.kvDtype]
  const perToken =
    m.attention === 'mla'
      ? m.layers * ((m.kvLoraRank ?? 0) + (m.qkRopeHeadDim ?? 0)) * kv
      : m.layers * 2 * Math.max(1, m.kvHeads / tp) * m.headDim * kv
  return batch * contextTokens * perToken
}

/**
 * What one AllReduce of `algorithm` costs in a tensor-parallel step beyond its back-to-back latency: the GPU's
 * allReduceInStepUs, fitted on NCCL's calls, with NCCL's after-kernel cost swapped for the algorithm's own.
 */
export function allReduceInStepUsFor(
  inStepUs: number,
  afterKernel: Readonly<Record<string, number>> | undefined,
  algorithm: string,
): number {
  return afterKernel?.[algorithm] !== undefined && afterKernel.nccl !== undefined
    ? inStepUs - afterKernel.nccl + afterKernel[algorithm]
    : inStepUs
}

export function estimateDecode(
  req: DecodeRequest,
  algorithmTable: AlgorithmTable,
  platform: PlatformConstants,
): DecodeEstimate {
  const { model: m, gpu, tp, batch, contextTokens } = req
  if (!Number.isInteger(tp) || tp < 1) throw new LlcommError('INVALID_ARGUMENT', `tp must be an integer ≥ 1, got ${tp}`)
  if (!Number.isInteger(batch) || batch < 1)
    throw new LlcommError('INVALID_ARGUMENT', `batch must be an integer ≥ 1, got ${batch}`)
  if (!(contextTokens >= 0)) throw new LlcommError('INVALID_ARGUMENT', `context must be ≥ 0, got ${contextTokens}`)
  const hbm = gpu.hbmGBs.value
  const eff = gpu.hbmEfficiency.value
  if (hbm === null || eff === null)
    throw new LlcommError('INVALID_ARGUMENT', `gpu ${gpu.name} lacks hbmGBs or hbmEfficiency`)
  const effectiveHbmGBs = hbm * eff
  const weights = weightBytesPerGpu(m, tp, batch)
  const kv = kvBytesPerGpu(m, tp, batch, contextTokens)
  const memoryUs = (weights + kv) / (effectiveHbmGBs * 1e3) // GB/s = 1e3 bytes per µs
  const allReducesPerToken = tp > 1 ? 2 * m.layers : 0
  const allReduceBytes = batch * m.hiddenSize * WEIGHT_DTYPE_BYTES[m.activationDtype]
  const launch = req.launch ?? 'graph'
  let kernels = 0
  let launchUs = 0
  let issueUsPerKernel = 0
  // per AllReduce in a real step beyond its bench latency (skew, critical path); not part of launch 'none'
  let inStepUs = 0
  let afterKernel: Record<string, number> | undefined
  const inStepUsFor = (name: string) => allReduceInStepUsFor(inStepUs, afterKernel, name)
  const constants = req.stepConstants ?? stepConstantsOf(gpu)
  if (launch !== 'none') {
    if (!constants || !gpu.decodeStep)
      throw new LlcommError(
        'INVALID_ARGUMENT',
        `gpu ${gpu.name} has no per-kernel decode constants (decodeStep in data/models/gpus.json); use launch none`,
      )
    const recipe = req.recipe ?? findKernelRecipe(loadKernelRecipes(), gpu.decodeStep.recipe)
    kernels = kernelsPerStep(m, recipe, batch).kernels
    launchUs = graphLaunchUs(kernels, batch, constants)
    if (launch === 'eager') issueUsPerKernel = constants.eagerKernelIssueUs
    inStepUs = gpu.decodeStep.allReduceInStepUs?.value ?? 0
    afterKernel = (gpu.decodeStep.allReduceInDecodeStepUs ?? gpu.decodeStep.allReduceAfterKernelUs)?.values
  }
  const gpuStepUs = memoryUs + launchUs
  const hostIssueUs = kernels * issueUsPerKernel
  // eager: the host issues kernels (the AllReduce's included) while the GPU runs them; the slower side sets the pace
  const withHost = (gpuUs: number, arCalls: number) => Math.max(gpuUs, hostIssueUs + arCalls * issueUsPerKernel)
  const stepUs = withHost(gpuStepUs, 0)
  const usd = req.usdPerGpuHour
  const cost = (tokensPerSec: number) => (usd === undefined ? undefined : ((usd * tp) / 3600 / tokensPerSec) * 1e6)
  const params = req.latencyParams ?? paramsFromPlatform(platform)
  const perAlgorithm = req.algorithms.map((name): DecodeAlgorithmRow => {
    const p =
      tp > 1
        ? predictLatency(getAlgorithm(algorithmTable, name), platform, tp, allReduceBytes, params)
        : { latencyUs: 0, missingTerms: [] as FitParam[] }
    const commUs = allReducesPerToken * (p.latencyUs + (tp > 1 ? inStepUsFor(name) : 0))
    const itlUs = withHost(gpuStepUs + commUs, allReducesPerToken)
    const tokensPerSec = batch / (itlUs / 1e6)
    return {
      algorithm: name,
      allReduceUs: p.latencyUs,
      commUs,
      itlMs: itlUs / 1e3,
      tokensPerSec,
      usdPerMillionTokens: cost(tokensPerSec),
      missingTerms: p.missingTerms,
    }
  })
  const noArTokensPerSec = batch / (stepUs / 1e6)
  const notes = [
    launch === 'none'
      ? 'memory-bound decode only: compute, kernel launches and framework overhead are not modelled'
      : `${launch} launch: ${kernels.toFixed(0)} kernels per step (recipe ${gpu.decodeStep?.recipe}) × ${(launchUs / kernels || 0).toFixed(3)} µs on the GPU${launch === 'eager' ? `, issued by the host at ${issueUsPerKernel} µs each` : ''} (${gpu.decodeStep?.graphKernelUs.source})`,
    `HBM ${hbm} GB/s × efficiency ${eff} (${gpu.hbmEfficiency.source})`,
    ...(inStepUs > 0 && tp > 1
      ? [
          `each AllReduce costs its latency + ${inStepUs} µs in the step (${gpu.decodeStep?.allReduceInStepUs?.source})`,
          ...(afterKernel
            ? [
                `of that, what depends on the algorithm (after a kernel vs back to back, µs): ${Object.entries(
                  afterKernel,
                )
                  .map(([k, v]) => `${k} ${v >= 0 ? '+' : ''}${v}`)
                  .join(
                    ', ',
                  )}; NCCL's is replaced by the algorithm's own (${(gpu.decodeStep?.allReduceInDecodeStepUs ?? gpu.decodeStep?.allReduceAfterKernelUs)?.source})`,
              ]
            : []),
        ]
      : []),
  ]
  return {
    model: m.name,
    gpu: gpu.name,
    tp,
    batch,
    contextTokens,
    weightBytesPerGpu: weights,
    kvBytesPerGpu: kv,
    effectiveHbmGBs,
    memoryUs,
    launch,
    kernelsPerStep: kernels,
    launchUs,
    hostIssueUs,
    stepUs,
    allReducesPerToken,
    allReduceBytes,
    noAllReduce: { itlMs: stepUs / 1e3, tokensPerSec: noArTokensPerSec, usdPerMillionTokens: cost(noArTokensPerSec) },
    perAlgorithm,
    notes,
  }
}
