/**
 * The decode model's per-algorithm in-step term from `llcomm decode` runs: for each algorithm, the mean over runs of
 * (measured cost of one AllReduce in the step − the latency model's price of that call). NCCL's value is the
 * reference: the model keeps allReduceInStepUs (fitted on PyTorch steps with NCCL) for NCCL and gives algorithm a
 * allReduceInStepUs − values.nccl + values[a] (decode-model.ts allReduceInStepUsFor). Only runs without PDL count
 * (the latency model is fitted on PDL-off rows). `counting`: how the runs' calls are counted (the build they ran; the
 * committed 11-29 runs: COUNTING_2026_11_29 in kernel-counts.ts); absent fields, the model's own.
 */
import type { DecodeDocument } from '../decode/report.js'
import { type LaunchCounting, paramsFromPlatform, predictLatency } from './latency-model.js'
import { type AlgorithmTable, getAlgorithm, type PlatformConstants } from './latency-tables.js'

export interface DecodeStepFitRow {
  file: string
  model: string
  tp: number
  batch: number
  bytes: number
  measuredUs: number
  modelledUs: number
}

export interface DecodeStepFit {
  /** algorithm → mean(measured − modelled) µs, rounded to 0.01. */
  values: Record<string, number>
  rows: Record<string, DecodeStepFitRow[]>
}

export function fitDecodeStepTerms(
  docs: readonly { file: string; doc: DecodeDocument }[],
  algorithmTable: AlgorithmTable,
  platform: PlatformConstants,
  counting: LaunchCounting = {},
): DecodeStepFit {
  const params = paramsFromPlatform(platform)
  const rows: Record<string, DecodeStepFitRow[]> = {}
  for (const { file, doc } of docs) {
    if (doc.pdl) continue
    for (const r of doc.rows) {
      if (r.allReduceInStepUs === undefined) continue
      let modelledUs: number
      try {
        modelledUs = predictLatency(
          getAlgorithm(algorithmTable, r.algorithm),
          platform,
          doc.tp,
          doc.plan.allReduceBytes,
          params,
          undefined,
          counting,
        ).latencyUs
      } catch {
        continue // an algorithm the latency model does not price
      }
      rows[r.algorithm] ??= []
      rows[r.algorithm].push({
        file,
        model: doc.model,
        tp: doc.tp,
        batch: doc.batch,
        bytes: doc.plan.allReduceBytes,
        measuredUs: r.allReduceInStepUs,
        modelledUs,
      })
    }
  }
  const values: Record<string, number> = {}
  for (const [a, list] of Object.entries(rows)) {
    const mean = list.reduce((s, x) => s + x.measuredUs - x.modelledUs, 0) / list.length
    values[a] = Math.round(mean * 100) / 100
  }
  return { values, rows }
}
