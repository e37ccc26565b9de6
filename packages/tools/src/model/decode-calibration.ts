/**
 * Calibration of the decode model's launch term on measured single-GPU shards (scripts/measure-decode.py, e.g.
 * data/models/cuda-h200-decode-shards-2026-11-29.json, shipped with the tools): one tensor-parallel shard of a real
 * model's shapes, one decode step without the AllReduce, timed as CUDA-graph replay (graphUs) and as eager PyTorch
 * (eagerUs).
 *
 * The memory term is not fitted: it is the model's own bytes (weights + KV, from the architecture) over the GPU
 * table's HBM bandwidth × efficiency (measured separately, by a GEMV). What the memory term leaves is fitted, on
 * relative residuals (so 2 ms and 20 ms rows weigh alike), with the step's kernel count derived from the
 * architecture and the recipe (kernelsPerStep), never the file's profiler count:
 *
 *   graphUs ≈ memoryUs + kernels · graphKernelUs + kernels · (batch − 1) · graphKernelUsPerExtraSequence   (NNLS)
 *   eagerUs ≈ max(graph prediction, kernels · eagerKernelIssueUs)                                         (LS)
 *
 * Residuals are reported in-sample and leave-one-out (the row left out of the fit it is predicted by).
 */
import { readFileSync } from 'node:fs'
import { relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { LlcommError } from 'llcomm/internal'
import {
  graphLaunchUs,
  kernelsPerStep,
  kvBytesPerGpu,
  type StepConstants,
  stepConstantsOf,
  weightBytesPerGpu,
} from './decode-model.js'
import {
  findGpu,
  findKernelRecipe,
  findModel,
  type GpuSpec,
  type KernelRecipe,
  loadGpuTable,
  loadKernelRecipes,
  loadModelTable,
  type ModelTable,
} from './decode-tables.js'
import { nonNegativeLeastSquares } from './nnls.js'
import { fixed, percent, textTable } from './text-table.js'

/** The measured shards the shipped decode constants were fitted to (data/models/gpus.json names them as source). */
export const DECODE_SHARDS_URL = new URL(
  '../../../data/models/cuda-h200-decode-shards-2026-11-29.json',
  import.meta.url,
)

export interface DecodeShardRow {
  model: string
  tp: number
  batch: number
  /** Tokens in the cache before the step; the step reads context + 1 positions. */
  context: number
  layers: number
  weightBytes: number
  kvBytes: number
  /** Kernels of one step counted by the profiler (compared with the derived count, not used in the fit). */
  kernelsPerStep: number
  eagerUs: number
  graphUs: number
}

export interface DecodeShardFile {
  date: string
  device: string
  torch?: string
  command?: string
  gemv?: { rows: number; cols: number; timeUs: number; achievedGBs: number }
  rows: DecodeShardRow[]
}

const ROW_NUMBERS = [
  'tp',
  'batch',
  'context',
  'layers',
  'weightBytes',
  'kvBytes',
  'kernelsPerStep',
  'eagerUs',
  'graphUs',
]

export function readDecodeShardFile(path: string = fileURLToPath(DECODE_SHARDS_URL)): DecodeShardFile {
  let doc: DecodeShardFile
  try {
    doc = JSON.parse(readFileSync(path, 'utf8')) as DecodeShardFile
  } catch (e) {
    throw new LlcommError('INVALID_ARGUMENT', `cannot read ${path}: ${(e as Error).message}`, { path })
  }
  if (!Array.isArray(doc.rows) || doc.rows.length === 0 || typeof doc.device !== 'string')
    throw new LlcommError('INVALID_ARGUMENT', `${path} is not a decode-shard document (device, rows)`, { path })
  for (const [i, r] of doc.rows.entries()) {
    const bad = ROW_NUMBERS.filter(
      (k) => !(Number((r as unknown as Record<string, unknown>)[k]) > 0) && k !== 'context',
    )
    if (typeof r.model !== 'string' || bad.length)
      throw new LlcommError(
        'INVALID_ARGUMENT',
        `${path} row ${i}: missing or non-positive ${bad.join(', ') || 'model'}`,
      )
  }
  return doc
}

/** The GPU table key of a measured device name ('NVIDIA H200' → 'h200'). */
export function gpuKeyForDevice(device: string): string {
  if (/H200/i.test(device)) return 'h200'
  if (/GB200/i.test(device)) return 'gb200'
  throw new LlcommError('INVALID_ARGUMENT', `no GPU table entry for device ${JSON.stringify(device)}`)
}

/** One shard row with the model's view of it. */
export interface DecodeFeatures {
  row: DecodeShardRow
  modelWeightBytes: number
  modelKvBytes: number
  derivedKernels: number
  memoryUs: number
}

export function decodeFeatures(
  rows: DecodeShardRow[],
  models: ModelTable,
  gpu: GpuSpec,
  recipe: KernelRecipe,
): DecodeFeatures[] {
  const hbm = gpu.hbmGBs.value
  const eff = gpu.hbmEfficiency.value
  if (hbm === null || eff === null)
    throw new LlcommError('INVALID_ARGUMENT', `gpu ${gpu.name} lacks hbmGBs or hbmEfficiency`)
  return rows.map((row) => {
    const m = findModel(models, row.model)
    if (m.layers !== row.layers)
      throw new LlcommError('INVALID_ARGUMENT', `${row.model}: file has ${row.layers} layers, models.json ${m.layers}`)
    const modelWeightBytes = weightBytesPerGpu(m, row.tp, row.batch)
    const modelKvBytes = kvBytesPerGpu(m, row.tp, row.batch, row.context + 1)
    return {
      row,
      modelWeightBytes,
      modelKvBytes,
      derivedKernels: kernelsPerStep(m, recipe, row.batch).kernels,
      memoryUs: (modelWeightBytes + modelKvBytes) / (hbm * eff * 1e3),
    }
  })
}

/** Fits the three per-kernel constants to shard rows (graph: NNLS on two columns; eager: one column). */
export function fitStepConstants(features: DecodeFeatures[]): StepConstants {
  if (features.length < 2)
    throw new LlcommError('INVALID_ARGUMENT', `the decode fit needs at least 2 rows, got ${features.length}`)
  // relative residuals: each row divided by its measured time
  const a = features.map((f) => [
    f.derivedKernels / f.row.graphUs,
    (f.derivedKernels * (f.row.batch - 1)) / f.row.graphUs,
  ])
  const b = features.map((f) => (f.row.graphUs - f.memoryUs) / f.row.graphUs)
  const [graphKernelUs, graphKernelUsPerExtraSequence] = features.some((f) => f.row.batch > 1)
    ? nonNegativeLeastSquares(a, b)
    : [
        nonNegativeLeastSquares(
          a.map((r) => [r[0]]),
          b,
        )[0],
        0,
      ]
  // eager: host-issue bound, kernels × issue cost (every measured row is: eager ≥ 2 × graph)
  const [eagerKernelIssueUs] = nonNegativeLeastSquares(
    features.map((f) => [f.derivedKernels / f.row.eagerUs]),
    features.map(() => 1),
  )
  return { graphKernelUs, graphKernelUsPerExtraSequence, eagerKernelIssueUs }
}

/**
 * A check on the fixed memory term: the same graph fit with the bandwidth free too (bytes, kernels, kernels ×
 * (batch − 1)). Its bandwidth should agree with the GPU table's hbmGBs × hbmEfficiency if the split is right.
 */
export function freeBandwidthCheck(features: DecodeFeatures[]): { effectiveGBs: number; inSample: ErrorSummary } {
  const y = features.map((f) => f.row.graphUs)
  const cols = features.map((f) => [
    f.modelWeightBytes + f.modelKvBytes,
    f.derivedKernels,
    f.derivedKernels * (f.row.batch - 1),
  ])
  const x = nonNegativeLeastSquares(
    cols.map((c, i) => c.map((v) => v / y[i])),
    y.map(() => 1),
  )
  const errors = cols.map((c, i) => (c[0] * x[0] + c[1] * x[1] + c[2] * x[2] - y[i]) / y[i])
  return { effectiveGBs: x[0] > 0 ? 1 / (x[0] * 1e3) : Number.POSITIVE_INFINITY, inSample: summary(errors) }
}

export function predictShard(f: DecodeFeatures, c: StepConstants): { graphUs: number; eagerUs: number } {
  const graphUs = f.memoryUs + graphLaunchUs(f.derivedKernels, f.row.batch, c)
  return { graphUs, eagerUs: Math.max(graphUs, f.derivedKernels * c.eagerKernelIssueUs) }
}

export interface ShardResidual {
  measuredUs: number
  predictedUs: number
  /** (predicted − measured) / measured */
  relError: number
  looRelError: number
}

export interface DecodeResidualRow extends DecodeFeatures {
  graph: ShardResidual
  eager: ShardResidual
}

export interface ErrorSummary {
  rms: number
  maxAbs: number
}

export interface DecodeCalibration {
  constants: StepConstants
  rows: DecodeResidualRow[]
  graph: { inSample: ErrorSummary; leaveOneOut: ErrorSummary }
  eager: { inSample: ErrorSummary; leaveOneOut: ErrorSummary }
  /** Rows where eager is predicted GPU-bound (the max picks the graph side): the eager fit's assumption fails there. */
  eagerGpuBoundRows: number
  freeBandwidth: { effectiveGBs: number; inSample: ErrorSummary }
}

function summary(errors: number[]): ErrorSummary {
  return {
    rms: Math.sqrt(errors.reduce((s, e) => s + e * e, 0) / errors.length),
    maxAbs: Math.max(...errors.map(Math.abs)),
  }
}

export function calibrateDecodeStep(features: DecodeFeatures[]): DecodeCalibration {
  const constants = fitStepConstants(features)
  const rows = features.map((f, i): DecodeResidualRow => {
    const p = predictShard(f, constants)
    const rest = features.filter((_, j) => j !== i)
    const loo = rest.length >= 2 ? predictShard(f, fitStepConstants(rest)) : p
    const residual = (measuredUs: number, predictedUs: number, looUs: number): ShardResidual => ({
      measuredUs,
      predictedUs,
      relError: (predictedUs - measuredUs) / measuredUs,
      looRelError: (looUs - measuredUs) / measuredUs,
    })
    return {
      ...f,
      graph: residual(f.row.graphUs, p.graphUs, loo.graphUs),
      eager: residual(f.row.eagerUs, p.eagerUs, loo.eagerUs),
    }
  })
  return {
    constants,
    rows,
    graph: {
      inSample: summary(rows.map((r) => r.graph.relError)),
      leaveOneOut: summary(rows.map((r) => r.graph.looRelError)),
    },
    eager: {
      inSample: summary(rows.map((r) => r.eager.relError)),
      leaveOneOut: summary(rows.map((r) => r.eager.looRelError)),
    },
    eagerGpuBoundRows: rows.filter((r) => r.derivedKernels * constants.eagerKernelIssueUs < r.graph.predictedUs).length,
    freeBandwidth: freeBandwidthCheck(features),
  }
}

/** The validation report: constants fitted on the file, against the table's, and predicted vs measured per row. */
export function decodeValidationText(
  file: string,
  doc: DecodeShardFile,
  gpu: GpuSpec,
  cal: DecodeCalibration,
  table: StepConstants | undefined,
): string {
  const c = cal.constants
  const s = (x: ErrorSummary) => `rms ${percent(x.rms)}, max ${percent(x.maxAbs)}`
  const lines = [
    `# decode model vs measured shards: ${file}`,
    `device ${doc.device}, torch ${doc.torch ?? '?'}, measured ${doc.date}; ${cal.rows.length} rows; no AllReduce in the step`,
    `memory term (not fitted): model bytes / (${gpu.hbmGBs.value} GB/s × ${gpu.hbmEfficiency.value}) (${gpu.hbmEfficiency.source})`,
    doc.gemv
      ? `the file's own GEMV probe: ${doc.gemv.rows}×${doc.gemv.cols} bf16 in ${doc.gemv.timeUs} µs = ${doc.gemv.achievedGBs} GB/s (not used; see docs/model.md §2)`
      : '',
    `check: with the bandwidth fitted too, ${fixed(cal.freeBandwidth.effectiveGBs, 1)} GB/s (${fixed(cal.freeBandwidth.effectiveGBs / (gpu.hbmGBs.value ?? Number.NaN), 4)} of peak), graph in-sample ${s(cal.freeBandwidth.inSample)}`,
    `kernels per step derived from models.json × recipe ${gpu.decodeStep?.recipe ?? '?'} (the profiler's count is shown, not used)`,
    `fitted on this file: graphKernelUs ${fixed(c.graphKernelUs, 4)}, graphKernelUsPerExtraSequence ${fixed(c.graphKernelUsPerExtraSequence, 5)}, eagerKernelIssueUs ${fixed(c.eagerKernelIssueUs, 3)}`,
    table
      ? `in data/models/gpus.json (${gpu.name}): graphKernelUs ${table.graphKernelUs}, graphKernelUsPerExtraSequence ${table.graphKernelUsPerExtraSequence}, eagerKernelIssueUs ${table.eagerKernelIssueUs}`
      : `data/models/gpus.json has no decodeStep constants for ${gpu.name}`,
    `graph: in-sample ${s(cal.graph.inSample)}; leave-one-out ${s(cal.graph.leaveOneOut)}`,
    `eager: in-sample ${s(cal.eager.inSample)}; leave-one-out ${s(cal.eager.leaveOneOut)}; rows predicted GPU-bound in eager: ${cal.eagerGpuBoundRows}`,
    textTable(
      [
        'model',
        'tp',
        'batch',
        'ctx',
        'kernels prof/derived',
        'bytes file/model',
        'memory µs',
        'graph µs',
        'predicted',
        'error',
        'LOO',
        'eager µs',
        'predicted',
        'error',
        'LOO',
      ],
      cal.rows.map((r) => [
        r.row.model,
        r.row.tp,
        r.row.batch,
        r.row.context,
        `${r.row.kernelsPerStep}/${r.derivedKernels}`,
        fixed((r.row.weightBytes + r.row.kvBytes) / (r.modelWeightBytes + r.modelKvBytes), 4),
        fixed(r.memoryUs, 0),
        fixed(r.graph.measuredUs, 0),
        fixed(r.graph.predictedUs, 0),
        percent(r.graph.relError),
        percent(r.graph.looRelError),
        fixed(r.eager.measuredUs, 0),
        fixed(r.eager.predictedUs, 0),
        percent(r.eager.relError),
        percent(r.eager.looRelError),
      ]),
    ),
  ]
  return lines.filter(Boolean).join('\n')
}

/** Reads a shard file, fits on it and reports against the GPU table's constants (llcomm model --validate-decode). */
export function validateDecodeFile(path: string = fileURLToPath(DECODE_SHARDS_URL)): {
  text: string
  calibration: DecodeCalibration
} {
  const doc = readDecodeShardFile(path)
  const gpu = findGpu(loadGpuTable(), gpuKeyForDevice(doc.device))
  if (!gpu.decodeStep)
    throw new LlcommError(
      'INVALID_ARGUMENT',
      `gpu ${gpu.name} has no decodeStep (kernel recipe) in data/models/gpus.json`,
    )
  const recipe = findKernelRecipe(loadKernelRecipes(), gpu.decodeStep.recipe)
  const calibration = calibrateDecodeStep(decodeFeatures(doc.rows, loadModelTable(), gpu, recipe))
  const shown = relative(process.cwd(), path).startsWith('..') ? path : relative(process.cwd(), path)
  return { text: decodeValidationText(shown, doc, gpu, calibration, stepConstantsOf(gpu)), calibration }
}
