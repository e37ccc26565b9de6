/**
 * What-if: the step time if each AllReduce took llcomm's latency instead of what the trace shows, compute
 * unchanged. llcomm's latency comes from measured bench/results rows (the fastest barrier-free algorithm at the
 * nearest rank count, interpolated in log-log between the two nearest sizes), or, without measurements, from
 * the latency model of a named platform (then marked as a model prediction). Only the exposed part of the
 * trace's communication (what no compute overlaps) turns into step time.
 *
 * Of the measured rows it takes, at the nearest rank count: rows on distinct GPUs when there are any (a process
 * group in a trace has one GPU per rank; virtual ranks share one GPU), the trace's dtype when measured, and for each
 * algorithm and size the newest file's row. Each priced row names the files it came from.
 *
 * With traces of every rank (cross-rank.ts), a call's kernel time splits into waiting for the last rank and the
 * collective's own post-arrival time; llcomm replaces only the latter, the wait stays.
 */
import { BARRIER_FREE_ALGORITHMS } from 'llcomm/internal'
import type { BenchFile, MeasuredRow } from '../model/bench-results.js'
import { rowTopology, usableForCalibration } from '../model/bench-results.js'
import { type ParamValues, paramsFromPlatform } from '../model/latency-model.js'
import { type AlgorithmTable, getPlatform, type PlatformTable } from '../model/latency-tables.js'
import { fastestBarrierFree } from '../model/seed-checks.js'
import type { TraceAnalysis } from './analyze.js'
import type { CrossRankAnalysis } from './cross-rank.js'

export interface PricedLatency {
  latencyUs: number
  algorithm: string
  ranksUsed: number
  /** Where the figure comes from: the bench files of the rows used, or the model platform. */
  from: string[]
  /** 'distinct GPUs', 'virtual ranks on one GPU', 'CPU threads' or 'latency model' */
  setup: string
  /** The dtype of the rows used (llcomm's name), when known. */
  dtype?: string
}

export interface LatencySource {
  /** 'bench: …' or 'model:<platform>' */
  name: string
  /** llcomm's latency for an AllReduce of `bytes` per rank at `ranks` (of `dtype`, llcomm's name, if known). */
  latency(ranks: number, bytes: number, dtype?: string): PricedLatency | undefined
}

export interface WhatIfRow {
  name: string
  bytes: number | null
  count: number
  measuredMeanUs: number
  llcommUs: number | null
  algorithm: string | null
  savedUs: number
  /** What llcomm's latency replaces: the trace's kernel time, or (traces of every rank) the post-arrival time. */
  replaces: 'kernel time' | 'post-arrival time'
  /** The mean time replaced per call (measuredMeanUs for kernel time). */
  replacedMeanUs: number
  /** Where llcomm's figure comes from (bench files, or the model platform), and on what setup. */
  from: string[]
  setup: string | null
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

/** PyTorch's dtype names (record_param_comms args) as llcomm's. */
export function llcommDtype(torchDtype: string | undefined): string | undefined {
  if (!torchDtype) return undefined
  const t = torchDtype.toLowerCase().replace(/^torch\./, '')
  return { bfloat16: 'bf16', float: 'f32', float32: 'f32', half: 'f16', float16: 'f16' }[t]
}

interface SourcedRow extends MeasuredRow {
  file: string
  date: string
  setup: string
}

function setupOf(file: BenchFile, row: MeasuredRow): string {
  const t = rowTopology(file, row)
  return t === 'threads' ? 'CPU threads' : t === 'virtual' ? 'virtual ranks on one GPU' : 'distinct GPUs'
}

/** A latency source from measured bench rows (cuda rows preferred over cpu rows). */
export function benchLatencySource(files: BenchFile[]): LatencySource {
  const rows: SourcedRow[] = files.flatMap((f) =>
    f.rows
      .filter((r) => usableForCalibration(r) && (BARRIER_FREE_ALGORITHMS as readonly string[]).includes(r.algorithm))
      .map((r) => ({ ...r, file: f.path, date: f.date ?? '', setup: setupOf(f, r) })),
  )
  const backend = rows.some((r) => r.backend === 'cuda') ? 'cuda' : 'cpu'
  const usable = rows.filter((r) => r.backend === backend)
  const fileCount = new Set(usable.map((r) => r.file)).size
  return {
    name: `bench: ${fileCount} file(s) of measured ${backend} rows; per algorithm and size the newest, distinct GPUs and the trace's dtype preferred`,
    latency(ranks, bytes, dtype) {
      if (usable.length === 0) return undefined
      const counts = [...new Set(usable.map((r) => r.ranks))]
      const nearest = counts.reduce((best, n) =>
        Math.abs(n - ranks) < Math.abs(best - ranks) || (Math.abs(n - ranks) === Math.abs(best - ranks) && n > best)
          ? n
          : best,
      )
      let pool = usable.filter((r) => r.ranks === nearest)
      if (pool.some((r) => r.setup === 'distinct GPUs')) pool = pool.filter((r) => r.setup === 'distinct GPUs')
      if (dtype && pool.some((r) => r.dtype === dtype)) pool = pool.filter((r) => r.dtype === dtype)
      // the newest file's row for each algorithm, dtype and size (ISO dates sort as strings)
      const newest = new Map<string, SourcedRow>()
      for (const r of pool) {
        const key = `${r.algorithm}|${r.dtype}|${r.pdl ?? ''}|${r.bytes}`
        const had = newest.get(key)
        if (!had || r.date > had.date) newest.set(key, r)
      }
      let best: PricedLatency | undefined
      // a series per algorithm, dtype and PDL setting (llcomm's kernels can launch with PDL in a framework too)
      const seriesOf = (r: SourcedRow) => `${r.algorithm}|${r.dtype}|${r.pdl ?? ''}`
      for (const series of new Set(pool.map(seriesOf))) {
        const picked = [...newest.values()].filter((r) => seriesOf(r) === series)
        const us = interpolateLogLog(
          picked.map((r) => ({ bytes: r.bytes, us: r.medianUs })),
          bytes,
        )
        if (!best || us < best.latencyUs) {
          // the files of the (up to two) sizes nearest to `bytes`, those the interpolation used
          const near = [...picked].sort(
            (x, y) => Math.abs(Math.log(x.bytes / bytes)) - Math.abs(Math.log(y.bytes / bytes)),
          )
          best = {
            latencyUs: us,
            algorithm: picked[0].algorithm,
            ranksUsed: nearest,
            from: [...new Set(near.slice(0, 2).map((r) => r.file))],
            setup: picked[0].setup,
            dtype: picked[0].dtype,
          }
        }
      }
      return best
    },
  }
}

export function whatIf(
  a: TraceAnalysis,
  source: LatencySource | undefined,
  ranksOverride?: number,
  acrossRanks?: CrossRankAnalysis,
): WhatIf {
  const base = { stepUs: a.totalUs, predictedStepUs: a.totalUs, savedUs: 0, speedup: 1, rows: [] as WhatIfRow[] }
  if (!source)
    return {
      ...base,
      available: false,
      reason: 'no bench results and no model platform given (--bench FILE or --platform NAME)',
    }
  const traceRanks = Math.max(0, acrossRanks?.ranks ?? 0, ...a.collectives.map((c) => c.groupSize ?? 0))
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
  const lined = acrossRanks?.clocksAgree ? acrossRanks.collectives : []
  const rows: WhatIfRow[] = a.collectives.map((c) => {
    const l =
      c.name === 'allreduce' && c.bytes !== null ? source.latency(ranks, c.bytes, llcommDtype(c.dtype)) : undefined
    const x = lined.find((y) => y.name === c.name && y.bytes === c.bytes)
    const row = {
      name: c.name,
      bytes: c.bytes,
      count: c.count,
      measuredMeanUs: c.meanUs,
      replaces: x ? ('post-arrival time' as const) : ('kernel time' as const),
      replacedMeanUs: x ? x.postArrivalUs.meanUs : c.meanUs,
    }
    if (!l) return { ...row, llcommUs: null, algorithm: null, savedUs: 0, from: [], setup: null }
    // Calls without a GPU kernel in the trace cost nothing there; with llcomm at `ranks` they cost its latency.
    // With every rank's trace, only the lined-up calls' post-arrival time is replaced: their wait for the last rank
    // stays in the step.
    const replacedTotal = x ? x.postArrivalUs.meanUs * x.calls : c.totalUs
    const kernelCalls = x ? x.calls : c.count - c.cpuOnly
    const llcommTotal = kernelCalls * l.latencyUs * exposedFraction + c.cpuOnly * l.latencyUs
    return {
      ...row,
      llcommUs: l.latencyUs,
      algorithm: `${l.algorithm}@${l.ranksUsed}`,
      savedUs: replacedTotal * exposedFraction - llcommTotal,
      from: l.from,
      setup: [l.setup, l.dtype].filter(Boolean).join(', '),
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
      return {
        latencyUs: best.latencyUs,
        algorithm: best.algorithm,
        ranksUsed: ranks,
        from: [`model:${platform}`],
        setup: 'latency model',
      }
    },
  }
}
