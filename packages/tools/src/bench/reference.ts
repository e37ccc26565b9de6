/**
 * The reference each algorithm is compared with, per size: the best `nccl*` row on cuda (NCCL default or
 * symmetric, whichever is faster there), else `oneshot-barrier` (the classic custom all-reduce design).
 * Ratio = medianUs / reference medianUs: below 1 is faster than the reference.
 */
import type { BenchRow } from './document.js'

/** Rows that share a reference: same backend, rank count, dtype, size and PDL setting. */
export function comparisonKey(r: BenchRow): string {
  return `${r.backend}|${r.ranks}|${r.dtype}|${r.bytes}|${r.pdl ?? '-'}`
}

function isCleanRun(r: BenchRow): boolean {
  return !r.fallback && r.wrong === 0 && r.requestedAlgorithm !== 'auto'
}

/** The reference row of each comparison group (absent when the group has no NCCL or oneshot-barrier row). */
export function referenceRows(rows: readonly BenchRow[]): Map<string, BenchRow> {
  const refs = new Map<string, BenchRow>()
  for (const r of rows) {
    if (!isCleanRun(r)) continue
    const key = comparisonKey(r)
    const current = refs.get(key)
    const isNccl = r.algorithm === 'nccl' || r.algorithm === 'nccl-symmetric'
    const currentIsNccl =
      current !== undefined && (current.algorithm === 'nccl' || current.algorithm === 'nccl-symmetric')
    if (isNccl) {
      if (!currentIsNccl || r.medianUs < (current as BenchRow).medianUs) refs.set(key, r)
    } else if (r.algorithm === 'oneshot-barrier' && current === undefined) {
      refs.set(key, r)
    }
  }
  return refs
}

/** medianUs / reference medianUs, or undefined when the group has no reference. */
export function ratioToReference(row: BenchRow, refs: Map<string, BenchRow>): number | undefined {
  const ref = refs.get(comparisonKey(row))
  return ref && ref.medianUs > 0 ? row.medianUs / ref.medianUs : undefined
}

/** How a row names its algorithm in tables and plots: 'auto→oneshot-ll', 'twoshot-atomic→ring (fallback)'. */
export function algorithmLabel(r: Pick<BenchRow, 'algorithm' | 'requestedAlgorithm' | 'fallback'>): string {
  if (r.requestedAlgorithm === r.algorithm) return r.algorithm
  return r.fallback ? `${r.requestedAlgorithm}→${r.algorithm} (fallback)` : `${r.requestedAlgorithm}→${r.algorithm}`
}
