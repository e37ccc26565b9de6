/**
 * Fitting NCCL's cost form (nccl-model.ts) to measured rows. The minimum over candidates is not linear in the
 * constants, but it is once every row is assigned the candidate that prices it: then each row is
 *   measured ≈ base_c + steps · step_c + wireBytes / (efficiency · f_alg) · (1 / busBandwidth)
 * and the bases of the assigned candidates with the shared 1/busBandwidth are one NNLS solve on relative residuals
 * (per-step latencies, protocol efficiencies and the tree factor are priors: known terms on the right-hand side).
 *
 * The assignment is searched: every split of the sorted message sizes into LL, LL128 and Simple ranges of the ring
 * (the order NCCL's candidates take as the size grows: bases rise, rates rise), each refined by reassigning every row
 * to the candidate the fitted minimum picks and refitting until nothing moves (or a round limit: at a crossover a
 * row can move back and forth). Every fit met on the way is scored by the minimum itself, not by the assignment it
 * was fitted with, and the one with the least squared relative error is kept. Only ring bases are fitted (at two
 * ranks ring and tree take the same number of steps, and the tree's bandwidth is lower: its bases cannot be told
 * apart from the ring's); a ring base assigned rows of fewer than two sizes keeps its prior.
 */

import { LlcommError } from 'llcomm/internal'
import {
  baseName,
  efficiencyName,
  NCCL_CANDIDATES,
  NCCL_PROTOCOLS,
  NCCL_PUBLISHED_NVLINK,
  type NcclBaseName,
  type NcclCandidate,
  type NcclConstantName,
  type NcclConstants,
  ncclLeast,
  ncclSteps,
  ncclWireBytes,
  stepName,
} from './nccl-model.js'
import { nonNegativeLeastSquares } from './nnls.js'

export interface NcclRow {
  ranks: number
  bytes: number
  measuredUs: number
}

/** The constants a fit may move: the ring's bases (one per protocol) and the shared bus bandwidth. */
export const NCCL_FITTABLE: readonly NcclConstantName[] = [
  ...NCCL_PROTOCOLS.map((p) => baseName({ algorithm: 'ring', protocol: p })),
  'busGBs',
]

export interface NcclFit {
  constants: NcclConstants
  /** Constants the rows determined (a subset of the ones asked for). */
  fitted: NcclConstantName[]
  /** Constants asked for that no row determined: they keep the prior. */
  notIdentified: NcclConstantName[]
  /** Sum of squared relative errors of the minimum over the rows. */
  cost: number
}

/** Distinct message sizes a candidate needs among its assigned rows for its base to be fitted. */
const MIN_SIZES_PER_BASE = 2

/** Refinement rounds (reassign to the minimum, refit) per starting split. */
const MAX_REASSIGNMENTS = 20

function relativeCost(rows: NcclRow[], k: NcclConstants): number {
  return rows.reduce((s, r) => {
    const e = ncclLeast(k, r.ranks, r.bytes).latencyUs / r.measuredUs - 1
    return s + e * e
  }, 0)
}

const sameCandidate = (a: NcclCandidate, b: NcclCandidate) => a.algorithm === b.algorithm && a.protocol === b.protocol

/**
 * One NNLS solve for a fixed assignment: the free bases of assigned candidates and 1/busBandwidth (if free), the
 * rest at `prior`. Returns the constants and which of the free ones the rows determined.
 */
function fitAssigned(
  rows: NcclRow[],
  assigned: NcclCandidate[],
  prior: NcclConstants,
  free: readonly NcclConstantName[],
): { constants: NcclConstants; determined: NcclConstantName[] } {
  // a base is fitted where its candidate has rows of two sizes or more (one size it would only interpolate)
  const sizesOf = (c: NcclCandidate) =>
    new Set(rows.filter((_, i) => sameCandidate(assigned[i], c)).map((r) => r.bytes))
  const bases = NCCL_CANDIDATES.filter((c) => free.includes(baseName(c)) && sizesOf(c).size >= MIN_SIZES_PER_BASE).map(
    baseName,
  )
  const bandwidthFree = free.includes('busGBs') && rows.some((r) => r.bytes > 0)
  const columns: (NcclBaseName | 'usPerBusByte')[] = [...bases, ...(bandwidthFree ? ['usPerBusByte' as const] : [])]
  const design: number[][] = []
  const rhs: number[] = []
  rows.forEach((r, i) => {
    const c = assigned[i]
    const known = ncclSteps(c.algorithm, r.ranks) * prior[stepName(c)]
    // bytes per (GB/s · 10³) at an efficiency of 1: the bus bandwidth's column
    const busBytes =
      ncclWireBytes(c.algorithm, r.ranks, r.bytes) /
      (prior[efficiencyName(c.protocol)] * (c.algorithm === 'tree' ? prior.treeBandwidthFactor : 1))
    let rest = known
    if (!bases.includes(baseName(c))) rest += prior[baseName(c)]
    if (!bandwidthFree) rest += busBytes / (prior.busGBs * 1e3)
    design.push(columns.map((col) => (col === 'usPerBusByte' ? busBytes : col === baseName(c) ? 1 : 0) / r.measuredUs))
    rhs.push(1 - rest / r.measuredUs)
  })
  const constants = { ...prior }
  const determined: NcclConstantName[] = []
  if (columns.length > 0) {
    const x = nonNegativeLeastSquares(design, rhs)
    columns.forEach((col, j) => {
      if (col === 'usPerBusByte') {
        // a rate fitted to 0 µs per byte would be unbounded: keep the prior instead
        if (x[j] > 0) {
          constants.busGBs = 1 / (x[j] * 1e3)
          determined.push('busGBs')
        }
      } else {
        constants[col] = x[j]
        determined.push(col)
      }
    })
  }
  return { constants, determined }
}

/**
 * Fits NCCL's form to rows (see the file comment). `free`: the constants to fit (default NCCL_FITTABLE; only
 * those in NCCL_FITTABLE can be fitted); every other one is taken from `prior`.
 */
export function fitNccl(
  rows: NcclRow[],
  prior: NcclConstants,
  free: readonly NcclConstantName[] = NCCL_FITTABLE,
): NcclFit {
  if (rows.length === 0) throw new LlcommError('INVALID_ARGUMENT', 'no rows to fit NCCL’s cost form to')
  const unknown = free.filter((n) => !NCCL_FITTABLE.includes(n))
  if (unknown.length)
    throw new LlcommError(
      'INVALID_ARGUMENT',
      `NCCL constants ${unknown.join(', ')} cannot be fitted (fittable: ${NCCL_FITTABLE.join(', ')})`,
    )
  if (free.length === 0)
    return { constants: { ...prior }, fitted: [], notIdentified: [], cost: relativeCost(rows, prior) }
  const sizes = [...new Set(rows.map((r) => r.bytes))].sort((a, b) => a - b)
  // candidates by identity (the assignment's key is their index in NCCL_CANDIDATES)
  const ring = (protocol: NcclCandidate['protocol']): NcclCandidate =>
    NCCL_CANDIDATES.find((c) => c.algorithm === 'ring' && c.protocol === protocol) as NcclCandidate
  let best: { constants: NcclConstants; determined: NcclConstantName[]; cost: number } | undefined
  const seen = new Set<string>()
  // Splits from the most LL rows down, and a later fit replaces the best only when clearly better: with one
  // protocol's rows the bus bandwidth absorbs the efficiency, every protocol fits alike, and LL (NCCL's
  // small-message protocol) is kept.
  for (let cut1 = sizes.length; cut1 >= 0; cut1--) {
    for (let cut2 = sizes.length; cut2 >= cut1; cut2--) {
      let assigned = rows.map((r) => {
        const i = sizes.indexOf(r.bytes)
        return ring(i < cut1 ? 'LL' : i < cut2 ? 'LL128' : 'Simple')
      })
      for (let round = 0; round < MAX_REASSIGNMENTS; round++) {
        // an assignment met before (from another split, or earlier in this chain) leads where it led then
        const key = assigned.map((c) => NCCL_CANDIDATES.indexOf(c)).join(',')
        if (seen.has(key)) break
        seen.add(key)
        const fit = fitAssigned(rows, assigned, prior, free)
        const cost = relativeCost(rows, fit.constants)
        if (!best || cost < best.cost * (1 - 1e-9) - 1e-12) best = { ...fit, cost }
        const next = rows.map((r) => NCCL_CANDIDATES[ncclLeast(fit.constants, r.ranks, r.bytes).index])
        if (next.every((c, i) => sameCandidate(c, assigned[i]))) break
        assigned = next
      }
    }
  }
  const b = best as NonNullable<typeof best>
  return {
    constants: b.constants,
    fitted: free.filter((n) => b.determined.includes(n)),
    notIdentified: free.filter((n) => !b.determined.includes(n)),
    cost: b.cost,
  }
}

/**
 * The prior of a held-out fit: the table's constants with every fittable base back at NCCL's published value, so
 * that a base the training rows cannot determine does not carry the full fit's value into the held-out rows.
 */
export function heldOutPrior(table: NcclConstants): NcclConstants {
  const out = { ...table }
  for (const p of NCCL_PROTOCOLS) {
    const name = baseName({ algorithm: 'ring', protocol: p })
    out[name] = NCCL_PUBLISHED_NVLINK[name]
  }
  return out
}
