/**
 * Non-negative least squares (Lawson & Hanson's active-set method) for the small, dense systems of the latency
 * fit (a few hundred rows, under ten columns). Columns are scaled to unit norm first, because the bandwidth
 * column counts bytes (10^6) while the others count hops (10^0).
 */
import { LlcommError } from 'llcomm/internal'

/** Solves the square system M x = v by Gaussian elimination with partial pivoting; null when singular. */
export function solveLinearSystem(matrix: number[][], rhs: number[]): number[] | null {
  const n = rhs.length
  const a = matrix.map((row, i) => [...row, rhs[i]])
  for (let col = 0; col < n; col++) {
    let pivot = col
    for (let r = col + 1; r < n; r++) if (Math.abs(a[r][col]) > Math.abs(a[pivot][col])) pivot = r
    if (Math.abs(a[pivot][col]) < 1e-12) return null
    ;[a[col], a[pivot]] = [a[pivot], a[col]]
    for (let r = 0; r < n; r++) {
      if (r === col) continue
      const f = a[r][col] / a[col][col]
      if (f === 0) continue
      for (let k = col; k <= n; k++) a[r][k] -= f * a[col][k]
    }
  }
  return a.map((row, i) => row[n] / row[i])
}

function leastSquaresOnColumns(a: number[][], b: number[], cols: number[]): number[] | null {
  const k = cols.length
  const ata = Array.from({ length: k }, () => new Array<number>(k).fill(0))
  const atb = new Array<number>(k).fill(0)
  for (let i = 0; i < a.length; i++) {
    for (let p = 0; p < k; p++) {
      const ap = a[i][cols[p]]
      atb[p] += ap * b[i]
      for (let q = 0; q < k; q++) ata[p][q] += ap * a[i][cols[q]]
    }
  }
  return solveLinearSystem(ata, atb)
}

export function nonNegativeLeastSquares(a: number[][], b: number[], maxIterations = 200): number[] {
  const m = a.length
  const n = m > 0 ? a[0].length : 0
  if (m === 0 || n === 0)
    throw new LlcommError('INVALID_ARGUMENT', 'least squares needs at least one row and one column')
  const norms = Array.from({ length: n }, (_, j) => Math.sqrt(a.reduce((s, row) => s + row[j] * row[j], 0)) || 1)
  const scaled = a.map((row) => row.map((v, j) => v / norms[j]))
  const x = new Array<number>(n).fill(0)
  const passive = new Set<number>()
  const tol = 1e-12 * Math.max(1, Math.sqrt(b.reduce((s, v) => s + v * v, 0)))
  for (let iter = 0; iter < maxIterations; iter++) {
    const residual = b.map((bi, i) => bi - scaled[i].reduce((s, v, j) => s + v * x[j], 0))
    const gradient = Array.from({ length: n }, (_, j) => scaled.reduce((s, row, i) => s + row[j] * residual[i], 0))
    let best = -1
    for (let j = 0; j < n; j++)
      if (!passive.has(j) && gradient[j] > tol && (best < 0 || gradient[j] > gradient[best])) best = j
    if (best < 0) break
    passive.add(best)
    for (let inner = 0; inner < maxIterations; inner++) {
      const cols = [...passive].sort((p, q) => p - q)
      const s = leastSquaresOnColumns(scaled, b, cols)
      if (s === null) {
        // a column dependent on the others: drop the one just added and stop growing the set
        passive.delete(best)
        break
      }
      const z = new Array<number>(n).fill(0)
      cols.forEach((c, i) => {
        z[c] = s[i]
      })
      if (cols.every((c) => z[c] > 0)) {
        for (let j = 0; j < n; j++) x[j] = z[j]
        break
      }
      let alpha = Number.POSITIVE_INFINITY
      for (const c of cols) if (z[c] <= 0) alpha = Math.min(alpha, x[c] / (x[c] - z[c]))
      for (let j = 0; j < n; j++) x[j] += alpha * (z[j] - x[j])
      for (const c of cols)
        if (x[c] <= 1e-15) {
          x[c] = 0
          passive.delete(c)
        }
    }
  }
  return x.map((v, j) => v / norms[j])
}

/**
 * Indices of columns that are linearly independent of the columns before them (Gram–Schmidt on unit columns):
 * the ones a fit can determine. A column of zeros, or one that repeats a combination of earlier ones, is left out.
 */
export function independentColumns(a: number[][], candidates: number[], relTol = 1e-7): number[] {
  const basis: number[][] = []
  const chosen: number[] = []
  for (const j of candidates) {
    let v = a.map((row) => row[j])
    const norm = Math.sqrt(v.reduce((s, x) => s + x * x, 0))
    if (norm === 0) continue
    v = v.map((x) => x / norm)
    for (const u of basis) {
      const dot = u.reduce((s, x, i) => s + x * v[i], 0)
      v = v.map((x, i) => x - dot * u[i])
    }
    const rest = Math.sqrt(v.reduce((s, x) => s + x * x, 0))
    if (rest < relTol) continue
    basis.push(v.map((x) => x / rest))
    chosen.push(j)
  }
  return chosen
}
