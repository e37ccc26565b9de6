/**
 * From sweep rows to the tuning table `auto` reads (src/algorithms/auto.ts): per backend and rank count, the
 * fastest correct algorithm at each measured size, adjacent sizes with the same winner merged into one band, and
 * band edges at the midpoint in log space between the last size of one band and the first of the next
 * (√(a·b) bytes): a size between two measured ones goes to the winner of the nearer one on a log scale.
 */

import type { AlgorithmName, Backend, TuningEntry, TuningSource, TuningTable } from 'llcomm/internal'
import { LlcommError } from 'llcomm/internal'
import type { BenchRow } from './document.js'

/** The last band covers every larger size (the table's convention, data/tuning/default.json). */
export const OPEN_ENDED_MAX_BYTES = Number.MAX_SAFE_INTEGER

export interface SizeWinner {
  bytes: number
  algorithm: AlgorithmName
  medianUs: number
}

/** Rows `auto` may learn from: no wrong elements, the requested algorithm itself ran (no fallback, not auto). */
export function eligibleRow(r: BenchRow): boolean {
  return r.wrong === 0 && !r.fallback && r.requestedAlgorithm === r.algorithm
}

/** Fastest eligible algorithm per size (ties: the earlier row), for one backend, rank count and dtype. */
export function winnersBySize(rows: readonly BenchRow[]): SizeWinner[] {
  const best = new Map<number, SizeWinner>()
  for (const r of rows) {
    if (!eligibleRow(r)) continue
    const current = best.get(r.bytes)
    if (!current || r.medianUs < current.medianUs)
      best.set(r.bytes, { bytes: r.bytes, algorithm: r.algorithm, medianUs: r.medianUs })
  }
  return [...best.values()].sort((a, b) => a.bytes - b.bytes)
}

/** Merges runs of equal winners; each band ends at the log-space midpoint to the next band's first size. */
export function bandsFromWinners(winners: readonly SizeWinner[]): { maxBytes: number; algorithm: AlgorithmName }[] {
  const bands: { maxBytes: number; algorithm: AlgorithmName; lastBytes: number }[] = []
  for (const w of winners) {
    const last = bands[bands.length - 1]
    if (last && last.algorithm === w.algorithm) {
      last.lastBytes = w.bytes
      continue
    }
    if (last) last.maxBytes = Math.floor(Math.sqrt(last.lastBytes * w.bytes))
    bands.push({ maxBytes: OPEN_ENDED_MAX_BYTES, algorithm: w.algorithm, lastBytes: w.bytes })
  }
  return bands.map(({ maxBytes, algorithm }) => ({ maxBytes, algorithm }))
}

/**
 * Tuning entries for every (backend, ranks) in the rows. Rows of several dtypes are pooled per size by the
 * smallest median (the table has no dtype column; tune one dtype, the one decode uses, for the sharpest table).
 */
export function tuningEntriesFromRows(rows: readonly BenchRow[]): TuningEntry[] {
  const groups = new Map<string, BenchRow[]>()
  for (const r of rows) {
    const key = `${r.backend}|${r.ranks}`
    groups.set(key, [...(groups.get(key) ?? []), r])
  }
  const entries: TuningEntry[] = []
  for (const [key, group] of [...groups].sort(
    ([a], [b]) => a.split('|')[0].localeCompare(b.split('|')[0]) || Number(a.split('|')[1]) - Number(b.split('|')[1]),
  )) {
    const [backend, ranks] = key.split('|')
    const bands = bandsFromWinners(winnersBySize(group))
    if (bands.length === 0)
      throw new LlcommError(
        'INVALID_ARGUMENT',
        `no correct measurement for ${backend} at ${ranks} ranks: nothing to tune`,
      )
    for (const b of bands)
      entries.push({ backend: backend as Backend, ranks: Number(ranks), maxBytes: b.maxBytes, algorithm: b.algorithm })
  }
  return entries
}

/**
 * A new table: the measured (backend, ranks) rows replace the old ones; rows for anything not measured (e.g. the
 * cuda rows when tuning on a CPU machine, or the other rank counts of the backend tuned) are kept from `previous`.
 * Provenance per rank count: each measured backend gets this run as a source for the rank counts it measured; an
 * earlier source keeps the rank counts of its that were not measured again (one without `ranks`, which stands for
 * every rank count of its backend, gets them listed when some of that backend's were), and goes when none is left.
 */
export function mergeTuningTable(
  previous: TuningTable | undefined,
  measured: readonly TuningEntry[],
  meta: Omit<TuningTable, 'entries'>,
): TuningTable {
  const key = (backend: string, ranks: number) => `${backend}|${ranks}`
  const measuredKeys = new Set(measured.map((e) => key(e.backend, e.ranks)))
  const kept = (previous?.entries ?? []).filter((e) => !measuredKeys.has(key(e.backend, e.ranks)))
  const entries = [...kept, ...measured].sort(
    (a, b) => a.backend.localeCompare(b.backend) || a.ranks - b.ranks || a.maxBytes - b.maxBytes,
  )
  const rankCounts = (list: readonly TuningEntry[], backend: string) =>
    [...new Set(list.filter((e) => e.backend === backend).map((e) => e.ranks))].sort((a, b) => a - b)
  const measuredBackends = [...new Set(measured.map((e) => e.backend))]
  const { sources: _ignored, ...run } = meta
  // A table without sources names its own run for every backend it holds.
  const previousSources: TuningSource[] =
    previous?.sources ??
    [...new Set((previous?.entries ?? []).map((e) => e.backend))].map((backend) => ({
      backend,
      machine: previous?.machine ?? 'unknown',
      ...(previous?.date ? { date: previous.date } : {}),
      ...(previous?.commit ? { commit: previous.commit } : {}),
      ...(previous?.command ? { command: previous.command } : {}),
    }))
  const carried: TuningSource[] = []
  for (const s of previousSources) {
    const keptRanks = rankCounts(kept, s.backend)
    if (!measuredBackends.includes(s.backend)) {
      if (keptRanks.length > 0) carried.push(s)
      continue
    }
    const left = (s.ranks ?? keptRanks).filter((r) => keptRanks.includes(r))
    if (left.length > 0) carried.push({ ...s, ranks: left })
  }
  const sources: TuningSource[] = [
    ...carried,
    ...measuredBackends.map((backend) => ({ backend, ranks: rankCounts(measured, backend), ...run })),
  ]
  return { ...run, sources, entries }
}

/** JSON text with one entry per line (the shipped table's layout: diff-friendly). */
export function formatTuningTable(table: TuningTable): string {
  const { entries, ...meta } = table
  const head = Object.entries(meta).map(([k, v]) => `  ${JSON.stringify(k)}: ${JSON.stringify(v)},`)
  const lines = entries.map(
    (e, i) =>
      `    ${JSON.stringify(e).replaceAll('":', '": ').replaceAll(',"', ', "').replace('{', '{ ').replace(/}$/, ' }')}${i < entries.length - 1 ? ',' : ''}`,
  )
  return `{\n${head.join('\n')}\n  "entries": [\n${lines.join('\n')}\n  ]\n}\n`
}
