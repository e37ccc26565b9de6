/**
 * Scale simulation: the model's latency for each algorithm over a range of GPU counts and message sizes on one
 * platform, flagging counts beyond the platform's NVLink domain as extrapolations.
 */

import {
  type FitParam,
  type LatencyPrediction,
  type ParamValues,
  paramsFromPlatform,
  predictLatency,
} from './latency-model.js'
import { type AlgorithmTable, getAlgorithm, type PlatformConstants } from './latency-tables.js'

export interface ScaleRow {
  algorithm: string
  gpus: number
  bytes: number
  latencyUs: number
  terms: LatencyPrediction['terms']
  missingTerms: FitParam[]
  beyondDomain: boolean
  modelOnly: boolean
  /** Priced in NCCL's cost form: the (algorithm/protocol) candidate NCCL's tuner would run. */
  ncclChoice?: string
}

export function simulateScaling(
  platform: PlatformConstants,
  algorithms: AlgorithmTable,
  names: string[],
  gpuCounts: number[],
  sizes: number[],
  params: ParamValues = paramsFromPlatform(platform),
): ScaleRow[] {
  const rows: ScaleRow[] = []
  for (const name of names) {
    const alg = getAlgorithm(algorithms, name)
    for (const gpus of gpuCounts) {
      for (const bytes of sizes) {
        const p = predictLatency(alg, platform, gpus, bytes, params)
        rows.push({
          algorithm: name,
          gpus,
          bytes,
          latencyUs: p.latencyUs,
          terms: p.terms,
          missingTerms: p.missingTerms,
          beyondDomain: gpus > platform.nvlinkDomainGpus,
          modelOnly: alg.modelOnly === true,
          ...(p.ncclChoice ? { ncclChoice: p.ncclChoice } : {}),
        })
      }
    }
  }
  return rows
}

/** '2..72' → [2,4,8,16,32,64,72] (powers of two plus the end); '2,4,8' → as listed. */
export function parseGpuCounts(text: string): number[] {
  const range = /^(\d+)\.\.(\d+)$/.exec(text.trim())
  if (range) {
    const lo = Number(range[1])
    const hi = Number(range[2])
    const out: number[] = []
    for (let n = lo; n <= hi; n *= 2) out.push(n)
    if (out[out.length - 1] !== hi) out.push(hi)
    return out.filter((n) => n >= 2)
  }
  return text
    .split(',')
    .map((s) => Number(s.trim()))
    .filter((n) => Number.isInteger(n) && n >= 2)
}

/** '8,16K,1M' → bytes. */
export function parseSizes(text: string): number[] {
  return text.split(',').map((s) => {
    const m = /^(\d+(?:\.\d+)?)([KMG]?)i?B?$/i.exec(s.trim())
    if (!m) return Number.NaN
    const mult = { '': 1, K: 1024, M: 1024 ** 2, G: 1024 ** 3 }[m[2].toUpperCase() as '' | 'K' | 'M' | 'G']
    return Math.round(Number(m[1]) * mult)
  })
}
