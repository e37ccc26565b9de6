/**
 * The decode cost model's data: model architectures (data/models/models.json), GPUs (data/models/gpus.json) and
 * kernel recipes (data/models/decode-kernels.json), each entry with its source.
 */
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { LlcommError } from 'llcomm/internal'
import type { SourcedValue } from './latency-tables.js'

export type WeightDtype = 'bf16' | 'f16' | 'fp8' | 'f32'
export const WEIGHT_DTYPE_BYTES: Readonly<Record<WeightDtype, number>> = { bf16: 2, f16: 2, fp8: 1, f32: 4 }

export interface MoeShape {
  routedExperts: number
  sharedExperts: number
  expertsPerToken: number
  expertIntermediateSize: number
  /** The first denseLayers layers use a dense MLP of intermediateSize. */
  denseLayers: number
}

export interface ModelArchitecture {
  name: string
  source: string
  layers: number
  hiddenSize: number
  heads: number
  kvHeads: number
  headDim: number
  intermediateSize: number
  vocabSize: number
  tiedEmbeddings: boolean
  attention: 'gqa' | 'mla'
  qLoraRank?: number
  kvLoraRank?: number
  qkNopeHeadDim?: number
  qkRopeHeadDim?: number
  vHeadDim?: number
  moe?: MoeShape
  weightDtype: WeightDtype
  embeddingDtype?: WeightDtype
  activationDtype: WeightDtype
  kvDtype: WeightDtype
  paramsTotalB: number
  paramsActiveB: number
}

/**
 * The per-kernel constants of one decode step, fitted on measured shards (see decode-calibration.ts):
 *   graph (CUDA-graph replay): kernels × (graphKernelUs + graphKernelUsPerExtraSequence × (batch − 1)) on the GPU;
 *   eager (a host thread issues each kernel): at least kernels × eagerKernelIssueUs.
 * The kernel count comes from the recipe named here (data/models/decode-kernels.json).
 */
export interface DecodeStepConstants {
  recipe: string
  graphKernelUs: SourcedValue
  graphKernelUsPerExtraSequence: SourcedValue
  eagerKernelIssueUs: SourcedValue
  /**
   * Per AllReduce in a tensor-parallel step, beyond the library's bench latency at that size (arrival skew, the call
   * alone on the critical path); fitted on real tensor-parallel steps (decode-tp.ts). Absent: 0.
   */
  allReduceInStepUs?: SourcedValue
  /**
   * What a call costs more when it follows a kernel than back to back, per algorithm (µs; may be negative), measured
   * with `llcomm bench --compute-us`. allReduceInStepUs was fitted on NCCL's calls; another algorithm's in-step cost
   * is allReduceInStepUs − values.nccl + values[algorithm] (decode-model.ts inStepUsFor).
   */
  allReduceAfterKernelUs?: { values: Record<string, number>; source: string }
  /**
   * Per algorithm, the cost of one AllReduce inside `llcomm decode`'s step minus the latency model's price of it (µs,
   * decode-step-fit.ts). Where present it replaces allReduceAfterKernelUs in the swap: in-step(a) =
   * allReduceInStepUs − values.nccl + values[a].
   */
  allReduceInDecodeStepUs?: { values: Record<string, number>; source: string }
  /** Where the constants were fitted and how well (free text: file, commit, date, residuals). */
  fit: string
}

export interface GpuSpec {
  name: string
  hbmGBs: SourcedValue
  hbmEfficiency: SourcedValue
  memoryGB: SourcedValue
  /** Key of data/latency/platforms.json used for AllReduce latencies. */
  latencyPlatform: string
  usdPerGpuHour: SourcedValue
  /** Absent: the decode model has no launch term for this GPU (memory and AllReduce only). */
  decodeStep?: DecodeStepConstants
}

/** The operations of a decode step whose kernels a recipe counts. */
export const DECODE_OPS = ['rmsNorm', 'gemm', 'kvCacheWrite', 'attention', 'elementwise', 'moeRouting'] as const
export type DecodeOp = (typeof DECODE_OPS)[number]

/** How many kernels one implementation launches per operation (data/models/decode-kernels.json). */
export interface KernelRecipe {
  description: string
  kernelsPerOp: Record<DecodeOp, SourcedValue>
}

const MODELS_URL = new URL('../../../data/models/models.json', import.meta.url)
const GPUS_URL = new URL('../../../data/models/gpus.json', import.meta.url)
const RECIPES_URL = new URL('../../../data/models/decode-kernels.json', import.meta.url)

function readJson(url: URL): unknown {
  const path = fileURLToPath(url)
  try {
    return JSON.parse(readFileSync(path, 'utf8'))
  } catch (e) {
    throw new LlcommError('INVALID_ARGUMENT', `cannot read ${path}: ${(e as Error).message}`, { path })
  }
}

export interface ModelTable {
  models: Record<string, ModelArchitecture>
  aliases: Record<string, string>
}

export function loadModelTable(): ModelTable {
  return readJson(MODELS_URL) as ModelTable
}

export function loadGpuTable(): { gpus: Record<string, GpuSpec> } {
  return readJson(GPUS_URL) as { gpus: Record<string, GpuSpec> }
}

export function loadKernelRecipes(): { recipes: Record<string, KernelRecipe> } {
  return readJson(RECIPES_URL) as { recipes: Record<string, KernelRecipe> }
}

export function findKernelRecipe(table: { recipes: Record<string, KernelRecipe> }, name: string): KernelRecipe {
  const r = table.recipes[name]
  if (!r)
    throw new LlcommError(
      'INVALID_ARGUMENT',
      `unknown kernel recipe ${JSON.stringify(name)} (known: ${Object.keys(table.recipes).join(', ')})`,
    )
  return r
}

export function findModel(table: ModelTable, name: string): ModelArchitecture {
  const key = name.toLowerCase()
  const m = table.models[key] ?? table.models[table.aliases[key] ?? '']
  if (!m)
    throw new LlcommError(
      'INVALID_ARGUMENT',
      `unknown model ${JSON.stringify(name)} (known: ${Object.keys(table.models).join(', ')})`,
    )
  return m
}

export function findGpu(table: { gpus: Record<string, GpuSpec> }, name: string): GpuSpec {
  const g = table.gpus[name.toLowerCase()]
  if (!g)
    throw new LlcommError(
      'INVALID_ARGUMENT',
      `unknown gpu ${JSON.stringify(name)} (known: ${Object.keys(table.gpus).join(', ')})`,
    )
  return g
}
