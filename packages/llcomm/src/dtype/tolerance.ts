/**
 * How far an AllReduce result may be from the float64 sum of the same inputs: the N-term sum is accumulated in
 * f32 (any order: the error bound of recursive summation, gamma_{N-1} * sum|x_i| with unit roundoff u = 2^-24,
 * plus one subnormal spacing per add for gradual underflow), then rounded once to the dtype (half an ulp of the
 * result: u_dtype * |ref|, or half the smallest subnormal near zero).
 */
import type { Dtype } from '../api/types.js'

const U32 = 2 ** -24
const DTYPE_ROUNDOFF: Readonly<Record<Dtype, number>> = { f32: 0, f16: 2 ** -11, bf16: 2 ** -8 }
/** Largest finite value per dtype; f32 bounds the partial sums. */
const DTYPE_MAX_FINITE: Readonly<Record<Dtype, number>> = {
  f32: 3.4028234663852886e38,
  f16: 65504,
  bf16: 3.3895313892515355e38,
}
/** Half of the dtype's smallest subnormal. */
const DTYPE_HALF_SUBNORMAL: Readonly<Record<Dtype, number>> = { f32: 2 ** -150, f16: 2 ** -25, bf16: 2 ** -134 }

export function allReduceTolerance(dtype: Dtype, ranks: number, sumAbs: number, refAbs: number): number {
  const terms = Math.max(0, ranks - 1)
  const gamma = (terms * U32) / (1 - terms * U32)
  const accumulation = gamma * sumAbs + terms * 2 ** -149
  const final = DTYPE_ROUNDOFF[dtype] * (refAbs + accumulation) + DTYPE_HALF_SUBNORMAL[dtype]
  return accumulation + final
}

/**
 * Whether `got` is an acceptable result for a float64 reference sum `ref` (with sum of |x_i| `sumAbs`):
 * NaN exactly where the reference is NaN, the same infinity where it is infinite, within tolerance elsewhere.
 */
export function isAcceptableSum(dtype: Dtype, ranks: number, got: number, ref: number, sumAbs: number): boolean {
  if (Number.isNaN(ref)) return Number.isNaN(got)
  if (!Number.isFinite(ref)) return got === ref
  if (!Number.isFinite(got)) {
    // Overflow is right, not wrong: partial f32 sums can pass the f32 range when sum|x_i| does (then Inf or
    // Inf - Inf = NaN depend on the order), and a result near the dtype's range may round to ±Inf.
    if (sumAbs >= DTYPE_MAX_FINITE.f32) return true
    const tol = allReduceTolerance(dtype, ranks, sumAbs, Math.abs(ref))
    return got === Math.sign(ref) * Infinity && Math.abs(ref) + tol >= DTYPE_MAX_FINITE[dtype]
  }
  return Math.abs(got - ref) <= allReduceTolerance(dtype, ranks, sumAbs, Math.abs(ref))
}
