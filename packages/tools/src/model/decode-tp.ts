/**
 * The decode model against real tensor-parallel steps (`scripts/measure-decode.py --tp-real N`): N GPUs, one shard
 * each, the step replayed from a CUDA graph with and without its NCCL AllReduces (2 per layer).
 *
 * What it checks and fits:
 *   step without AllReduce: the model's graph step (memory + per-kernel term, fitted on one-GPU shards) against the
 *     measured one, nothing fitted here;
 *   per AllReduce in the step: measured (graph with − without) / AllReduces per step, against the latency model's
 *     NCCL figure at (N, bytes), a graph-replay bench latency of back-to-back calls;
 *   allReduceInStepUs = the mean of (measured per AllReduce − NCCL's modelled latency) over the rows: what an
 *     AllReduce costs in a step beyond its bench latency (arrival skew between the GPUs, which finish the previous
 *     GEMV apart, and the call's kernel alone on the critical path instead of overlapping the next call's launch).
 *     The decode model adds it to every algorithm's latency, graph and eager launch: an assumption for llcomm's
 *     kernels, which were not run inside a framework's step.
 */
import { readFileSync } from 'node:fs'
import { relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { LlcommError } from 'llcomm/internal'
import { type DecodeShardRow, decodeFeatures, gpuKeyForDevice, predictShard } from './decode-calibration.js'
import { stepConstantsOf } from './decode-model.js'
import { findGpu, findKernelRecipe, loadGpuTable, loadKernelRecipes, loadModelTable } from './decode-tables.js'
import { paramsFromPlatform, predictLatency } from './latency-model.js'
import { getAlgorithm, getPlatform, loadAlgorithmTable, loadPlatformTable } from './latency-tables.js'
import { fixed, percent, textTable } from './text-table.js'

/** The measured tensor-parallel steps the shipped allReduceInStepUs was fitted to (its source in gpus.json). */
export const DECODE_TP_URL = new URL('../../../data/models/cuda-h200x2-decode-tp2-2026-11-29.json', import.meta.url)

/** A shard row (no profiler kernel count: --tp-real does not count kernels) with its AllReduce figures. */
export interface DecodeTpRow extends Omit<DecodeShardRow, 'kernelsPerStep'> {
  allReducesPerStep: number
  allReduceBytes: number
  graphArUs: number
  eagerArUs: number
}

export interface DecodeTpFile {
  date: string
  device: string
  gpus: number
  torch?: string
  nccl?: string
  command: string
  rows: DecodeTpRow[]
}

export function readDecodeTpFile(path: string = fileURLToPath(DECODE_TP_URL)): DecodeTpFile {
  let doc: DecodeTpFile
  try {
    doc = JSON.parse(readFileSync(path, 'utf8')) as DecodeTpFile
  } catch (e) {
    throw new LlcommError('INVALID_ARGUMENT', `cannot read ${path}: ${(e as Error).message}`, { path })
  }
  const ok = (r: Partial<DecodeTpRow>) =>
    [r.tp, r.batch, r.layers, r.graphUs, r.graphArUs, r.allReducesPerStep, r.allReduceBytes].every(Number.isFinite)
  if (!Array.isArray(doc.rows) || doc.rows.length === 0 || !doc.rows.every(ok))
    throw new LlcommError(
      'INVALID_ARGUMENT',
      `${path} is not a --tp-real decode file (rows with graphUs, graphArUs, …)`,
    )
  return doc
}

export interface DecodeTpResidual {
  row: DecodeTpRow
  /** The model's step without AllReduce (graph replay). */
  predictedStepUs: number
  /** Measured per AllReduce in the step: (graphArUs − graphUs) / allReducesPerStep. */
  perAllReduceUs: number
  /** The latency model's NCCL figure at (tp, allReduceBytes). */
  ncclModelUs: number
  /** The model's ITL with NCCL: without the in-step term, with the fitted one, with it fitted leaving this row out. */
  itlBareUs: number
  itlUs: number
  itlLooUs: number
}

export interface DecodeTpValidation {
  file: DecodeTpFile
  /** Fitted here: mean over rows of (perAllReduceUs − ncclModelUs). */
  allReduceInStepUs: number
  /** The GPU table's value, if it has one. */
  tableInStepUs: number | null
  rows: DecodeTpResidual[]
}

export function validateDecodeTp(doc: DecodeTpFile): DecodeTpValidation {
  const gpu = findGpu(loadGpuTable(), gpuKeyForDevice(doc.device))
  const constants = stepConstantsOf(gpu)
  if (!constants || !gpu.decodeStep)
    throw new LlcommError('INVALID_ARGUMENT', `gpu ${gpu.name} has no decodeStep constants in data/models/gpus.json`)
  const recipe = findKernelRecipe(loadKernelRecipes(), gpu.decodeStep.recipe)
  // the profiler's kernel count is not measured by --tp-real; decodeFeatures derives its own count
  const shardRows: DecodeShardRow[] = doc.rows.map((r) => ({ ...r, kernelsPerStep: 0 }))
  const features = decodeFeatures(shardRows, loadModelTable(), gpu, recipe)
  const algorithms = loadAlgorithmTable()
  const platform = getPlatform(loadPlatformTable(), gpu.latencyPlatform)
  const params = paramsFromPlatform(platform)
  const nccl = getAlgorithm(algorithms, 'nccl')
  const base = features.map((f, i) => {
    const row = doc.rows[i]
    return {
      row,
      predictedStepUs: predictShard(f, constants).graphUs,
      perAllReduceUs: (row.graphArUs - row.graphUs) / row.allReducesPerStep,
      ncclModelUs: predictLatency(nccl, platform, row.tp, row.allReduceBytes, params).latencyUs,
    }
  })
  const extra = base.map((b) => b.perAllReduceUs - b.ncclModelUs)
  const mean = (xs: number[]) => xs.reduce((s, x) => s + x, 0) / xs.length
  const inStep = mean(extra)
  const itl = (b: (typeof base)[number], add: number) =>
    b.predictedStepUs + b.row.allReducesPerStep * (b.ncclModelUs + add)
  const rows = base.map((b, i) => ({
    ...b,
    itlBareUs: itl(b, 0),
    itlUs: itl(b, inStep),
    itlLooUs: itl(b, base.length > 1 ? mean(extra.filter((_, j) => j !== i)) : 0),
  }))
  return { file: doc, allReduceInStepUs: inStep, tableInStepUs: gpu.decodeStep.allReduceInStepUs?.value ?? null, rows }
}

export function decodeTpText(path: string, v: DecodeTpValidation): string {
  const d = v.file
  const err = (p: number, m: number) => percent((p - m) / m)
  return [
    `# decode model vs real tensor-parallel steps: ${path}`,
    `${d.gpus}× ${d.device}, torch ${d.torch ?? '?'}, NCCL ${d.nccl ?? '?'}, measured ${d.date}; ${d.command}`,
    'step = graph replay of one decode step per GPU; with AR = the same step with its NCCL AllReduces (2 per layer)',
    `fitted here: allReduceInStepUs ${fixed(v.allReduceInStepUs, 3)} µs per AllReduce beyond NCCL's modelled latency${v.tableInStepUs === null ? '; data/models/gpus.json has none' : `; data/models/gpus.json: ${v.tableInStepUs}`}`,
    textTable(
      [
        'model',
        'tp',
        'batch',
        'ctx',
        'AR bytes',
        'step µs',
        'predicted',
        'error',
        'per AR µs',
        'nccl model µs',
        'with AR µs',
        'predicted bare',
        'error',
        'predicted',
        'error',
        'LOO',
      ],
      v.rows.map((r) => [
        r.row.model,
        r.row.tp,
        r.row.batch,
        r.row.context,
        r.row.allReduceBytes,
        fixed(r.row.graphUs, 0),
        fixed(r.predictedStepUs, 0),
        err(r.predictedStepUs, r.row.graphUs),
        fixed(r.perAllReduceUs, 2),
        fixed(r.ncclModelUs, 2),
        fixed(r.row.graphArUs, 0),
        fixed(r.itlBareUs, 0),
        err(r.itlBareUs, r.row.graphArUs),
        fixed(r.itlUs, 0),
        err(r.itlUs, r.row.graphArUs),
        err(r.itlLooUs, r.row.graphArUs),
      ]),
    ),
  ].join('\n')
}

/** llcomm model --validate-decode-tp [file] */
export function validateDecodeTpFile(path: string = fileURLToPath(DECODE_TP_URL)): {
  text: string
  validation: DecodeTpValidation
} {
  const validation = validateDecodeTp(readDecodeTpFile(path))
  const shown = relative(process.cwd(), path).startsWith('..') ? path : relative(process.cwd(), path)
  return { text: decodeTpText(shown, validation), validation }
}
