/**
 * What-if: the step time if each AllReduce took llcomm's latency instead of what the trace shows, compute
 * unchanged. llcomm's latency comes from measured bench/results rows (the fastest barrier-free algorithm at the
 * nearest rank count, interpolated in log-log between the two nearest sizes), or, without measurements, from
 * the latency model of a named platform (then marked as a model prediction). Only the exposed part of the
 * trace's communication (what no compute overlaps) turns into step time.
 */
import { BARRIER_FREE_ALGORITHMS } from '../api/types.js'
import type { BenchFile, MeasuredRow } from '../model/bench-results.js'
import { usableForCalibration } from '../model/bench-results.js'
import { type ParamValues, paramsFromPlatform } from '../model/latency-model.js'
import { type AlgorithmTable, getPlatform, type PlatformTable } from '../model/latency-tables.js'
import { fastestBarrierFree } from '../model/seed-checks.js'
import type { TraceAnalysis } from './analyze.js'

export interface LatencySource {
  /** 'bench:<file>' or 'model:<platform>' */
  name: string
  /** llcomm's latency for an AllReduce of `bytes` per rank at `ranks`, with the algorithm; undefined if unknown. */
  latency(ranks: number, bytes: number): { latencyUs: number; algorithm: string; ranksUsed: number } | undefined
}

export interface WhatIfRow {
  name: string
  bytes: number | null
  count: number
  measuredMeanUs: number
  llcommUs: number | null
  algorithm: string | null
  savedUs: number
}

export interface WhatIf {
  available: boolean
  reason?: string
  source?: string
  ranks?: number
  stepUs: number
  predictedStepUs: number
  savedUs: number
  speedup: number
  rows: WhatIfRow[]
}

/** Log-log interpolation between the two nearest measured sizes; clamped below the smallest (a fixed-cost call
 * does not get faster), extrapolated along the last segment above the largest. */
export function interpolateLogLog(points: { bytes: number; us: number }[], bytes: number): number {
  const sorted = [...points].sort((a, b) => a.bytes - b.bytes)
  if (sorted.length === 1 || bytes <= sorted[0].bytes) return sorted[0].us
  let i = sorted.findIndex((p) => p.bytes >= bytes)
  if (i < 0) i = sorted.length - 1
  const a = sorted[i - 1]
  const b = sorted[i]
  if (a.bytes === b.bytes) return Math.min(a.us, b.us)
  const t = (Math.log(bytes) - Math.log(a.bytes)) / (Math.log(b.bytes) - Math.log(a.bytes))
  return Math.exp(Math.log(a.us) + t * (Math.log(b.us) - Math.log(a.us)))
}

/** A latency source from measured bench rows (cuda rows preferred over cpu rows). */
export function benchLatencySource(files: BenchFile[]): LatencySource {
  const rows: MeasuredRow[] = files
    .flatMap((f) => f.rows)
    .filter((r) => usableForCalibration(r) && (BARRIER_FREE_ALGORITHMS as readonly string[]).includes(r.algorithm))
  const backend = rows.some((r) => r.backend === 'cuda') ? 'cuda' : 'cpu'
  const usable = rows.filter((r) => r.backend === backend)
  return {
    name: `bench:${files
      .filter((f) => f.rows.some((r) => r.backend === backend))
      .map((f) => f.path)
      .join(',')} (${backend})`,
    latency(ranks, bytes) {
      if (usable.length === 0) return undefined
      const counts = [...new Set(usable.map((r) => r.ranks))]
      const nearest = counts.reduce((best, n) =>
        Math.abs(n - ranks) < Math.abs(best - ranks) || (Math.abs(n - ranks) === Math.abs(best - ranks) && n > best)
          ? n
          : best,
      )
      let best: { latencyUs: number; algorithm: string; ranksUsed: number } | undefined
      for (const alg of new Set(usable.filter((r) => r.ranks === nearest).map((r) => r.algorithm))) {
        const pts = usable
          .filter((r) => r.ranks === nearest && r.algorithm === alg)
          .map((r) => ({ bytes: r.bytes, us: r.medianUs }))
        const us = interpolateLogLog(pts, bytes)
        if (!best || us < best.latencyUs) best = { latencyUs: us, algorithm: alg, ranksUsed: nearest }
      }
      return best
    },
  }
}

export function whatIf(a: TraceAnalysis, source: LatencySource | undefined, ranksOverride?: number): WhatIf {
  const base = { stepUs: a.totalUs, predictedStepUs: a.totalUs, savedUs: 0, speedup: 1, rows: [] as WhatIfRow[] }
  if (!source)
    return {
      ...base,
      available: false,
      reason: 'no bench results and no model platform given (--bench FILE or --platform NAME)',
    }
  const traceRanks = Math.max(0, ...a.collectives.map((c) => c.groupSize ?? 0))
  const ranks = ranksOverride ?? (traceRanks >= 2 ? traceRanks : undefined)
  if (ranks === undefined) {
    return {
      ...base,
      available: false,
      reason: `the trace's process group has ${traceRanks || 'an unknown number of'} rank(s): pass --ranks N to price its AllReduces at N ranks`,
    }
  }
  // Of the trace's communication time, the fraction that was on the critical path.
  const exposedFraction = a.commUs > 0 ? a.exposedCommUs / a.commUs : 1
  const rows: WhatIfRow[] = a.collectives.map((c) => {
    const l = c.name === 'allreduce' && c.bytes !== null ? source.latency(ranks, c.bytes) : undefined
    if (!l)
      return {
        name: c.name,
        bytes: c.bytes,
        count: c.count,
        measuredMeanUs: c.meanUs,
        llcommUs: null,
        algorithm: null,
        savedUs: 0,
      }
    // Calls without a GPU kernel in the trace cost nothing there; with llcomm at `ranks` they cost its latency.
    const measuredTotal = c.totalUs * exposedFraction
    const llcommTotal = c.count * l.latencyUs * (c.count - c.cpuOnly > 0 ? exposedFraction : 1)
    return {
      name: c.name,
      bytes: c.bytes,
      count: c.count,
      measuredMeanUs: c.meanUs,
      llcommUs: l.latencyUs,
      algorithm: `${l.algorithm}@${l.ranksUsed}`,
      savedUs: measuredTotal - llcommTotal,
    }
  })
  const savedUs = rows.reduce((s, r) => s + r.savedUs, 0)
  const predictedStepUs = a.totalUs - savedUs
  return {
    available: true,
    source: source.name,
    ranks,
    stepUs: a.totalUs,
    predictedStepUs,
    savedUs,
    speedup: predictedStepUs > 0 ? a.totalUs / predictedStepUs : Number.POSITIVE_INFINITY,
    rows,
  }
}

/** A latency source from the latency model of a platform (a prediction, not a measurement). */
export function modelLatencySource(
  algorithms: AlgorithmTable,
  platforms: PlatformTable,
  platform: string,
  params?: ParamValues,
): LatencySource {
  const p = params ?? paramsFromPlatform(getPlatform(platforms, platform))
  return {
    name: `model:${platform} (predicted, not measured)`,
    latency(ranks, bytes) {
      if (ranks < 2) return undefined
      const best = fastestBarrierFree(algorithms, platforms, platform, ranks, bytes, p)
      return { latencyUs: best.latencyUs, algorithm: best.algorithm, ranksUsed: ranks }
    },
  }
}
