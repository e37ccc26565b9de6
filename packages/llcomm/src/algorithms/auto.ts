/**
 * `auto`: choose an algorithm from a tuning table (data, not branches: STYLE habit 8). `llcomm tune` rewrites the
 * table for a machine; data/tuning/default.json ships with the package.
 */
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import type { AlgorithmName, Backend } from '../api/types.js'
import { LlcommError } from '../errors.js'

export interface TuningEntry {
  backend: Backend
  /** Rank count this row was measured at; rows for the nearest rank count are used. */
  ranks: number
  /** Inclusive upper bound of the message size (bytes per rank) this row covers. */
  maxBytes: number
  algorithm: AlgorithmName
}

export interface TuningTable {
  /** Where the table was measured ('default' for the shipped one). */
  machine: string
  date?: string
  commit?: string
  command?: string
  /** Where each backend's rows were measured (a table merges runs of several machines). */
  sources?: TuningSource[]
  entries: TuningEntry[]
}

/** Provenance of one backend's rows in a merged table: of the rank counts in `ranks`, or (absent) of all of them. */
export interface TuningSource {
  backend: TuningEntry['backend']
  ranks?: number[]
  machine: string
  date?: string
  commit?: string
  command?: string
  note?: string
}

const DEFAULT_TABLE_URL = new URL('../../../data/tuning/default.json', import.meta.url)
/** The tuning table the package ships (data/tuning/default.json), which `auto` reads unless given another. */
export const SHIPPED_TUNING_TABLE_PATH = fileURLToPath(DEFAULT_TABLE_URL)

export function loadTuningTable(path?: string): TuningTable {
  const file = path ?? fileURLToPath(DEFAULT_TABLE_URL)
  let table: TuningTable
  try {
    table = JSON.parse(readFileSync(file, 'utf8')) as TuningTable
  } catch (e) {
    throw new LlcommError('INVALID_ARGUMENT', `cannot read tuning table ${file}: ${(e as Error).message}`, {
      path: file,
    })
  }
  if (table === null || typeof table !== 'object' || !Array.isArray(table.entries)) {
    throw new LlcommError('INVALID_ARGUMENT', `tuning table ${file} has no entries array`, { path: file })
  }
  return table
}

/**
 * The row for the nearest measured rank count (ties go to the larger), then the first size band that covers
 * `bytes`, among the algorithms available here. Falls back to the first available algorithm in `preference`.
 */
export function chooseAlgorithm(
  table: TuningTable,
  backend: Backend,
  ranks: number,
  bytes: number,
  available: readonly AlgorithmName[],
  preference: readonly AlgorithmName[],
): AlgorithmName {
  const rows = table.entries.filter((e) => e.backend === backend && available.includes(e.algorithm))
  if (rows.length > 0) {
    const rankCounts = [...new Set(rows.map((r) => r.ranks))]
    const nearest = rankCounts.reduce((best, r) => {
      const d = Math.abs(r - ranks)
      const bd = Math.abs(best - ranks)
      return d < bd || (d === bd && r > best) ? r : best
    })
    const band = rows
      .filter((r) => r.ranks === nearest)
      .sort((a, b) => a.maxBytes - b.maxBytes)
      .find((r) => bytes <= r.maxBytes)
    if (band) return band.algorithm
  }
  const fallback = preference.find((a) => available.includes(a))
  if (!fallback)
    throw new LlcommError('UNSUPPORTED_ALGORITHM', `no algorithm available for ${backend} at ${ranks} ranks`)
  return fallback
}
