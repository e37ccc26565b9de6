/**
 * The `llcomm decode` document and table: per algorithm, the decode step's median time (inter-token latency of
 * the shard), tokens/s, what one AllReduce costs in the step (against the step without AllReduce), its
 * back-to-back latency from `bench` in the same run, and what the decode cost model prices it at in a step (its
 * latency model + the in-step term of data/models/gpus.json). Pure: no GPU.
 */

import { LlcommError } from 'llcomm/internal'
import type { MachineInfo } from '../bench/document.js'
import { median, percentile } from '../bench/stats.js'
import { formatTable } from '../bench/table.js'
import type { DecodeStepPlan } from './plan.js'

export const NO_ALLREDUCE_NAME = 'none'

export interface DecodeRow {
  algorithm: string
  samples: number
  stepMedianUs: number
  stepP10Us: number
  stepP90Us: number
  tokensPerS: number
  /** (step − step without AllReduce) / AllReduces per step; absent for `none` or when `none` was not run. */
  allReduceInStepUs?: number
  /** Back-to-back latency at the step's AllReduce size (`bench` in the same run), when measured. */
  benchUs?: number
  /** The decode cost model's price of one call in this step (latency model + in-step term), when it prices it. */
  modelInStepUs?: number
  /** step median / nccl's step median. */
  vsNccl?: number
  ranksAgree: boolean
  finite: boolean
  maxRelDiffVsFirst: number
}

export interface DecodeDocument {
  kind: 'llcomm-decode'
  machine: MachineInfo
  commit: string
  date: string
  command: string
  devices: number[]
  model: string
  tp: number
  batch: number
  context: number
  layers: number
  modelLayers: number
  pdl: boolean
  /** --gemv-blocks-per-sm (0: a warp per row pair). */
  gemvBlocksPerSm?: number
  plan: {
    allReduceBytes: number
    allReducesPerStep: number
    weightBytesPerRank: number
    kvCacheBytesReadPerRank: number
    attentionSplits: number
    gemvBatch: number
  }
  /** Weight + KV-cache bytes per rank over the step without AllReduce, GB/s (when `none` ran). */
  computeGBs?: number
  rows: DecodeRow[]
  /** Every timed replay per algorithm (µs), for plots and re-analysis. */
  samplesUs: Record<string, number[]>
}

/** The plan's figures a document keeps. */
export function planSummary(plan: DecodeStepPlan): DecodeDocument['plan'] {
  return {
    allReduceBytes: plan.allReduceBytes,
    allReducesPerStep: plan.allReducesPerStep,
    weightBytesPerRank: plan.weightBytes,
    kvCacheBytesReadPerRank: plan.kvCacheBytesRead,
    attentionSplits: plan.attentionSplits,
    gemvBatch: plan.gemvBatch,
  }
}

export interface DecodeMeasurement {
  algorithm: string
  stepUs: readonly number[]
  ranksAgree: boolean
  finite: boolean
  maxRelDiffVsFirst: number
}

export function buildDecodeRows(
  plan: DecodeStepPlan,
  measured: readonly DecodeMeasurement[],
  benchUs: Readonly<Record<string, number>>,
  modelPerAllReduceUs: ((algorithm: string) => number | undefined) | undefined,
): DecodeRow[] {
  const med = new Map(measured.map((m) => [m.algorithm, median(m.stepUs)]))
  const none = med.get(NO_ALLREDUCE_NAME)
  const nccl = med.get('nccl')
  return measured.map((m) => {
    const stepMedianUs = med.get(m.algorithm) as number
    const isNone = m.algorithm === NO_ALLREDUCE_NAME
    const bench = benchUs[m.algorithm]
    const modelled = isNone ? undefined : modelPerAllReduceUs?.(m.algorithm)
    return {
      algorithm: m.algorithm,
      samples: m.stepUs.length,
      stepMedianUs,
      stepP10Us: percentile(m.stepUs, 10),
      stepP90Us: percentile(m.stepUs, 90),
      tokensPerS: (plan.batch * 1e6) / stepMedianUs,
      ...(!isNone && none !== undefined ? { allReduceInStepUs: (stepMedianUs - none) / plan.allReducesPerStep } : {}),
      ...(bench !== undefined ? { benchUs: bench } : {}),
      ...(modelled !== undefined ? { modelInStepUs: modelled } : {}),
      ...(nccl !== undefined ? { vsNccl: stepMedianUs / nccl } : {}),
      ranksAgree: m.ranksAgree,
      finite: m.finite,
      maxRelDiffVsFirst: m.maxRelDiffVsFirst,
    }
  })
}

const fmt = (v: number | undefined, digits = 2) => (v === undefined ? '-' : v.toFixed(digits))

export function formatDecodeReport(doc: DecodeDocument): string {
  const p = doc.plan
  const head = [
    `llcomm decode: ${doc.model}, TP ${doc.tp} (devices ${doc.devices.join(',')}), batch ${doc.batch}, context ${doc.context}, ${doc.layers}${doc.layers < doc.modelLayers ? ` of ${doc.modelLayers}` : ''} layers${doc.pdl ? ', PDL' : ''}`,
    `  per rank: ${(p.weightBytesPerRank / 1e9).toFixed(2)} GB weights + ${(p.kvCacheBytesReadPerRank / 1e9).toFixed(3)} GB KV cache read per step; ${p.allReducesPerStep} AllReduces of ${p.allReduceBytes} B bf16${doc.computeGBs !== undefined ? `; compute reads ${doc.computeGBs.toFixed(0)} GB/s per rank` : ''}`,
    `  ${doc.machine.gpu ?? 'unknown GPU'} · commit ${doc.commit} · ${doc.date}`,
    '',
  ]
  const table = formatTable(
    [
      'algorithm',
      'step µs',
      'p10',
      'p90',
      'tok/s',
      'AR in step µs',
      'AR b2b µs',
      'model in step',
      'vs nccl',
      'ranks agree',
    ],
    doc.rows.map((r) => [
      r.algorithm,
      fmt(r.stepMedianUs, 1),
      fmt(r.stepP10Us, 1),
      fmt(r.stepP90Us, 1),
      fmt(r.tokensPerS, 0),
      fmt(r.allReduceInStepUs),
      fmt(r.benchUs),
      fmt(r.modelInStepUs),
      r.vsNccl === undefined ? '-' : `${r.vsNccl.toFixed(3)}×`,
      !r.finite
        ? 'NOT FINITE'
        : r.algorithm === NO_ALLREDUCE_NAME || r.algorithm === 'none+rmsnorm' // no AllReduce: ranks differ by design
          ? 'n/a'
          : r.ranksAgree
            ? 'yes'
            : 'NO',
    ]),
    [false, true, true, true, true, true, true, true, true, false],
  )
  return `${head.join('\n')}${table}\n`
}

/** Reads a saved document back (for --from); checks the fields the table needs. */
export function validateDecodeDocument(value: unknown, where = 'document'): DecodeDocument {
  const bad = (why: string): never => {
    throw new LlcommError('INVALID_ARGUMENT', `decode ${where}: ${why}`)
  }
  const o = value as Partial<DecodeDocument> | null
  if (!o || typeof o !== 'object' || o.kind !== 'llcomm-decode') bad('not an llcomm decode document (kind)')
  const d = o as Partial<DecodeDocument>
  if (!Array.isArray(d.devices) || typeof d.machine !== 'object' || d.machine === null || typeof d.model !== 'string')
    bad('devices, machine or model missing')
  for (const k of ['tp', 'batch', 'context', 'layers', 'modelLayers'] as const)
    if (!Number.isFinite(d[k])) bad(`${k} is not a number`)
  const plan = d.plan as Record<string, unknown> | undefined
  if (!plan || typeof plan !== 'object') bad('plan missing')
  for (const k of ['allReduceBytes', 'allReducesPerStep', 'weightBytesPerRank', 'kvCacheBytesReadPerRank'])
    if (!Number.isFinite(plan?.[k])) bad(`plan.${k} is not a number`)
  if (!Array.isArray(d.rows)) bad('rows missing')
  for (const [i, r] of (d.rows ?? []).entries()) {
    if (typeof r?.algorithm !== 'string' || !Number.isFinite(r.stepMedianUs))
      bad(`rows[${i}] lacks algorithm or stepMedianUs`)
    if (typeof r.finite !== 'boolean' || typeof r.ranksAgree !== 'boolean') bad(`rows[${i}] lacks finite or ranksAgree`)
  }
  return d as DecodeDocument
}
