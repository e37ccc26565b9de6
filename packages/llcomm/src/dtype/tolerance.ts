/**
 * The one numerics and tolerance module of both backends: how far an AllReduce result may be from the float64 sum
 * of the same inputs, per numeric model (what each algorithm's kernels and CPU code document), and the float64
 * reference itself. An element is right when it is within the error bound of its model; NaN must stay NaN and an
 * infinite sum must keep its sign. Bitwise agreement across ranks is checked separately (`ranksAgreeBitwise`).
 *
 * Numeric models:
 *   - one-shot, two-shot sentinel, one-shot barrier (and every CPU algorithm): f32 accumulation, one rounding to the
 *     dtype;
 *   - ring (cuda): f32 partial sums between hops, rounded once at the part's owner (f32 accumulation; another order
 *     than rank order); with the communicator option `accumulation: 'dtype'`, f16/bf16 partial sums rounded to the
 *     dtype at every hop (n-1 roundings in the dtype);
 *   - twoshot-atomic (cuda): red.add.f32 into f32 lines for every dtype, rounded once at the owner; red.add.f32
 *     flushes subnormal inputs and results to zero, which touches f32 and bf16 (whose subnormals are f32
 *     subnormals) but not f16 (every f16 value is a normal f32); with `accumulation: 'dtype'`, f16/bf16 add with
 *     packed 16-bit red.add.noftz (a rounding in the dtype per add, no flush);
 *   - nccl, nccl-symmetric: NCCL's reductions, rounded in the dtype per step.
 *
 * The bound: the n-term sum accumulated with unit roundoff `step` (2^-24 in f32 registers, the dtype's own when it
 * rounds per step) in any order, gamma_{n-1} * sum|x_i| (recursive summation), plus one subnormal spacing per add
 * for gradual underflow and the flush-to-zero allowance, then one rounding to the dtype (u_dtype * (|ref| + the
 * accumulation error), plus the dtype's smallest subnormal near zero); with a 1e-4 relative margin for the bound's
 * own evaluation.
 */
import type { Accumulation, AlgorithmName, Dtype, TensorArray } from '../api/types.js'
import { DTYPE_CODECS } from './codec.js'

/** Unit roundoff, smallest subnormal and largest finite value of each output dtype. */
const OUTPUT_ROUNDING: Readonly<Record<Dtype, { unitRoundoff: number; minSubnormal: number; maxFinite: number }>> = {
  f32: { unitRoundoff: 2 ** -24, minSubnormal: 2 ** -149, maxFinite: 3.4028234663852886e38 },
  f16: { unitRoundoff: 2 ** -11, minSubnormal: 2 ** -24, maxFinite: 65504 },
  bf16: { unitRoundoff: 2 ** -8, minSubnormal: 2 ** -133, maxFinite: 3.3895313892515355e38 },
}
const F32_MAX_FINITE = OUTPUT_ROUNDING.f32.maxFinite

export interface NumericModel {
  /** Precision of each of the n-1 partial-sum roundings: f32 registers, or the dtype itself. */
  stepRounding: 'f32' | 'dtype'
  /** Subnormal inputs and results may become zero (red.add.f32). */
  flushesSubnormals: boolean
}

export const F32_ACCUMULATION: NumericModel = { stepRounding: 'f32', flushesSubnormals: false }

/**
 * The numeric model of an algorithm for a dtype on the cuda backend (table above; the CPU's is F32_ACCUMULATION),
 * under the communicator's `accumulation` option (default 'f32').
 */
export function numericModel(algorithm: AlgorithmName, dtype: Dtype, accumulation: Accumulation = 'f32'): NumericModel {
  const sixteenBit = dtype !== 'f32' && accumulation === 'dtype'
  switch (algorithm) {
    case 'nccl':
    case 'nccl-symmetric':
      return { stepRounding: 'dtype', flushesSubnormals: false }
    case 'ring':
      return sixteenBit ? { stepRounding: 'dtype', flushesSubnormals: false } : F32_ACCUMULATION
    case 'twoshot-atomic':
      if (sixteenBit) return { stepRounding: 'dtype', flushesSubnormals: false }
      return { stepRounding: 'f32', flushesSubnormals: dtype !== 'f16' }
    default:
      return F32_ACCUMULATION
  }
}

/** The error bound of `model` for one element: `ranks` terms with Σ|x_i| = sumAbs summing to `refAbs` = |ref|. */
export function allReduceTolerance(
  dtype: Dtype,
  ranks: number,
  sumAbs: number,
  refAbs: number,
  model: NumericModel = F32_ACCUMULATION,
): number {
  const r = OUTPUT_ROUNDING[dtype]
  const terms = Math.max(0, ranks - 1)
  const step = model.stepRounding === 'f32' ? 2 ** -24 : r.unitRoundoff
  const gamma = (terms * step) / (1 - terms * step)
  const flush = model.flushesSubnormals ? ranks * 2 ** -126 : 0
  const accumulation = gamma * sumAbs + terms * 2 ** -149 + flush
  const final = r.unitRoundoff * (refAbs + accumulation) + r.minSubnormal
  return (accumulation + final) * 1.0001
}

/**
 * True when `got` is an acceptable result of the numeric model for a float64 reference `ref` whose inputs have
 * Σ|x_i| = `sumAbs`.
 */
export function elementRight(
  got: number,
  ref: number,
  sumAbs: number,
  nranks: number,
  dtype: Dtype,
  model: NumericModel = F32_ACCUMULATION,
): boolean {
  if (Number.isNaN(ref)) return Number.isNaN(got)
  if (!Number.isFinite(ref)) return got === ref
  const r = OUTPUT_ROUNDING[dtype]
  const tol = allReduceTolerance(dtype, nranks, sumAbs, Math.abs(ref), model)
  if (!Number.isFinite(got)) {
    // Overflow is right, not wrong, where it can happen: partial sums pass the f32 range when Σ|x_i| does (then
    // Inf or Inf - Inf = NaN depend on the order); a result near the dtype's range may round to ±Inf; with
    // rounding in the dtype per step a partial sum may overflow with either sign before later terms cancel it.
    if (sumAbs >= F32_MAX_FINITE) return true
    if (Number.isNaN(got)) return false
    if (model.stepRounding === 'dtype' && sumAbs > r.maxFinite / 2) return true
    return Math.sign(got) === Math.sign(ref) && (Math.abs(ref) + tol >= r.maxFinite || sumAbs > r.maxFinite / 2)
  }
  return Math.abs(got - ref) <= tol
}

/** elementRight under f32 accumulation (the CPU backend's algorithms), argument order of the CPU checkers. */
export function isAcceptableSum(dtype: Dtype, ranks: number, got: number, ref: number, sumAbs: number): boolean {
  return elementRight(got, ref, sumAbs, ranks, dtype, F32_ACCUMULATION)
}

export function decodeElement(a: TensorArray, dtype: Dtype, i: number): number {
  return dtype === 'f32' ? (a as Float32Array)[i] : DTYPE_CODECS[dtype].decodeLane((a as Uint16Array)[i])
}

export interface Reference {
  sum: Float64Array
  /** Σ|x_r| per element, for the accumulation error bound. */
  sumAbs: Float64Array
}

export function referenceSum(inputs: readonly TensorArray[], dtype: Dtype, count = inputs[0].length): Reference {
  const sum = new Float64Array(count)
  const sumAbs = new Float64Array(count)
  for (const x of inputs) {
    for (let i = 0; i < count; i++) {
      const v = decodeElement(x, dtype, i)
      sum[i] += v
      sumAbs[i] += Math.abs(v)
    }
  }
  return { sum, sumAbs }
}

/** Wrong elements of one rank's output against the reference. */
export function countWrong(
  out: TensorArray,
  ref: Reference,
  nranks: number,
  dtype: Dtype,
  count = out.length,
  model: NumericModel = F32_ACCUMULATION,
): number {
  let wrong = 0
  for (let i = 0; i < count; i++) {
    if (!elementRight(decodeElement(out, dtype, i), ref.sum[i], ref.sumAbs[i], nranks, dtype, model)) wrong++
  }
  return wrong
}

/** Largest |out - ref| / max(Σ|x|, tiny) over finite reference elements (for reports). */
export function maxRelativeError(out: TensorArray, ref: Reference, dtype: Dtype, count = out.length): number {
  let worst = 0
  for (let i = 0; i < count; i++) {
    if (!Number.isFinite(ref.sum[i])) continue
    const got = decodeElement(out, dtype, i)
    if (!Number.isFinite(got)) continue
    worst = Math.max(worst, Math.abs(got - ref.sum[i]) / Math.max(ref.sumAbs[i], 1e-30))
  }
  return worst
}

/** Index of the first element where some rank's output bits differ from rank 0's, or -1. */
export function ranksAgreeBitwise(outputs: readonly TensorArray[], count = outputs[0].length): number {
  const words = (a: TensorArray) =>
    a instanceof Float32Array
      ? new Uint32Array(a.buffer, a.byteOffset, count)
      : new Uint16Array(a.buffer, a.byteOffset, count)
  const first = words(outputs[0])
  for (let r = 1; r < outputs.length; r++) {
    const w = words(outputs[r])
    for (let i = 0; i < count; i++) if (w[i] !== first[i]) return i
  }
  return -1
}
