/**
 * Calibration: fits a platform's latency constants to measured bench rows by non-negative least squares on
 * relative residuals ((predicted − measured) / measured, so that 3 µs and 3 ms rows weigh alike), for kernel
 * structure once per overlap exponent (Gauss–Newton steps of NNLS on the model's gradient), then reports the
 * residuals in-sample, leave-one-out, leave-one-rank-count-out and leave-one-size-decade-out. Constants the
 * rows cannot determine (a column of zeros, or one
 * collinear with earlier ones, e.g. barrier terms when no barrier algorithm was measured) keep the table's value
 * and are listed as not identified.
 */

import type { Dtype } from 'llcomm/internal'
import { LlcommError } from 'llcomm/internal'
import { type BenchFile, type MeasuredRow, rowBufferBytes, rowPlatform, usableForCalibration } from './bench-results.js'
import {
  FIT_PARAMS,
  type FitParam,
  type LaunchCounting,
  type ModelTerms,
  modelTerms,
  type ParamValues,
  paramsFromPlatform,
  predictFromTerms,
  termsGradient,
} from './latency-model.js'
import type { AlgorithmTable, PlatformConstants, PlatformTable, SourcedValue } from './latency-tables.js'
import { CONSTANT_NAMES, getAlgorithm } from './latency-tables.js'
import { fitNccl, heldOutPrior, NCCL_FITTABLE, type NcclFit } from './nccl-calibrate.js'
import {
  candidateLabel,
  type NcclConstantName,
  type NcclConstants,
  ncclConstantsFrom,
  predictNccl,
} from './nccl-model.js'
import { independentColumns, nonNegativeLeastSquares } from './nnls.js'

export interface CalibrationRow {
  algorithm: string
  ranks: number
  bytes: number
  measuredUs: number
  /** Element type of the measured call (launch shapes depend on it slightly); default bf16. */
  dtype?: Dtype
  /**
   * How its launches are counted (the buffer, block targets, all-gather kernel, accumulation and twoshot-sentinel
   * broadcast its file ran);
   * absent fields: the model's own (kernel-counts.ts modelCounting).
   */
  counting?: LaunchCounting
}

export interface ResidualRow extends CalibrationRow {
  predictedUs: number
  /** (predicted − measured) / measured */
  relError: number
  /** Same, with this row left out of the fit (absent when too few rows remain). */
  looRelError?: number
  /** Same, with every row of this rank count left out of the fit (the test of how the model scales in N). */
  lorcoRelError?: number
  /** Same, with every row of this size decade (sizeDecade) left out of the fit. */
  losdoRelError?: number
  /** Same, with every row of this element type left out of the fit. */
  lodtoRelError?: number
  /** Rows priced in NCCL's cost form: the (algorithm/protocol) candidate the fitted minimum picks, e.g. 'ring/LL'. */
  choice?: string
}

export interface ResidualSummary {
  rows: number
  within15: number
  rmsRelError: number
  maxAbsRelError: number
}

export interface CalibrationResult {
  platform: string
  params: ParamValues
  fitted: FitParam[]
  notIdentified: FitParam[]
  /** Columns the rows use but the caller held at the table's value (CalibrationOptions.fitOnly). */
  held: FitParam[]
  residuals: ResidualRow[]
  inSample: ResidualSummary
  leaveOneOut?: ResidualSummary
  /** Fit on all rank counts but one, predict that one; per held-out rank count and over all rows. */
  leaveOneRankCountOut?: { all: ResidualSummary; byRanks: { ranks: number; summary: ResidualSummary }[] }
  /** Fit on all size decades but one (sizeDecade), predict that one. */
  leaveOneSizeDecadeOut?: { all: ResidualSummary; byDecade: { decade: string; summary: ResidualSummary }[] }
  /** Fit on the other element types, predict this one (two or more dtypes). */
  leaveOneDtypeOut?: { all: ResidualSummary; byDtype: { dtype: string; summary: ResidualSummary }[] }
  /** The overlap exponent of the fit (null: the table's, absent = additive). */
  overlapExponent: number | null
  /** In-sample residuals at each overlap exponent tried (platforms with kernel structure). */
  overlapExponentScan?: ({ overlapExponent: number } & ResidualSummary)[]
  /** Rows of algorithms priced in NCCL's cost form (nccl-model.ts), on a platform with an `nccl` block. */
  nccl?: NcclCalibration
}

export interface NcclCalibration {
  rows: number
  constants: NcclConstants
  fitted: NcclConstantName[]
  notIdentified: NcclConstantName[]
  /** Fittable constants the caller held at the table's value (--fit). */
  held: NcclConstantName[]
}

const DTYPES: readonly string[] = ['f32', 'f16', 'bf16']

function summarize(errors: number[]): ResidualSummary {
  const n = errors.length
  return {
    rows: n,
    within15: errors.filter((e) => Math.abs(e) <= 0.15).length,
    rmsRelError: n ? Math.sqrt(errors.reduce((s, e) => s + e * e, 0) / n) : 0,
    maxAbsRelError: n ? Math.max(...errors.map(Math.abs)) : 0,
  }
}

interface FitOutcome {
  params: ParamValues
  fitted: FitParam[]
  notIdentified: FitParam[]
  held: FitParam[]
}

function rowTerms(r: CalibrationRow, algorithms: AlgorithmTable, platform: PlatformConstants): ModelTerms {
  return modelTerms(getAlgorithm(algorithms, r.algorithm), r.ranks, r.bytes, platform.topology, {
    structure: platform.structure,
    dtype: r.dtype,
    ...r.counting,
  })
}

/** Sum of squared relative residuals of `rows` under `params`. */
function relativeSquares(rows: CalibrationRow[], terms: ModelTerms[], params: ParamValues): number {
  return rows.reduce((s, r, i) => {
    const e = predictFromTerms(terms[i], params).latencyUs / r.measuredUs - 1
    return s + e * e
  }, 0)
}

/** Starts of the overlapped terms, as fractions of their median measured / count (see fitParams). */
const SEED_FRACTIONS = [0.05, 0.2, 0.5]

/** Gauss–Newton steps at most; each is one NNLS solve on the model's gradient. */
const MAX_GAUSS_NEWTON_STEPS = 60

/**
 * Fits the linear parameters for a fixed overlap exponent q. With q = 1 the model is linear in them and one NNLS
 * solve is the fit. Otherwise the model is homogeneous of degree one in them (T = ∇T · θ), so each Gauss–Newton
 * step is the NNLS solve min ‖∇T(θ_k) θ / measured − 1‖ over θ ≥ 0 (halved toward θ_k when it does not lower the
 * residual): its fixed point is a stationary point of the relative least squares under θ ≥ 0.
 */
function fitParams(
  rows: CalibrationRow[],
  terms: ModelTerms[],
  prior: ParamValues,
  overlapExponent: number | null,
  start?: ParamValues,
  fitOnly?: readonly FitParam[],
): FitOutcome {
  const linear = terms.map((t) => termsGradient(t, { ...prior, overlapExponent: 1 }, true))
  // which columns the rows use and can tell apart: decided on the additive form (same zero pattern)
  const design0 = linear.map((f, i) => FIT_PARAMS.map((p) => f[p] / rows[i].measuredUs))
  const used = FIT_PARAMS.map((_, j) => j).filter((j) => design0.some((row) => row[j] !== 0))
  // fitOnly: every other column the rows use is held at the table's value, like one they cannot identify
  const candidates = fitOnly ? used.filter((j) => fitOnly.includes(FIT_PARAMS[j])) : used
  const free = independentColumns(design0, candidates)
  const heldCols = used.filter((j) => !free.includes(j))
  const notIdentified = candidates.filter((j) => !free.includes(j)).map((j) => FIT_PARAMS[j])
  const heldByChoice = used.filter((j) => !candidates.includes(j)).map((j) => FIT_PARAMS[j])
  // Columns held at the prior (or at 0 when the table has none) move to the right-hand side.
  const held = (j: number): number => prior[FIT_PARAMS[j]] ?? 0
  const solve = (params: ParamValues): ParamValues => {
    const grad = terms.map((t) => termsGradient(t, params))
    const design = grad.map((f, i) => FIT_PARAMS.map((p) => f[p] / rows[i].measuredUs))
    const rhs = design.map((row) => 1 - heldCols.reduce((s, j) => s + row[j] * held(j), 0))
    const next: ParamValues = { ...params }
    if (free.length > 0) {
      const x = nonNegativeLeastSquares(
        design.map((row) => free.map((j) => row[j])),
        rhs,
      )
      free.forEach((j, k) => {
        next[FIT_PARAMS[j]] = x[k]
      })
    }
    return next
  }
  const gaussNewton = (start: ParamValues): { params: ParamValues; cost: number } => {
    let params = start
    let cost = relativeSquares(rows, terms, params)
    for (let step = 0; step < MAX_GAUSS_NEWTON_STEPS; step++) {
      let next = solve(params)
      let nextCost = relativeSquares(rows, terms, next)
      for (let halving = 0; halving < 8 && nextCost > cost; halving++) {
        const mid: ParamValues = { ...next }
        for (const j of free) mid[FIT_PARAMS[j]] = ((params[FIT_PARAMS[j]] ?? 0) + (next[FIT_PARAMS[j]] ?? 0)) / 2
        next = mid
        nextCost = relativeSquares(rows, terms, next)
      }
      if (nextCost > cost) break
      const improved = cost - nextCost
      params = next
      cost = nextCost
      if (improved <= 1e-10 * Math.max(cost, 1e-12)) break
    }
    return { params, cost }
  }
  const base: ParamValues = { ...prior, overlapExponent: 1 }
  for (const j of heldCols) base[FIT_PARAMS[j]] = held(j)
  // a smooth maximum (q ≠ 1) or a hard one (MAX_GROUPS) makes the model nonlinear in θ: Gauss–Newton from seeds
  const nonlinear = (overlapExponent !== null && overlapExponent !== 1) || terms.some((t) => t.maxed.length > 0)
  let params = nonlinear && start ? { ...start } : solve(base)
  if (nonlinear) {
    const startParams: ParamValues = { ...params, overlapExponent }
    // A term at 0 inside a smooth maximum has zero gradient there (for q > 1), and a side of a hard maximum that
    // never wins has none either, so Gauss–Newton would not move it: besides the start as it is, start every
    // overlapped free term at a fraction of the median of measured / count over the rows that use it (whatever the
    // start's value: a term the first solve set too low can be the losing side from there on), and keep the best
    // end point. A fit started from a given point (leave-one-out, from the full
    // fit) only refines it: a single row moves the optimum little, and the seeds would multiply its cost.
    const overlappedParams = new Set(
      terms.flatMap((t) =>
        [...t.overlapped.flatMap((g) => [g.first, g.second]), ...t.maxed.flatMap((g) => g.sides)].flatMap((side) =>
          FIT_PARAMS.filter((p) => side[p] !== 0),
        ),
      ),
    )
    const seeds = [startParams]
    for (const fraction of start ? [] : SEED_FRACTIONS) {
      const seeded: ParamValues = { ...startParams }
      let changed = false
      for (const j of free) {
        const p = FIT_PARAMS[j]
        if (!overlappedParams.has(p)) continue
        const ratios = linear
          .map((f, i) => (f[p] > 0 ? rows[i].measuredUs / f[p] : Number.NaN))
          .filter((x) => Number.isFinite(x))
          .sort((x, y) => x - y)
        if (ratios.length) {
          seeded[p] = fraction * ratios[Math.floor(ratios.length / 2)]
          changed = true
        }
      }
      if (changed) seeds.push(seeded)
    }
    let bestCost = Number.POSITIVE_INFINITY
    for (const seed of seeds) {
      const end = gaussNewton(seed)
      if (end.cost < bestCost) {
        bestCost = end.cost
        params = end.params
      }
    }
  } else {
    params = { ...params, overlapExponent: overlapExponent ?? prior.overlapExponent ?? null }
  }
  for (const j of used) if (params[FIT_PARAMS[j]] === null) params[FIT_PARAMS[j]] = 0
  return { params, fitted: free.map((j) => FIT_PARAMS[j]), notIdentified, held: heldByChoice }
}

/**
 * The overlap exponents tried for a platform with kernel structure (1 = additive; larger = the longer of latency
 * and bandwidth dominates a launch). The one with the least relative squares in-sample is kept.
 */
export const OVERLAP_EXPONENTS: readonly number[] = [1, 1.5, 2, 3, 4, 6, 8, 16]

interface ExponentFit extends FitOutcome {
  overlapExponent: number | null
  /** In-sample residuals of the fit at each exponent tried (absent when none was scanned). */
  scan?: ({ overlapExponent: number } & ResidualSummary)[]
}

function fitWithExponent(
  rows: CalibrationRow[],
  terms: ModelTerms[],
  prior: ParamValues,
  exponents: readonly number[] | null,
  start?: ParamValues,
  fitOnly?: readonly FitParam[],
): ExponentFit {
  if (exponents === null || !terms.some((t) => t.overlapped.length > 0)) {
    const fit = fitParams(rows, terms, prior, prior.overlapExponent ?? null, start, fitOnly)
    return { ...fit, overlapExponent: prior.overlapExponent ?? null }
  }
  let best: ExponentFit | undefined
  let bestCost = Number.POSITIVE_INFINITY
  const scan: ExponentFit['scan'] = []
  for (const q of exponents) {
    const fit = fitParams(rows, terms, prior, q, start, fitOnly)
    const cost = relativeSquares(rows, terms, fit.params)
    const errors = rows.map((r, i) => predictRow(terms[i], fit.params) / r.measuredUs - 1)
    scan.push({ overlapExponent: q, ...summarize(errors) })
    if (cost < bestCost) {
      bestCost = cost
      best = { ...fit, overlapExponent: q }
    }
  }
  return { ...(best as ExponentFit), scan }
}

function predictRow(terms: ModelTerms, params: ParamValues): number {
  return predictFromTerms(terms, params).latencyUs
}

/** Size class of a message (< 1 KB, 1–16 KB, 16–256 KB, ≥ 256 KB): rows held out together by leave-one-size-decade-out. */
export function sizeDecade(bytes: number): string {
  if (bytes < 1024) return '<1 KB'
  if (bytes < 16 * 1024) return '1–16 KB'
  if (bytes < 256 * 1024) return '16–256 KB'
  return '≥256 KB'
}

export interface CalibrationOptions {
  leaveOneOut?: boolean
  leaveOneRankCountOut?: boolean
  leaveOneSizeDecadeOut?: boolean
  leaveOneDtypeOut?: boolean
  /**
   * Overlap exponents to choose from (platforms with kernel structure); default OVERLAP_EXPONENTS. null keeps the
   * table's exponent (absent: 1, additive). Held-out fits choose again on their own rows.
   */
  overlapExponents?: readonly number[] | null
  /**
   * Fit only these parameters; every other one the rows use keeps the table's value (listed as held). Absent: fit
   * every parameter the rows identify. Empty: fit nothing (the table's prediction, no held-out residuals).
   */
  fitOnly?: readonly FitParam[]
  /**
   * Rows in NCCL's cost form: the constants to fit (of NCCL_FITTABLE). Absent: all of NCCL_FITTABLE, or none when
   * fitOnly is empty.
   */
  ncclFitOnly?: readonly NcclConstantName[]
}

/** Fit on the rows whose key differs from each key in turn, predict the rows of that key. */
function holdOutByKey<K extends string | number>(
  rows: CalibrationRow[],
  terms: ModelTerms[],
  prior: ParamValues,
  exponents: readonly number[] | null,
  fitOnly: readonly FitParam[] | undefined,
  keyOf: (r: CalibrationRow) => K,
  record: (i: number, e: number) => void,
): { key: K; summary: ResidualSummary }[] {
  const keys = [...new Set(rows.map(keyOf))]
  return keys.map((key) => {
    const train = rows.map((_, i) => i).filter((i) => keyOf(rows[i]) !== key)
    const p = fitWithExponent(
      train.map((i) => rows[i]),
      train.map((i) => terms[i]),
      prior,
      exponents,
      undefined,
      fitOnly,
    ).params
    const errors: number[] = []
    rows.forEach((r, i) => {
      if (keyOf(r) !== key) return
      const e = (predictRow(terms[i], p) - r.measuredUs) / r.measuredUs
      record(i, e)
      errors.push(e)
    })
    return { key, summary: summarize(errors) }
  })
}

function calibrateStructure(
  platformName: string,
  platform: PlatformConstants,
  rows: CalibrationRow[],
  algorithms: AlgorithmTable,
  options: CalibrationOptions = {},
): CalibrationResult {
  // rows is non-empty: calibratePlatform checks, and passes only non-empty subsets
  const prior = paramsFromPlatform(platform)
  const terms = rows.map((r) => rowTerms(r, algorithms, platform))
  const exponents = options.overlapExponents === undefined ? OVERLAP_EXPONENTS : options.overlapExponents
  const fitOnly = options.fitOnly
  const fit = fitWithExponent(rows, terms, prior, exponents, undefined, fitOnly)
  // nothing fitted: the residuals are the table's, and a held-out fit would repeat them
  const holdOut = fit.fitted.length > 0
  const residuals: ResidualRow[] = rows.map((r, i) => {
    const predictedUs = predictRow(terms[i], fit.params)
    return { ...r, predictedUs, relError: (predictedUs - r.measuredUs) / r.measuredUs }
  })
  let leaveOneOut: ResidualSummary | undefined
  if (holdOut && (options.leaveOneOut ?? true) && rows.length > fit.fitted.length + 1) {
    // exponent kept at the full fit's; Gauss–Newton started from the full fit
    const fixed = { ...prior, overlapExponent: fit.overlapExponent }
    const errors: number[] = []
    rows.forEach((r, i) => {
      const keep = (_: unknown, k: number) => k !== i
      const p = fitParams(rows.filter(keep), terms.filter(keep), fixed, fit.overlapExponent, fit.params, fitOnly).params
      const e = (predictRow(terms[i], p) - r.measuredUs) / r.measuredUs
      residuals[i].looRelError = e
      errors.push(e)
    })
    leaveOneOut = summarize(errors)
  }
  let leaveOneRankCountOut: CalibrationResult['leaveOneRankCountOut']
  const rankCounts = new Set(rows.map((r) => r.ranks))
  if (holdOut && (options.leaveOneRankCountOut ?? true) && rankCounts.size >= 3) {
    const byKey = holdOutByKey(
      rows,
      terms,
      prior,
      exponents,
      fitOnly,
      (r) => r.ranks,
      (i, e) => {
        residuals[i].lorcoRelError = e
      },
    )
    leaveOneRankCountOut = {
      all: summarize(residuals.map((r) => r.lorcoRelError as number)),
      byRanks: byKey.map((b) => ({ ranks: b.key, summary: b.summary })).sort((x, y) => x.ranks - y.ranks),
    }
  }
  let leaveOneSizeDecadeOut: CalibrationResult['leaveOneSizeDecadeOut']
  const decades = new Set(rows.map((r) => sizeDecade(r.bytes)))
  if (holdOut && (options.leaveOneSizeDecadeOut ?? true) && decades.size >= 3) {
    const byKey = holdOutByKey(
      rows,
      terms,
      prior,
      exponents,
      fitOnly,
      (r) => sizeDecade(r.bytes),
      (i, e) => {
        residuals[i].losdoRelError = e
      },
    )
    leaveOneSizeDecadeOut = {
      all: summarize(residuals.map((r) => r.losdoRelError as number)),
      byDecade: byKey.map((b) => ({ decade: b.key, summary: b.summary })),
    }
  }
  let leaveOneDtypeOut: CalibrationResult['leaveOneDtypeOut']
  const dtypeOf = (r: CalibrationRow): string => r.dtype ?? 'bf16'
  if (holdOut && (options.leaveOneDtypeOut ?? true) && new Set(rows.map(dtypeOf)).size >= 2) {
    const byKey = holdOutByKey(rows, terms, prior, exponents, fitOnly, dtypeOf, (i, e) => {
      residuals[i].lodtoRelError = e
    })
    leaveOneDtypeOut = {
      all: summarize(residuals.map((r) => r.lodtoRelError as number)),
      byDtype: byKey.map((b) => ({ dtype: b.key, summary: b.summary })),
    }
  }
  return {
    platform: platformName,
    params: fit.params,
    overlapExponent: fit.overlapExponent,
    overlapExponentScan: fit.scan,
    fitted: fit.fitted,
    notIdentified: fit.notIdentified,
    held: fit.held,
    residuals,
    inSample: summarize(residuals.map((r) => r.relError)),
    leaveOneOut,
    leaveOneRankCountOut,
    leaveOneSizeDecadeOut,
    leaveOneDtypeOut,
  }
}

/**
 * Fits a platform's constants to measured rows and reports the residuals. Rows of an algorithm priced in NCCL's
 * cost form (`tuner: 'nccl'`), on a platform whose `nccl` block is complete, are fitted in that form
 * (nccl-calibrate.ts); every other row in the latency model's form. The summaries cover both.
 */
export function calibratePlatform(
  platformName: string,
  platform: PlatformConstants,
  rows: CalibrationRow[],
  algorithms: AlgorithmTable,
  options: CalibrationOptions = {},
): CalibrationResult {
  if (rows.length === 0) throw new LlcommError('INVALID_ARGUMENT', `no usable rows to calibrate ${platformName}`)
  const table = ncclConstantsFrom(platform.nccl)
  const inTunerForm = (r: CalibrationRow) => table !== null && getAlgorithm(algorithms, r.algorithm).tuner === 'nccl'
  const tunerIndex = rows.map((_, i) => i).filter((i) => inTunerForm(rows[i]))
  if (table === null || tunerIndex.length === 0)
    return calibrateStructure(platformName, platform, rows, algorithms, options)
  const otherIndex = rows.map((_, i) => i).filter((i) => !inTunerForm(rows[i]))
  const structure =
    otherIndex.length > 0
      ? calibrateStructure(
          platformName,
          platform,
          otherIndex.map((i) => rows[i]),
          algorithms,
          options,
        )
      : undefined
  const free =
    options.ncclFitOnly ?? (options.fitOnly !== undefined && options.fitOnly.length === 0 ? [] : NCCL_FITTABLE)
  const tuner = calibrateTunerRows(
    tunerIndex.map((i) => rows[i]),
    table,
    free,
    options,
  )
  const residuals: ResidualRow[] = new Array(rows.length)
  tunerIndex.forEach((i, k) => {
    residuals[i] = tuner.residuals[k]
  })
  otherIndex.forEach((i, k) => {
    residuals[i] = (structure as CalibrationResult).residuals[k]
  })
  const prior = paramsFromPlatform(platform)
  return {
    platform: platformName,
    params: structure?.params ?? prior,
    overlapExponent: structure?.overlapExponent ?? prior.overlapExponent ?? null,
    overlapExponentScan: structure?.overlapExponentScan,
    fitted: structure?.fitted ?? [],
    notIdentified: structure?.notIdentified ?? [],
    held: structure?.held ?? [],
    residuals,
    ...summariesOf(residuals),
    nccl: {
      rows: tunerIndex.length,
      constants: tuner.fit.constants,
      fitted: tuner.fit.fitted,
      notIdentified: tuner.fit.notIdentified,
      held: NCCL_FITTABLE.filter((n) => !free.includes(n)),
    },
  }
}

/** The in-sample and held-out summaries of residual rows (each held-out one over the rows that have it). */
function summariesOf(
  residuals: ResidualRow[],
): Pick<
  CalibrationResult,
  'inSample' | 'leaveOneOut' | 'leaveOneRankCountOut' | 'leaveOneSizeDecadeOut' | 'leaveOneDtypeOut'
> {
  const grouped = <K extends string | number>(
    get: (r: ResidualRow) => number | undefined,
    keyOf: (r: ResidualRow) => K,
  ) => {
    const have = residuals.filter((r) => get(r) !== undefined)
    if (have.length === 0) return undefined
    const keys = [...new Set(have.map(keyOf))]
    return {
      all: summarize(have.map((r) => get(r) as number)),
      byKey: keys.map((key) => ({
        key,
        summary: summarize(have.filter((r) => keyOf(r) === key).map((r) => get(r) as number)),
      })),
    }
  }
  const loo = residuals.filter((r) => r.looRelError !== undefined).map((r) => r.looRelError as number)
  const ranks = grouped(
    (r) => r.lorcoRelError,
    (r) => r.ranks,
  )
  const decades = grouped(
    (r) => r.losdoRelError,
    (r) => sizeDecade(r.bytes),
  )
  const dtypes = grouped(
    (r) => r.lodtoRelError,
    (r) => r.dtype ?? 'bf16',
  )
  return {
    inSample: summarize(residuals.map((r) => r.relError)),
    leaveOneOut: loo.length ? summarize(loo) : undefined,
    leaveOneRankCountOut: ranks && {
      all: ranks.all,
      byRanks: ranks.byKey.map((b) => ({ ranks: b.key, summary: b.summary })).sort((x, y) => x.ranks - y.ranks),
    },
    leaveOneSizeDecadeOut: decades && {
      all: decades.all,
      byDecade: decades.byKey.map((b) => ({ decade: b.key, summary: b.summary })),
    },
    leaveOneDtypeOut: dtypes && {
      all: dtypes.all,
      byDtype: dtypes.byKey.map((b) => ({ dtype: b.key, summary: b.summary })),
    },
  }
}

/**
 * Rows in NCCL's cost form: the fit (prior: the table), its residuals, and held-out fits (prior: the table with
 * the fittable bases at NCCL's published values, see heldOutPrior) leaving out one row, one rank count (three or
 * more), one size decade (three or more) or one element type (two or more).
 */
function calibrateTunerRows(
  rows: CalibrationRow[],
  table: NcclConstants,
  free: readonly NcclConstantName[],
  options: CalibrationOptions,
): { fit: NcclFit; residuals: ResidualRow[] } {
  const fit = fitNccl(rows, table, free)
  const residuals: ResidualRow[] = rows.map((r) => {
    const p = predictNccl(fit.constants, r.ranks, r.bytes)
    return {
      ...r,
      predictedUs: p.latencyUs,
      relError: p.latencyUs / r.measuredUs - 1,
      choice: candidateLabel(p.chosen),
    }
  })
  if (fit.fitted.length === 0) return { fit, residuals }
  const heldPrior = heldOutPrior(table)
  const holdOut = <K>(keyOf: (r: CalibrationRow, i: number) => K, set: (r: ResidualRow, e: number) => void) => {
    const keys = [...new Set(rows.map(keyOf))]
    for (const key of keys) {
      const train = rows.filter((r, i) => keyOf(r, i) !== key)
      if (train.length === 0) continue
      const k = fitNccl(train, heldPrior, free).constants
      rows.forEach((r, i) => {
        if (keyOf(r, i) === key) set(residuals[i], predictNccl(k, r.ranks, r.bytes).latencyUs / r.measuredUs - 1)
      })
    }
  }
  if ((options.leaveOneOut ?? true) && rows.length > fit.fitted.length + 1)
    holdOut(
      (_, i) => i,
      (r, e) => {
        r.looRelError = e
      },
    )
  if ((options.leaveOneRankCountOut ?? true) && new Set(rows.map((r) => r.ranks)).size >= 3)
    holdOut(
      (r) => r.ranks,
      (r, e) => {
        r.lorcoRelError = e
      },
    )
  if ((options.leaveOneSizeDecadeOut ?? true) && new Set(rows.map((r) => sizeDecade(r.bytes))).size >= 3)
    holdOut(
      (r) => sizeDecade(r.bytes),
      (r, e) => {
        r.losdoRelError = e
      },
    )
  if ((options.leaveOneDtypeOut ?? true) && new Set(rows.map((r) => r.dtype ?? 'bf16')).size >= 2)
    holdOut(
      (r) => r.dtype ?? 'bf16',
      (r, e) => {
        r.lodtoRelError = e
      },
    )
  return { fit, residuals }
}

/**
 * Groups a bench file's usable rows by platform; rows of algorithms the model lacks are counted apart. Each cuda row
 * is counted at the buffer it ran with (rowBufferBytes: the file's bufferBytes, 1 MiB for a file without one).
 * `counting`: the rest of how the file's launches are counted (the caller knows the build it measured: block targets,
 * all-gather kernel, accumulation, twoshot-sentinel broadcast); absent fields, the model's own.
 */
export function calibrationRowsByPlatform(
  file: BenchFile,
  algorithms: AlgorithmTable,
  counting?: LaunchCounting,
): { groups: Map<string, CalibrationRow[]>; skipped: { row: MeasuredRow; reason: string }[] } {
  const groups = new Map<string, CalibrationRow[]>()
  const skipped: { row: MeasuredRow; reason: string }[] = []
  for (const row of file.rows) {
    if (!usableForCalibration(row)) {
      skipped.push({ row, reason: row.wrong !== 0 ? 'wrong results' : 'arrival skew' })
      continue
    }
    if (!algorithms.algorithms[row.algorithm]) {
      skipped.push({ row, reason: `algorithm ${row.algorithm} not in the model` })
      continue
    }
    if (row.ranks < 2) {
      skipped.push({ row, reason: 'fewer than 2 ranks' })
      continue
    }
    const key = rowPlatform(file, row)
    const list = groups.get(key) ?? []
    list.push({
      algorithm: row.algorithm,
      ranks: row.ranks,
      bytes: row.bytes,
      measuredUs: row.medianUs,
      dtype: DTYPES.includes(row.dtype as Dtype) ? (row.dtype as Dtype) : undefined,
      ...(counting || row.backend === 'cuda'
        ? { counting: { ...counting, ...(row.backend === 'cuda' ? { bufferBytes: rowBufferBytes(row) } : {}) } }
        : {}),
    })
    groups.set(key, list)
  }
  return { groups, skipped }
}

/** A platform entry for `name`, from the table or, for a machine the table lacks, one with every constant absent. */
export function platformForCalibration(
  table: PlatformTable,
  name: string,
  topology: PlatformConstants['topology'],
): PlatformConstants {
  const known = table.platforms[name]
  if (known) return known
  const absent: SourcedValue = { value: null, source: 'absent: not in the platform table' }
  const constants = Object.fromEntries(CONSTANT_NAMES.map((c) => [c, { ...absent }])) as PlatformConstants['constants']
  return { description: `${name} (from bench results)`, topology, nvlinkDomainGpus: 72, constants }
}

/** Writes fitted parameters back into a platform entry (in place), naming the calibration file as their source. */
export function applyCalibration(platform: PlatformConstants, result: CalibrationResult, sourceFile: string): void {
  const c = platform.constants
  const src = (p: string) =>
    `calibrated: fit to ${sourceFile} (${result.inSample.rows} rows, rms relative error ${(result.inSample.rmsRelError * 100).toFixed(1)}%; parameter ${p})`
  const set = (name: keyof PlatformConstants['constants'], value: number | null, p: string) => {
    if (value !== null) c[name] = { value, source: src(p) }
  }
  const rates: Partial<Record<FitParam, keyof PlatformConstants['constants']>> = {
    usPerWireByte: 'linkGBs',
    usPerAtomicByte: 'atomicGBs',
    usPerRearmByte: 'rearmGBs',
    usPerBlockByte: 'blockGBs',
    usPerMemoryByte: 'memoryGBs',
  }
  for (const p of result.fitted) {
    const v = result.params[p] ?? null
    const rate = rates[p]
    if (rate === undefined) set(p as keyof PlatformConstants['constants'], v, p)
    else if (v !== null && v > 0) set(rate, 1 / (v * 1e3), p)
    else if (v === 0)
      c[rate] = { value: null, unbounded: true, source: `${src(p)}: fitted to 0 µs per byte, no limit seen` }
  }
  // NCCL's cost form: the constants its rows determined
  if (result.nccl && platform.nccl)
    for (const n of result.nccl.fitted)
      platform.nccl[n] = {
        value: result.nccl.constants[n],
        source: `calibrated: NCCL's cost form fitted to ${sourceFile} (${result.nccl.rows} rows; the minimum over candidates, see src/model/nccl-calibrate.ts; constant ${n})`,
      }
  // only an exponent the fit chose (a scan); one held at the table's keeps its source
  if (result.overlapExponent !== null && result.overlapExponentScan && platform.structure === 'kernel')
    c.overlapExponent = {
      value: result.overlapExponent,
      source: `${src('overlapExponent')}: of ${OVERLAP_EXPONENTS.join(', ')}, the least squared relative error`,
    }
}
