/**
 * Reads bench/results JSON (docs/design.md §6: { machine, commit, date, command, rows: [...] }) as calibration input, and
 * works out which latency-model platform each row belongs to. Tolerant: it needs only the fields it uses.
 */
import { readFileSync } from 'node:fs'
import { type Backend, DEFAULT_BUFFER_BYTES_OF_BACKEND, LlcommError } from 'llcomm/internal'
import { BENCH_BUFFER_BYTES_BEFORE_FIELD } from './kernel-counts.js'
import type { PlatformTopology } from './latency-tables.js'

export interface MeasuredRow {
  backend: string
  ranks: number
  algorithm: string
  dtype: string
  bytes: number
  medianUs: number
  p99Us?: number
  wrong: number
  skewUs?: number
  computeUs?: number
  /** Programmatic dependent launch (cuda), when the bench set it explicitly. */
  pdl?: boolean
  /** The document's bufferBytes (--buffer-bytes), copied onto each row; absent: the default buffer. */
  bufferBytes?: number
}

export interface BenchFile {
  path: string
  machine: { hostname?: string; cpuModel?: string; gpu?: string; cores?: number }
  commit?: string
  date?: string
  command: string
  rows: MeasuredRow[]
}

export function readBenchFile(path: string): BenchFile {
  let doc: unknown
  try {
    doc = JSON.parse(readFileSync(path, 'utf8'))
  } catch (e) {
    throw new LlcommError('INVALID_ARGUMENT', `cannot read bench results ${path}: ${(e as Error).message}`, { path })
  }
  const d = doc as Partial<BenchFile>
  if (typeof d !== 'object' || d === null || !Array.isArray(d.rows)) {
    throw new LlcommError('INVALID_ARGUMENT', `${path} is not a bench results document (no rows array)`, { path })
  }
  const rows = d.rows.filter(
    (r): r is MeasuredRow =>
      typeof r === 'object' &&
      r !== null &&
      typeof r.algorithm === 'string' &&
      Number.isFinite(r.ranks) &&
      Number.isFinite(r.bytes) &&
      Number.isFinite(r.medianUs) &&
      r.medianUs > 0,
  )
  const bufferBytes = (doc as { bufferBytes?: unknown }).bufferBytes
  if (typeof bufferBytes === 'number') for (const r of rows) r.bufferBytes = bufferBytes
  return {
    path,
    machine: (d.machine ?? {}) as BenchFile['machine'],
    commit: d.commit,
    date: d.date,
    command: String(d.command ?? ''),
    rows,
  }
}

/** readBenchFile, or undefined for a JSON document of another kind (a folder may hold probe or test logs). */
export function tryReadBenchFile(path: string): BenchFile | undefined {
  try {
    return readBenchFile(path)
  } catch {
    return undefined
  }
}

/** GPU count in a `machine.gpu` string such as '8x NVIDIA H200' or 'NVIDIA H200' (1), or undefined. */
export function gpuCount(gpu: string | undefined): number | undefined {
  if (!gpu) return undefined
  return gpu.split(',').reduce((sum, part) => {
    const m = /^\s*(\d+)x\s/.exec(part)
    return sum + (m ? Number(m[1]) : 1)
  }, 0)
}

/** cuda rows on fewer distinct GPUs than ranks (or with a repeated --devices index) ran as virtual ranks. */
export function rowTopology(file: BenchFile, row: MeasuredRow): PlatformTopology {
  if (row.backend === 'cpu') return 'threads'
  const devices = /--devices[ =]([\d,]+)/.exec(file.command)
  if (devices) {
    const list = devices[1].split(',').filter(Boolean)
    return new Set(list).size < list.length ? 'virtual' : 'nvswitch'
  }
  const gpus = gpuCount(file.machine.gpu)
  if (gpus !== undefined && gpus < row.ranks) return 'virtual'
  return 'nvswitch'
}

/** The latency-model platform a row calibrates: 'cpu', 'h200-virtual', 'h200', 'gb200', or '<gpu>-virtual'/'<gpu>'. */
export function rowPlatform(file: BenchFile, row: MeasuredRow): string {
  const topology = rowTopology(file, row)
  if (topology === 'threads') return 'cpu'
  const gpu = (file.machine.gpu ?? 'cuda').toLowerCase()
  const family = gpu.includes('gb200')
    ? 'gb200'
    : gpu.includes('h200')
      ? 'h200'
      : gpu
          .replace(/^\d+x\s+/, '')
          .replace(/[^a-z0-9]+/g, '-')
          .replace(/^-|-$/g, '')
  return topology === 'virtual' ? `${family}-virtual` : family
}

/**
 * The receive buffer a row was measured with: its file's `bufferBytes`, or for a file without the field the default
 * of its day (cuda: 1 MiB, BENCH_BUFFER_BYTES_BEFORE_FIELD; cpu: its backend's default, unchanged).
 */
export function rowBufferBytes(row: MeasuredRow): number {
  if (row.bufferBytes !== undefined) return row.bufferBytes
  return row.backend === 'cuda'
    ? BENCH_BUFFER_BYTES_BEFORE_FIELD
    : DEFAULT_BUFFER_BYTES_OF_BACKEND[row.backend as Backend]
}

/**
 * Rows fit for calibration: correct results, no injected arrival skew, no compute between calls, and on the cpu
 * backend its default buffer (the cpu model has no launch counts to follow another). A cuda row is counted at the
 * buffer it ran with (rowBufferBytes; calibrate.ts), whatever it was.
 */
export function usableForCalibration(row: MeasuredRow): boolean {
  return (
    row.wrong === 0 &&
    (row.backend === 'cuda' ||
      row.bufferBytes === undefined ||
      row.bufferBytes === DEFAULT_BUFFER_BYTES_OF_BACKEND[row.backend as Backend]) &&
    !(row.skewUs !== undefined && row.skewUs > 0) &&
    !(row.computeUs !== undefined && row.computeUs > 0)
  )
}
