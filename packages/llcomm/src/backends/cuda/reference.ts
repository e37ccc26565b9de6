/**
 * Float64 reference for AllReduce sum and the rule for "wrong element", shared by `benchmark()` and the GPU
 * tests. An element is right when it is within the error bound of the algorithm's numeric model (below) of the
 * float64 sum; NaN must stay NaN and an infinite sum must keep its sign. Bitwise agreement across ranks is
 * checked separately (`ranksAgreeBitwise`).
 *
 * Numeric models (what the kernels document, kernels/allreduce/*.cu and kernels/llcomm/atomic_lines.cuh):
 *   - one-shot, two-shot sentinel, one-shot barrier: f32 accumulation in rank order, one rounding to the dtype;
 *   - ring: partial sums rounded to the dtype at every hop (n-1 roundings in the dtype);
 *   - twoshot-atomic: red.add in the dtype for f16/bf16 (packed 16-bit adds), and for f32 red.add.f32, which
 *     flushes subnormal inputs and results to zero;
 *   - nccl, nccl-symmetric: NCCL's reductions, rounded in the dtype per step.
 */
import type { AlgorithmName, Dtype, TensorArray } from '../../api/types.js'
import { DTYPE_CODECS } from '../../dtype/index.js'

/** Unit roundoff and smallest subnormal of each output dtype. */
const OUTPUT_ROUNDING: Readonly<Record<Dtype, { unitRoundoff: number; minSubnormal: number; maxFinite: number }>> = {
  f32: { unitRoundoff: 2 ** -24, minSubnormal: 2 ** -149, maxFinite: 3.4028234663852886e38 },
  f16: { unitRoundoff: 2 ** -11, minSubnormal: 2 ** -24, maxFinite: 65504 },
  bf16: { unitRoundoff: 2 ** -8, minSubnormal: 2 ** -133, maxFinite: 3.3895313892515355e38 },
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

export interface NumericModel {
  /** Precision of each of the n-1 partial-sum roundings: f32 registers, or the dtype itself. */
  stepRounding: 'f32' | 'dtype'
  /** Subnormal inputs and results may become zero (red.add.f32). */
  flushesSubnormals: boolean
}

export const F32_ACCUMULATION: NumericModel = { stepRounding: 'f32', flushesSubnormals: false }

/** The numeric model of an algorithm for a dtype (table above). */
export function numericModel(algorithm: AlgorithmName, dtype: Dtype): NumericModel {
  switch (algorithm) {
    case 'ring':
    case 'nccl':
    case 'nccl-symmetric':
      return { stepRounding: 'dtype', flushesSubnormals: false }
    case 'twoshot-atomic':
      return dtype === 'f32'
        ? { stepRounding: 'f32', flushesSubnormals: true }
        : { stepRounding: 'dtype', flushesSubnormals: false }
    default:
      return F32_ACCUMULATION
  }
}

/** True when `got` is an acceptable result of the numeric model for this reference element. */
export function elementRight(
  got: number,
  ref: number,
  refAbs: number,
  nranks: number,
  dtype: Dtype,
  model: NumericModel = F32_ACCUMULATION,
): boolean {
  if (Number.isNaN(ref)) return Number.isNaN(got)
  if (!Number.isFinite(ref)) return got === ref
  const r = OUTPUT_ROUNDING[dtype]
  if (!Number.isFinite(got)) {
    // Accumulation (or the output rounding) may overflow where float64 did not, only near the dtype's top; with
    // rounding in the dtype per step a partial sum may overflow with either sign before later terms cancel it.
    if (Number.isNaN(got) || refAbs <= r.maxFinite / 2) return false
    return model.stepRounding === 'dtype' || Math.sign(got) === Math.sign(ref)
  }
  // At most (n-1) roundings of partial sums bounded by Σ|x| (in f32 or in the dtype), then one to the dtype.
  const step = model.stepRounding === 'f32' ? 2 ** -24 : r.unitRoundoff
  const flush = model.flushesSubnormals ? nranks * 2 ** -126 : 0
  const bound =
    Math.max(nranks - 1, 1) * step * refAbs + r.unitRoundoff * Math.abs(ref) + r.minSubnormal + 2 ** -149 + flush
  return Math.abs(got - ref) <= bound * 1.0001
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
