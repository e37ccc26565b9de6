/**
 * The shared driver: plans the cases of a sweep (dtype × size × algorithm × pdl) and runs each through a
 * collective descriptor, turning the in-rank timings into table rows. Times come from comm.benchmark(), measured
 * inside the ranks; nothing here times the driver's own message passing.
 */
import type { AlgorithmChoice, Communicator, Dtype } from '../api/types.js'
import { LlcommError } from '../errors.js'
import type { CollectiveDescriptor } from './collective.js'
import type { BenchDocument, BenchRow } from './document.js'
import { elementCount } from './sizes.js'
import { algorithmBandwidthGBs, median, percentile } from './stats.js'

export interface SweepSettings {
  dtypes: Dtype[]
  sizesBytes: number[]
  algorithms: AlgorithmChoice[]
  /** One entry per PDL setting to run; `undefined` leaves the backend's default. */
  pdlSettings: (boolean | undefined)[]
  iters: number
  warmup: number
  skewUs: number
}

export interface SweepCase {
  dtype: Dtype
  bytes: number
  count: number
  algorithm: AlgorithmChoice
  pdl: boolean | undefined
}

/** Cases in table order: dtype, then size, then pdl, then algorithm (so a size's rows sit together). */
export function planSweep(s: SweepSettings): SweepCase[] {
  if (!Number.isInteger(s.iters) || s.iters < 1)
    throw new LlcommError('INVALID_ARGUMENT', `--iters must be a whole number ≥ 1, got ${s.iters}`)
  if (!Number.isInteger(s.warmup) || s.warmup < 0)
    throw new LlcommError('INVALID_ARGUMENT', `--warmup must be a whole number ≥ 0, got ${s.warmup}`)
  if (!(s.skewUs >= 0)) throw new LlcommError('INVALID_ARGUMENT', `--skew-us must be ≥ 0, got ${s.skewUs}`)
  if (s.algorithms.length === 0) throw new LlcommError('INVALID_ARGUMENT', 'no algorithms to run')
  const cases: SweepCase[] = []
  for (const dtype of s.dtypes) {
    for (const bytes of s.sizesBytes) {
      const count = elementCount(bytes, dtype)
      for (const pdl of s.pdlSettings) {
        for (const algorithm of s.algorithms) cases.push({ dtype, bytes, count, algorithm, pdl })
      }
    }
  }
  return cases
}

export interface SweepOutcome {
  rows: BenchRow[]
  skipped: NonNullable<BenchDocument['skipped']>
}

/** Runs every case; a case the communicator refuses (typed LlcommError) is recorded as skipped, not fatal. */
export async function runSweep(
  comm: Communicator,
  collective: CollectiveDescriptor,
  settings: SweepSettings,
  cases: readonly SweepCase[],
  onCaseDone?: (c: SweepCase, row: BenchRow | undefined) => void,
): Promise<SweepOutcome> {
  const outcome: SweepOutcome = { rows: [], skipped: [] }
  for (const c of cases) {
    let row: BenchRow | undefined
    try {
      const result = await collective.run(comm, {
        algorithm: c.algorithm,
        dtype: c.dtype,
        count: c.count,
        iters: settings.iters,
        warmup: settings.warmup,
        ...(settings.skewUs > 0 ? { skewUs: settings.skewUs } : {}),
        ...(c.pdl !== undefined ? { pdl: c.pdl } : {}),
      })
      row = rowFromTimes(
        comm,
        collective,
        settings,
        c,
        result.algorithm,
        result.timesUs,
        result.skewWaitUs,
        result.wrong,
        result.backToBackUs,
      )
      outcome.rows.push(row)
    } catch (e) {
      // Only the communicator's typed refusals (unsupported shape, unusable algorithm) become skipped rows; a
      // timeout or a dead worker means the measurement itself is broken, so it stops the sweep.
      if (
        !(e instanceof LlcommError) ||
        !['UNSUPPORTED_ALGORITHM', 'UNSUPPORTED_DTYPE', 'INVALID_ARGUMENT', 'MISALIGNED_BUFFER'].includes(e.code)
      )
        throw e
      outcome.skipped.push({
        algorithm: c.algorithm,
        dtype: c.dtype,
        bytes: c.bytes,
        ...(c.pdl !== undefined ? { pdl: c.pdl } : {}),
        reason: `${e.code}: ${e.message}`,
      })
    }
    onCaseDone?.(c, row)
  }
  return outcome
}

export function rowFromTimes(
  comm: Pick<Communicator, 'backend' | 'size'>,
  collective: CollectiveDescriptor,
  settings: Pick<SweepSettings, 'iters' | 'warmup' | 'skewUs'>,
  c: SweepCase,
  ranAlgorithm: BenchRow['algorithm'],
  timesUs: readonly number[],
  skewWaitUs: readonly number[],
  wrong: number,
  backToBackUs?: number,
): BenchRow {
  const bytes = collective.bytesPerRank(c.count, c.dtype)
  const medianUs = median(timesUs)
  const algbwGBs = algorithmBandwidthGBs(bytes, medianUs)
  const row: BenchRow = {
    backend: comm.backend,
    ranks: comm.size,
    algorithm: ranAlgorithm,
    requestedAlgorithm: c.algorithm,
    fallback: c.algorithm !== 'auto' && c.algorithm !== ranAlgorithm,
    dtype: c.dtype,
    bytes,
    medianUs,
    p99Us: percentile(timesUs, 99),
    algbwGBs,
    busbwGBs: algbwGBs * collective.busFactor(comm.size),
    wrong,
    iters: settings.iters,
    warmup: settings.warmup,
  }
  if (c.pdl !== undefined) row.pdl = c.pdl
  if (backToBackUs !== undefined) row.backToBackUs = backToBackUs
  if (settings.skewUs > 0) {
    row.skewUs = settings.skewUs
    row.skewWaitUs = skewWaitUs.length > 0 ? median(skewWaitUs) : 0
  }
  return row
}
