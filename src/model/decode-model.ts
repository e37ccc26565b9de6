/**
 * Decode cost model: the time of one decode step (one token per sequence) of a tensor-parallel model, in the
 * memory-bound regime of small batches:
 *
 *   memoryUs = (weight bytes read per GPU + KV-cache bytes read per GPU) / (HBM bandwidth × efficiency)
 *   ITL      = memoryUs + allReducesPerToken × allReduceUs(algorithm, TP, batch × hidden × activation bytes)
 *
 * Two AllReduces per layer (after attention, after the MLP/MoE) when TP > 1. Compute time, kernel launches
 * and framework overhead are not modelled: at batch 1 they are what the model leaves unexplained.
 */
import { LlcommError } from '../errors.js'
import { type GpuSpec, type ModelArchitecture, WEIGHT_DTYPE_BYTES } from './decode-tables.js'
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
  const usd = req.usdPerGpuHour
  const cost = (tokensPerSec: number) => (usd === undefined ? undefined : ((usd * tp) / 3600 / tokensPerSec) * 1e6)
  const params = req.latencyParams ?? paramsFromPlatform(platform)
  const perAlgorithm = req.algorithms.map((name): DecodeAlgorithmRow => {
    const p =
      tp > 1
        ? predictLatency(getAlgorithm(algorithmTable, name), platform, tp, allReduceBytes, params)
        : { latencyUs: 0, missingTerms: [] as FitParam[] }
    const commUs = allReducesPerToken * p.latencyUs
    const itlUs = memoryUs + commUs
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
  const noArTokensPerSec = batch / (memoryUs / 1e6)
  const notes = [
    'memory-bound decode: compute, kernel launches and framework overhead are not modelled',
    `HBM ${hbm} GB/s × efficiency ${eff} (${gpu.hbmEfficiency.source})`,
  ]
  if (m.moe)
    notes.push(
      `MoE: ${expectedExpertsTouched(m.moe.routedExperts, m.moe.expertsPerToken, batch).toFixed(1)} routed experts touched per layer at batch ${batch} (uniform routing), experts sharded over TP`,
    )
  if (m.attention === 'mla') notes.push('MLA latent KV cache replicated on every TP rank')
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
    allReducesPerToken,
    allReduceBytes,
    noAllReduce: { itlMs: memoryUs / 1e3, tokensPerSec: noArTokensPerSec, usdPerMillionTokens: cost(noArTokensPerSec) },
    perAlgorithm,
    notes,
  }
}
