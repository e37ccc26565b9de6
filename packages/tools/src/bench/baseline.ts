/**
 * Other libraries' AllReduce, measured outside llcomm (scripts/baselines/torch-symm-mem.py: PyTorch's
 * symmetric-memory kernels and NCCL through PyTorch) and set beside a bench document: `llcomm bench --from
 * ours.json --baseline theirs.json`. A baseline document is the bench document's shape with free algorithm names
 * (any name but llcomm's own, so one is never read as the other), plus `sameAs`: which baseline algorithm runs the
 * same library as one of the bench's rows (torch-nccl and nccl), the check that the two harnesses time alike.
 */
import { readFileSync } from 'node:fs'
import { ALL_ALGORITHMS, type AlgorithmName, DTYPES, type Dtype, LlcommError } from 'llcomm/internal'
import { type BenchDocument, type BenchRow, isRecord } from './document.js'
import { formatBytes } from './sizes.js'
import { formatMicros, formatRatio, formatTable } from './table.js'

export interface BaselineRow {
  algorithm: string
  dtype: Dtype
  bytes: number
  ranks: number
  medianUs: number
  wrong: number
  /** False when the ranks' outputs were not bitwise equal. */
  ranksAgree?: boolean
}

export interface BaselineDocument {
  machine: { gpu?: string; [key: string]: unknown }
  commit: string
  date: string
  command: string
  method?: string
  /** baseline algorithm → the bench algorithm that runs the same library underneath */
  sameAs?: Record<string, AlgorithmName>
  rows: BaselineRow[]
}

/** Bench documents and baselines measured further apart than this are flagged: not side by side in one run. */
export const SIDE_BY_SIDE_MAX_APART_MS = 60 * 60 * 1000
const NCCL_ROWS: readonly AlgorithmName[] = ['nccl', 'nccl-symmetric']

function fail(where: string, why: string): never {
  throw new LlcommError('INVALID_ARGUMENT', `baseline document ${where}: ${why}`)
}

function positive(o: Record<string, unknown>, key: string, where: string, integer: boolean, min: number): void {
  const v = o[key]
  if (typeof v !== 'number' || !Number.isFinite(v) || v < min || (integer && !Number.isInteger(v)))
    fail(where, `${key} must be a ${integer ? 'whole ' : ''}number ≥ ${min}, got ${JSON.stringify(v)}`)
}

/** Checks the shape; returns the document typed, or throws INVALID_ARGUMENT naming the first bad field. */
export function validateBaselineDocument(value: unknown, where = 'document'): BaselineDocument {
  if (!isRecord(value)) fail(where, 'not a JSON object')
  if (!isRecord(value.machine)) fail(where, 'machine must be an object')
  for (const key of ['commit', 'date', 'command'] as const)
    if (typeof value[key] !== 'string') fail(where, `${key} must be a string`)
  if (Number.isNaN(Date.parse(value.date as string))) fail(where, `date ${JSON.stringify(value.date)} is not a date`)
  if (value.sameAs !== undefined) {
    if (!isRecord(value.sameAs)) fail(where, 'sameAs must be an object')
    for (const [theirs, ours] of Object.entries(value.sameAs))
      if (!ALL_ALGORITHMS.includes(ours as AlgorithmName))
        fail(where, `sameAs.${theirs} names ${JSON.stringify(ours)}, not an algorithm of llcomm bench`)
  }
  if (!Array.isArray(value.rows)) fail(where, 'rows must be an array')
  value.rows.forEach((row: unknown, i: number) => {
    const at = `${where}.rows[${i}]`
    if (!isRecord(row)) fail(at, 'not an object')
    if (typeof row.algorithm !== 'string' || row.algorithm === '') fail(at, 'algorithm must be a name')
    if (ALL_ALGORITHMS.includes(row.algorithm as AlgorithmName))
      fail(at, `algorithm ${JSON.stringify(row.algorithm)} is llcomm's own name; a baseline needs its own`)
    if (!DTYPES.includes(row.dtype as Dtype)) fail(at, `dtype ${JSON.stringify(row.dtype)}`)
    positive(row, 'ranks', at, true, 1)
    positive(row, 'bytes', at, true, 1)
    positive(row, 'wrong', at, true, 0)
    positive(row, 'medianUs', at, false, 0)
    if (row.ranksAgree !== undefined && typeof row.ranksAgree !== 'boolean') fail(at, 'ranksAgree must be a boolean')
  })
  return value as unknown as BaselineDocument
}

export function readBaselineDocument(path: string): BaselineDocument {
  let parsed: unknown
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8'))
  } catch (e) {
    throw new LlcommError('INVALID_ARGUMENT', `cannot read baseline ${path}: ${(e as Error).message}`, { path })
  }
  return validateBaselineDocument(parsed, path)
}

/** One case (dtype, size, ranks) of both documents. Times in µs; a ratio is llcomm's best over the other's time. */
export interface SideBySideRow {
  dtype: Dtype
  bytes: number
  ranks: number
  best?: { algorithm: AlgorithmName; medianUs: number }
  nccl?: number
  /** per baseline algorithm: its time, and whether it was right (no wrong element, ranks bitwise equal) */
  baselines: Record<string, { medianUs: number; right: boolean } | undefined>
  /** best llcomm ÷ the fastest right baseline */
  vsBestBaseline?: number
  bestBaseline?: string
  /** per sameAs pair: baseline time ÷ the bench's time of the same library (1 when the harnesses agree) */
  harness: Record<string, number | undefined>
}

export interface SideBySide {
  baselineAlgorithms: string[]
  rows: SideBySideRow[]
  /** why the two documents may not be comparable (different GPU, rank count, or far apart in time) */
  warnings: string[]
}

const key = (dtype: string, bytes: number, ranks: number) => `${dtype}|${bytes}|${ranks}`

/** A bench row that stands for llcomm at its case: measured right, back to back, without injected skew. */
function plainRow(r: BenchRow): boolean {
  return r.wrong === 0 && !r.fallback && !r.skewUs && !r.computeUs
}

export function sideBySide(bench: BenchDocument, base: BaselineDocument): SideBySide {
  const warnings: string[] = []
  const apart = Math.abs(Date.parse(bench.date) - Date.parse(base.date))
  if (apart > SIDE_BY_SIDE_MAX_APART_MS)
    warnings.push(`measured ${(apart / 3.6e6).toFixed(1)} h apart (${bench.date}, ${base.date}): not one run`)
  if (bench.machine.gpu && base.machine.gpu && !bench.machine.gpu.includes(base.machine.gpu))
    warnings.push(`different GPUs: ${bench.machine.gpu} and ${base.machine.gpu}`)
  const algorithms = [...new Set(base.rows.map((r) => r.algorithm))]
  const sameAs = Object.entries(base.sameAs ?? {})
  const cases = new Map<string, { dtype: Dtype; bytes: number; ranks: number }>()
  for (const r of [...bench.rows, ...base.rows]) cases.set(key(r.dtype, r.bytes, r.ranks), r)
  const rows: SideBySideRow[] = []
  for (const c of cases.values()) {
    const ours = bench.rows.filter((r) => key(r.dtype, r.bytes, r.ranks) === key(c.dtype, c.bytes, c.ranks))
    const theirs = base.rows.filter((r) => key(r.dtype, r.bytes, r.ranks) === key(c.dtype, c.bytes, c.ranks))
    if (ours.length === 0 || theirs.length === 0) continue
    const llcomm = ours.filter((r) => plainRow(r) && !NCCL_ROWS.includes(r.algorithm) && !r.pdl)
    const best = llcomm.reduce<BenchRow | undefined>((b, r) => (b && b.medianUs <= r.medianUs ? b : r), undefined)
    const nccl = ours.find((r) => r.algorithm === 'nccl' && plainRow(r) && !r.pdl)?.medianUs
    const baselines: SideBySideRow['baselines'] = {}
    for (const a of algorithms) {
      const r = theirs.find((x) => x.algorithm === a)
      baselines[a] = r && { medianUs: r.medianUs, right: r.wrong === 0 && r.ranksAgree !== false }
    }
    const right = Object.entries(baselines).filter(([, v]) => v?.right) as [string, { medianUs: number }][]
    const fastest = right.reduce<[string, { medianUs: number }] | undefined>(
      (b, e) => (b && b[1].medianUs <= e[1].medianUs ? b : e),
      undefined,
    )
    const harness: SideBySideRow['harness'] = {}
    for (const [theirName, ourName] of sameAs) {
      const t = baselines[theirName]?.medianUs
      const o = ours.find((r) => r.algorithm === ourName && plainRow(r) && !r.pdl)?.medianUs
      harness[theirName] = t !== undefined && o !== undefined ? t / o : undefined
    }
    rows.push({
      ...c,
      best: best && { algorithm: best.algorithm, medianUs: best.medianUs },
      nccl,
      baselines,
      vsBestBaseline: best && fastest ? best.medianUs / fastest[1].medianUs : undefined,
      bestBaseline: fastest?.[0],
      harness,
    })
  }
  rows.sort((a, b) => a.ranks - b.ranks || a.dtype.localeCompare(b.dtype) || a.bytes - b.bytes)
  const unmatched = base.rows.filter(
    (r) => !bench.rows.some((o) => key(o.dtype, o.bytes, o.ranks) === key(r.dtype, r.bytes, r.ranks)),
  )
  if (unmatched.length > 0) warnings.push(`${unmatched.length} baseline rows have no bench case (dtype, size, ranks)`)
  return { baselineAlgorithms: algorithms, rows, warnings }
}

export function formatSideBySide(s: SideBySide, bench: BenchDocument, base: BaselineDocument): string {
  const harnessNames = [...new Set(s.rows.flatMap((r) => Object.keys(r.harness)))]
  const headers = [
    'size',
    'dtype',
    'ranks',
    'llcomm best',
    'us',
    'nccl us',
    ...s.baselineAlgorithms.map((a) => `${a} us`),
    'llcomm / best other',
    ...harnessNames.map((h) => `${h} / ${base.sameAs?.[h]}`),
  ]
  const cells = s.rows.map((r) => [
    formatBytes(r.bytes),
    r.dtype,
    String(r.ranks),
    r.best?.algorithm ?? '-',
    r.best ? formatMicros(r.best.medianUs) : '-',
    r.nccl !== undefined ? formatMicros(r.nccl) : '-',
    ...s.baselineAlgorithms.map((a) => {
      const v = r.baselines[a]
      return v ? `${formatMicros(v.medianUs)}${v.right ? '' : ' WRONG'}` : '-'
    }),
    r.vsBestBaseline !== undefined ? `${formatRatio(r.vsBestBaseline)} (${r.bestBaseline})` : '-',
    ...harnessNames.map((h) => formatRatio(r.harness[h])),
  ])
  const lines = [
    `# side by side: llcomm bench (${bench.commit}, ${bench.date}) and ${base.command.split(' ').slice(0, 2).join(' ')} (${base.commit}, ${base.date})`,
    `# ${bench.machine.gpu ?? 'no GPU named'}; times are medians per call, µs; below 1x llcomm is faster`,
    ...(base.method ? [`# baseline method: ${base.method}`] : []),
    ...s.warnings.map((w) => `# WARNING: ${w}`),
    formatTable(
      headers,
      cells,
      headers.map((_, i) => i === 2 || i === 4 || i >= 5),
    ),
  ]
  return `${lines.join('\n')}\n`
}
