/**
 * The shared driver: plans the cases of a sweep (dtype × size × algorithm × pdl) and runs each through a
 * collective descriptor, turning the in-rank timings into table rows. Times come from comm.benchmark(), measured
 * inside the ranks; nothing here times the driver's own message passing.
 */
import type { AlgorithmChoice, BenchmarkResult, Communicator, Dtype } from 'llcomm/internal'
import { LlcommError } from 'llcomm/internal'
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
  /** Fixed delay on every rank before each call (BenchmarkRequest.computeUs); absent or 0 = none. */
  computeUs?: number
  /**
   * Rounds over every case (default 1). With more, the cases are interleaved round by round, so a slow spell of a
   * shared machine hits every algorithm alike; a row's median is the median of its rounds' medians.
   */
  repeats?: number
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
  if (s.computeUs !== undefined && !(s.computeUs >= 0))
    throw new LlcommError('INVALID_ARGUMENT', `--compute-us must be ≥ 0, got ${s.computeUs}`)
  if (s.repeats !== undefined && (!Number.isInteger(s.repeats) || s.repeats < 1))
    throw new LlcommError('INVALID_ARGUMENT', `--repeat must be a whole number ≥ 1, got ${s.repeats}`)
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

/**
 * Runs every case (`settings.repeats` rounds, interleaved); a case the communicator refuses (typed LlcommError) is
 * recorded as skipped, not fatal. `onCaseDone` is called once per case and round.
 */
export async function runSweep(
  comm: Communicator,
  collective: CollectiveDescriptor,
  settings: SweepSettings,
  cases: readonly SweepCase[],
  onCaseDone?: (c: SweepCase, row: BenchRow | undefined) => void,
): Promise<SweepOutcome> {
  const outcome: SweepOutcome = { rows: [], skipped: [] }
  const rounds = settings.repeats ?? 1
  const results: BenchmarkResult[][] = cases.map(() => [])
  const refused = new Set<number>()
  for (let round = 0; round < rounds; round++) {
    for (let k = 0; k < cases.length; k++) {
      const c = cases[k]
      if (refused.has(k)) {
        onCaseDone?.(c, undefined) // asked once; later rounds only tick the progress
        continue
      }
      try {
        results[k].push(
          await collective.run(comm, {
            algorithm: c.algorithm,
            dtype: c.dtype,
            count: c.count,
            iters: settings.iters,
            warmup: settings.warmup,
            ...(settings.skewUs > 0 ? { skewUs: settings.skewUs } : {}),
            ...((settings.computeUs ?? 0) > 0 ? { computeUs: settings.computeUs } : {}),
            ...(c.pdl !== undefined ? { pdl: c.pdl } : {}),
          }),
        )
      } catch (e) {
        // Only the communicator's typed refusals (unsupported shape, unusable algorithm) become skipped rows; a
        // timeout or a dead worker means the measurement itself is broken, so it stops the sweep.
        if (
          !(e instanceof LlcommError) ||
          !['UNSUPPORTED_ALGORITHM', 'UNSUPPORTED_DTYPE', 'INVALID_ARGUMENT', 'MISALIGNED_BUFFER'].includes(e.code)
        )
          throw e
        refused.add(k)
        outcome.skipped.push({
          algorithm: c.algorithm,
          dtype: c.dtype,
          bytes: c.bytes,
          ...(c.pdl !== undefined ? { pdl: c.pdl } : {}),
          reason: `${e.code}: ${e.message}`,
        })
      }
      const done = results[k]
      const row =
        round === rounds - 1 && done.length > 0 ? rowFromRounds(comm, collective, settings, c, done) : undefined
      if (row) outcome.rows.push(row)
      onCaseDone?.(c, row)
    }
  }
  return outcome
}

/** One row from a case's rounds: a single round as measured; several by the median of the round medians. */
function rowFromRounds(
  comm: Pick<Communicator, 'backend' | 'size'>,
  collective: CollectiveDescriptor,
  settings: SweepSettings,
  c: SweepCase,
  rounds: readonly BenchmarkResult[],
): BenchRow {
  const first = rounds[0]
  const wrong = rounds.reduce((sum, r) => sum + r.wrong, 0)
  if (rounds.length === 1) {
    return rowFromTimes(
      comm,
      collective,
      settings,
      c,
      first.algorithm,
      first.timesUs,
      first.skewWaitUs,
      wrong,
      first.backToBackUs,
    )
  }
  const roundMediansUs = rounds.map((r) => median(r.timesUs))
  const backToBack = rounds.flatMap((r) => (r.backToBackUs === undefined ? [] : [r.backToBackUs]))
  const row = rowFromTimes(
    comm,
    collective,
    settings,
    c,
    first.algorithm,
    rounds.flatMap((r) => r.timesUs),
    rounds.flatMap((r) => r.skewWaitUs),
    wrong,
    backToBack.length > 0 ? median(backToBack) : undefined,
  )
  // The row's median (and bandwidths) from the rounds' medians; p99 stays over every sample of every round.
  row.medianUs = median(roundMediansUs)
  row.algbwGBs = algorithmBandwidthGBs(row.bytes, row.medianUs)
  row.busbwGBs = row.algbwGBs * collective.busFactor(comm.size)
  row.repeats = rounds.length
  row.roundMediansUs = roundMediansUs
  return row
}

export function rowFromTimes(
  comm: Pick<Communicator, 'backend' | 'size'>,
  collective: CollectiveDescriptor,
  settings: Pick<SweepSettings, 'iters' | 'warmup' | 'skewUs' | 'computeUs'>,
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
  if (settings.skewUs > 0) row.skewUs = settings.skewUs
  if ((settings.computeUs ?? 0) > 0) row.computeUs = settings.computeUs
  if (settings.skewUs > 0 || (settings.computeUs ?? 0) > 0)
    row.skewWaitUs = skewWaitUs.length > 0 ? median(skewWaitUs) : 0
  return row
}
