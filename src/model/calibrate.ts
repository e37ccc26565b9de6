/**
 * Calibration: fits a platform's latency constants to measured bench rows by non-negative least squares on
 * relative residuals ((predicted − measured) / measured, so that 3 µs and 3 ms rows weigh alike), then reports
 * the residuals in-sample and leave-one-out. Constants the rows cannot determine (a column of zeros, or one
 * collinear with earlier ones, e.g. barrier terms when no barrier algorithm was measured) keep the table's value
 * and are listed as not identified.
 */

import type { Dtype } from '../api/types.js'
import { LlcommError } from '../errors.js'
import { type BenchFile, type MeasuredRow, rowPlatform, usableForCalibration } from './bench-results.js'
import {
  FIT_PARAMS,
  type FitParam,
  modelFeatures,
  type ParamValues,
  paramsFromPlatform,
  predictFromParams,
} from './latency-model.js'
import type { AlgorithmTable, PlatformConstants, PlatformTable, SourcedValue } from './latency-tables.js'
import { CONSTANT_NAMES, getAlgorithm } from './latency-tables.js'
import { independentColumns, nonNegativeLeastSquares } from './nnls.js'

export interface CalibrationRow {
  algorithm: string
  ranks: number
  bytes: number
  measuredUs: number
  /** Element type of the measured call (launch shapes depend on it slightly); default bf16. */
  dtype?: Dtype
}

export interface ResidualRow extends CalibrationRow {
  predictedUs: number
  /** (predicted − measured) / measured */
  relError: number
  /** Same, with this row left out of the fit (absent when too few rows remain). */
  looRelError?: number
  /** Same, with every row of this rank count left out of the fit (the test of how the model scales in N). */
  lorcoRelError?: number
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
  residuals: ResidualRow[]
  inSample: ResidualSummary
  leaveOneOut?: ResidualSummary
  /** Fit on all rank counts but one, predict that one; per held-out rank count and over all rows. */
  leaveOneRankCountOut?: { all: ResidualSummary; byRanks: { ranks: number; summary: ResidualSummary }[] }
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
}

function fitParams(
  rows: CalibrationRow[],
  algorithms: AlgorithmTable,
  platform: PlatformConstants,
  prior: ParamValues,
): FitOutcome {
  const features = rows.map((r) =>
    modelFeatures(getAlgorithm(algorithms, r.algorithm), r.ranks, r.bytes, platform.topology, {
      structure: platform.structure,
      dtype: r.dtype,
    }),
  )
  // Relative weighting: divide each row by its measurement.
  const design = features.map((f, i) => FIT_PARAMS.map((p) => f[p] / rows[i].measuredUs))
  const used = FIT_PARAMS.map((_, j) => j).filter((j) => design.some((row) => row[j] !== 0))
  const free = independentColumns(design, used)
  const notIdentified = used.filter((j) => !free.includes(j)).map((j) => FIT_PARAMS[j])
  // Columns held at the prior (or at 0 when the table has none) move to the right-hand side.
  const held = (j: number): number => prior[FIT_PARAMS[j]] ?? 0
  const rhs = design.map((row) => 1 - used.filter((j) => !free.includes(j)).reduce((s, j) => s + row[j] * held(j), 0))
  const params: ParamValues = { ...prior }
  if (free.length > 0) {
    const x = nonNegativeLeastSquares(
      design.map((row) => free.map((j) => row[j])),
      rhs,
    )
    free.forEach((j, k) => {
      params[FIT_PARAMS[j]] = x[k]
    })
  }
  for (const j of used) if (!free.includes(j) && params[FIT_PARAMS[j]] === null) params[FIT_PARAMS[j]] = 0
  return { params, fitted: free.map((j) => FIT_PARAMS[j]), notIdentified }
}

function predictRow(
  r: CalibrationRow,
  algorithms: AlgorithmTable,
  platform: PlatformConstants,
  params: ParamValues,
): number {
  return predictFromParams(
    modelFeatures(getAlgorithm(algorithms, r.algorithm), r.ranks, r.bytes, platform.topology, {
      structure: platform.structure,
      dtype: r.dtype,
    }),
    params,
  ).latencyUs
}

export function calibratePlatform(
  platformName: string,
  platform: PlatformConstants,
  rows: CalibrationRow[],
  algorithms: AlgorithmTable,
  options: { leaveOneOut?: boolean; leaveOneRankCountOut?: boolean } = {},
): CalibrationResult {
  if (rows.length === 0) throw new LlcommError('INVALID_ARGUMENT', `no usable rows to calibrate ${platformName}`)
  const prior = paramsFromPlatform(platform)
  const fit = fitParams(rows, algorithms, platform, prior)
  const residuals: ResidualRow[] = rows.map((r) => {
    const predictedUs = predictRow(r, algorithms, platform, fit.params)
    return { ...r, predictedUs, relError: (predictedUs - r.measuredUs) / r.measuredUs }
  })
  let leaveOneOut: ResidualSummary | undefined
  if ((options.leaveOneOut ?? true) && rows.length > fit.fitted.length + 1) {
    const errors: number[] = []
    rows.forEach((r, i) => {
      const rest = rows.filter((_, k) => k !== i)
      const p = fitParams(rest, algorithms, platform, prior).params
      const predicted = predictRow(r, algorithms, platform, p)
      residuals[i].looRelError = (predicted - r.measuredUs) / r.measuredUs
      errors.push(residuals[i].looRelError as number)
    })
    leaveOneOut = summarize(errors)
  }
  let leaveOneRankCountOut: CalibrationResult['leaveOneRankCountOut']
  const rankCounts = [...new Set(rows.map((r) => r.ranks))].sort((a, b) => a - b)
  if ((options.leaveOneRankCountOut ?? true) && rankCounts.length >= 3) {
    const byRanks = rankCounts.map((ranks) => {
      const p = fitParams(
        rows.filter((r) => r.ranks !== ranks),
        algorithms,
        platform,
        prior,
      ).params
      const errors: number[] = []
      rows.forEach((r, i) => {
        if (r.ranks !== ranks) return
        const e = (predictRow(r, algorithms, platform, p) - r.measuredUs) / r.measuredUs
        residuals[i].lorcoRelError = e
        errors.push(e)
      })
      return { ranks, summary: summarize(errors) }
    })
    leaveOneRankCountOut = { all: summarize(residuals.map((r) => r.lorcoRelError as number)), byRanks }
  }
  return {
    platform: platformName,
    params: fit.params,
    fitted: fit.fitted,
    notIdentified: fit.notIdentified,
    residuals,
    inSample: summarize(residuals.map((r) => r.relError)),
    leaveOneOut,
    leaveOneRankCountOut,
  }
}

/** Groups a bench file's usable rows by platform; rows of algorithms the model lacks are counted apart. */
export function calibrationRowsByPlatform(
  file: BenchFile,
  algorithms: AlgorithmTable,
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
  for (const p of result.fitted) {
    const v = result.params[p]
    if (p === 'usPerWireByte') set('linkGBs', v !== null && v > 0 ? 1 / (v * 1e3) : null, p)
    else if (p === 'usPerAtomicByte') set('atomicGBs', v !== null && v > 0 ? 1 / (v * 1e3) : null, p)
    else if (p === 'usPerRearmByte') set('rearmGBs', v !== null && v > 0 ? 1 / (v * 1e3) : null, p)
    else set(p, v, p)
  }
}
