/**
 * The shapes of one tensor-parallel decode step (`llcomm decode`): a Llama-style architecture from
 * data/models/models.json cut into `tp` shards the way Megatron-style serving does it (QKV and gate/up split by
 * output rows, O and down by input columns, so each layer ends its attention and its MLP with one AllReduce of
 * batch × hidden bf16 values; the LM head split by vocabulary rows, its logits left on each rank). Pure arithmetic:
 * no GPU, tested on the CPU. The device buffers of one rank are carved out of one allocation at `offset`s.
 */
import { LlcommError } from 'llcomm/internal'
import {
  LLCOMM_DECODE_HEAD_DIM,
  LLCOMM_DECODE_MAX_BATCH,
  LLCOMM_DECODE_MAX_GROUP,
  LLCOMM_DECODE_MMA_ROWS,
  LLCOMM_DECODE_PARTIAL_FLOATS,
} from '../kernels/abi.js'
import { DECODE_GEMV_BATCHES } from '../kernels/table.js'
import type { ModelArchitecture } from '../model/decode-tables.js'

/** RMSNorm epsilon and RoPE base of Llama 3 (their values do not change the step's time). */
export const DECODE_RMS_EPS = 1e-5
export const DECODE_ROPE_THETA = 500_000
/** Attention splits aim at this many blocks per SM. */
export const ATTENTION_BLOCKS_PER_SM = 4
/** Fewest context tokens one attention split takes. */
export const MIN_TOKENS_PER_SPLIT = 32
const ALIGN = 256

export interface DecodeStepOptions {
  tp: number
  batch: number
  /** Tokens attended by the new token, itself included (it is written at position context − 1). */
  context: number
  /** Run only the first N layers (default: all of the architecture's). */
  layers?: number
  /** SMs of the GPU (attention splits). */
  smCount: number
}

/** One buffer of a rank's slab. */
export interface SlabBuffer {
  offset: number
  bytes: number
}

export interface LayerBuffers {
  attentionNorm: SlabBuffer
  qkv: SlabBuffer
  o: SlabBuffer
  mlpNorm: SlabBuffer
  gateUp: SlabBuffer
  down: SlabBuffer
  kCache: SlabBuffer
  vCache: SlabBuffer
}

export interface DecodeStepPlan {
  model: string
  layers: number
  /** Layers of the architecture (the step may run fewer). */
  modelLayers: number
  tp: number
  batch: number
  context: number
  hidden: number
  headDim: number
  vocab: number
  /** Per rank. */
  qHeads: number
  kvHeads: number
  qkvRows: number
  intermediate: number
  vocabRows: number
  /** The GEMV variant's batch bound (the smallest of DECODE_GEMV_BATCHES that holds `batch`). */
  gemvBatch: number
  attentionSplits: number
  tokensPerSplit: number
  /** Each AllReduce: batch × hidden bf16. */
  allReduceCount: number
  allReduceBytes: number
  allReducesPerStep: number
  /** Per rank: weight and KV-cache bytes one step reads, slab layout. */
  weightBytes: number
  kvCacheBytesRead: number
  slabBytes: number
  layerBuffers: LayerBuffers[]
  finalNorm: SlabBuffer
  lmHead: SlabBuffer
  embedding: SlabBuffer
  residual: SlabBuffer
  normed: SlabBuffer
  qkvOut: SlabBuffer
  attentionPartial: SlabBuffer
  attentionOut: SlabBuffer
  activation: SlabBuffer
  logits: SlabBuffer
}

function invalid(message: string, details: Record<string, unknown> = {}): LlcommError {
  return new LlcommError('INVALID_ARGUMENT', message, details)
}

export function planDecodeStep(arch: ModelArchitecture, o: DecodeStepOptions): DecodeStepPlan {
  const { tp, batch, context } = o
  if (arch.attention !== 'gqa' || arch.moe) {
    throw new LlcommError(
      'INVALID_ARGUMENT',
      `llcomm decode runs dense GQA models (Llama-style); ${arch.name} has ${arch.moe ? 'MoE layers' : `${arch.attention} attention`}`,
      { model: arch.name },
    )
  }
  if (arch.headDim !== LLCOMM_DECODE_HEAD_DIM)
    throw new LlcommError('INVALID_ARGUMENT', `llcomm decode's kernels take head size ${LLCOMM_DECODE_HEAD_DIM}`, {
      headDim: arch.headDim,
    })
  if (!Number.isInteger(tp) || tp < 1) throw invalid(`tensor-parallel degree must be a positive integer, got ${tp}`)
  if (arch.heads % tp !== 0 || arch.kvHeads % tp !== 0)
    throw invalid(`${arch.name}: ${arch.heads} query and ${arch.kvHeads} KV heads do not split over ${tp} ranks`, {
      tp,
    })
  if (arch.heads % arch.kvHeads !== 0 || arch.heads / arch.kvHeads > LLCOMM_DECODE_MAX_GROUP)
    throw new LlcommError('INVALID_ARGUMENT', `query heads per KV head must divide and be ≤ ${LLCOMM_DECODE_MAX_GROUP}`)
  if (!Number.isInteger(batch) || batch < 1 || batch > LLCOMM_DECODE_MAX_BATCH)
    throw invalid(`batch must be an integer in 1..${LLCOMM_DECODE_MAX_BATCH}, got ${batch}`)
  if (!Number.isInteger(context) || context < 1) throw invalid(`context must be a positive integer, got ${context}`)
  const layers = o.layers ?? arch.layers
  if (!Number.isInteger(layers) || layers < 1 || layers > arch.layers)
    throw invalid(`layers must be an integer in 1..${arch.layers}, got ${layers}`)
  if (arch.intermediateSize % tp !== 0 || arch.vocabSize % tp !== 0)
    throw invalid(
      `${arch.name}: the MLP (${arch.intermediateSize}) or vocabulary (${arch.vocabSize}) does not split over ${tp}`,
    )
  const hidden = arch.hiddenSize
  const intermediate = arch.intermediateSize / tp
  const vocabRows = arch.vocabSize / tp
  const qHeads = arch.heads / tp
  const kvHeads = arch.kvHeads / tp
  const qkvRows = (qHeads + 2 * kvHeads) * LLCOMM_DECODE_HEAD_DIM
  const oCols = qHeads * LLCOMM_DECODE_HEAD_DIM
  // The GEMV contract: cols % 8 == 0 (16-byte rows), plain rows even (a warp takes two).
  for (const [what, v] of [
    ['hidden size', hidden],
    ['MLP shard', intermediate],
  ] as const)
    if (v % 8 !== 0) throw invalid(`${what} ${v} is not a multiple of 8 (the GEMV reads 16-byte vectors)`)
  if (vocabRows % 2 !== 0 || hidden % 2 !== 0) throw invalid('GEMV output rows must be even')

  const gemvBatch = DECODE_GEMV_BATCHES.find((n) => n >= batch) as number
  // Above batch 1 the GEMVs run on tensor cores, a block per LLCOMM_DECODE_MMA_ROWS output rows.
  if (gemvBatch > 1)
    for (const [what, v] of [
      ['QKV rows', qkvRows],
      ['hidden size', hidden],
      ['MLP shard', intermediate],
      ['vocabulary shard', vocabRows],
    ] as const)
      if (v % LLCOMM_DECODE_MMA_ROWS !== 0)
        throw invalid(
          `${what} ${v} is not a multiple of ${LLCOMM_DECODE_MMA_ROWS} (the batch-${gemvBatch} GEMV's row tile)`,
        )
  const kvBlocks = batch * kvHeads
  const maxSplits = Math.max(1, Math.ceil(context / MIN_TOKENS_PER_SPLIT))
  const wanted = Math.max(1, Math.ceil((ATTENTION_BLOCKS_PER_SM * o.smCount) / kvBlocks))
  const tokensPerSplit = Math.ceil(context / Math.min(wanted, maxSplits))
  const attentionSplits = Math.ceil(context / tokensPerSplit) // every split non-empty

  let offset = 0
  const take = (bytes: number): SlabBuffer => {
    const b = { offset, bytes }
    offset += Math.ceil(bytes / ALIGN) * ALIGN
    return b
  }
  const bf16 = (n: number) => 2 * n
  const cacheBytes = bf16(batch * kvHeads * context * LLCOMM_DECODE_HEAD_DIM)
  const layerBuffers: LayerBuffers[] = []
  for (let l = 0; l < layers; l++) {
    layerBuffers.push({
      attentionNorm: take(bf16(hidden)),
      qkv: take(bf16(qkvRows * hidden)),
      o: take(bf16(hidden * oCols)),
      mlpNorm: take(bf16(hidden)),
      gateUp: take(bf16(2 * intermediate * hidden)),
      down: take(bf16(hidden * intermediate)),
      kCache: take(cacheBytes),
      vCache: take(cacheBytes),
    })
  }
  const finalNorm = take(bf16(hidden))
  const lmHead = take(bf16(vocabRows * hidden))
  const embedding = take(bf16(batch * hidden))
  const residual = take(4 * batch * hidden)
  const normed = take(bf16(batch * hidden))
  const qkvOut = take(bf16(batch * qkvRows))
  const attentionPartial = take(4 * batch * qHeads * attentionSplits * LLCOMM_DECODE_PARTIAL_FLOATS)
  const attentionOut = take(bf16(batch * oCols))
  const activation = take(bf16(batch * intermediate))
  const logits = take(bf16(batch * vocabRows))
  const perLayerWeights = bf16(2 * hidden + qkvRows * hidden + hidden * oCols + 3 * intermediate * hidden)
  return {
    model: arch.name,
    layers,
    modelLayers: arch.layers,
    tp,
    batch,
    context,
    hidden,
    headDim: LLCOMM_DECODE_HEAD_DIM,
    vocab: arch.vocabSize,
    qHeads,
    kvHeads,
    qkvRows,
    intermediate,
    vocabRows,
    gemvBatch,
    attentionSplits,
    tokensPerSplit,
    allReduceCount: batch * hidden,
    allReduceBytes: bf16(batch * hidden),
    allReducesPerStep: 2 * layers,
    weightBytes: layers * perLayerWeights + bf16(hidden) + bf16(vocabRows * hidden),
    kvCacheBytesRead: layers * 2 * cacheBytes,
    slabBytes: offset,
    layerBuffers,
    finalNorm,
    lmHead,
    embedding,
    residual,
    normed,
    qkvOut,
    attentionPartial,
    attentionOut,
    activation,
    logits,
  }
}

/** Random tensors: values are uniform in [-scale, scale), from a hash of (index, seed); the host can recompute them. */
export interface FillSpec {
  buffer: SlabBuffer
  seed: number
  scale: number
}

/** Seeds: replicated tensors (embedding, norms) get the same seed on every rank, shards one per rank. */
export function decodeFillSpecs(plan: DecodeStepPlan, rank: number): FillSpec[] {
  const shard = (layer: number, what: number) => ((layer + 1) * 7919 + what * 104729 + (rank + 1) * 15485863) >>> 0
  const replicated = (layer: number, what: number) => (((layer + 1) * 7919 + what * 104729) ^ 0x5bd1e995) >>> 0
  const specs: FillSpec[] = []
  plan.layerBuffers.forEach((lb, l) => {
    specs.push({ buffer: lb.attentionNorm, seed: replicated(l, 1), scale: 1 })
    specs.push({ buffer: lb.qkv, seed: shard(l, 2), scale: 1 / Math.sqrt(plan.hidden) })
    specs.push({ buffer: lb.o, seed: shard(l, 3), scale: 1 / Math.sqrt(plan.qHeads * plan.headDim * plan.tp) })
    specs.push({ buffer: lb.mlpNorm, seed: replicated(l, 4), scale: 1 })
    specs.push({ buffer: lb.gateUp, seed: shard(l, 5), scale: 1 / Math.sqrt(plan.hidden) })
    specs.push({ buffer: lb.down, seed: shard(l, 6), scale: 1 / Math.sqrt(plan.intermediate * plan.tp) })
    specs.push({ buffer: lb.kCache, seed: shard(l, 7), scale: 1 })
    specs.push({ buffer: lb.vCache, seed: shard(l, 8), scale: 1 })
  })
  specs.push({ buffer: plan.finalNorm, seed: replicated(plan.layers, 9), scale: 1 })
  specs.push({ buffer: plan.lmHead, seed: shard(plan.layers, 10), scale: 1 / Math.sqrt(plan.hidden) })
  specs.push({ buffer: plan.embedding, seed: replicated(plan.layers, 11), scale: 1 })
  return specs
}
