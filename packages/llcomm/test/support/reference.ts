/**
 * The float64 reference of an all-reduce and the checks every algorithm test makes: each element within the
 * accumulation tolerance of src/dtype/tolerance.ts (NaN exactly where the reference is NaN, the same infinity),
 * and every rank's output bitwise identical to rank 0's.
 */
import type { Dtype, TensorArray } from '../../src/api/types.js'
import { elementRight, F32_ACCUMULATION, type NumericModel } from '../../src/dtype/tolerance.js'
import { elementBits, elementValue } from './adversarial.js'

export interface Reference {
  sums: Float64Array
  sumsAbs: Float64Array
}

export function float64Reference(dtype: Dtype, inputs: TensorArray[]): Reference {
  const count = inputs[0].length
  const sums = new Float64Array(count)
  const sumsAbs = new Float64Array(count)
  for (const input of inputs) {
    for (let i = 0; i < count; i++) {
      const x = elementValue(dtype, input, i)
      sums[i] += x
      sumsAbs[i] += Math.abs(x)
    }
  }
  return { sums, sumsAbs }
}

/**
 * Human-readable problems (empty when the outputs are right). At most `limit` listed. `model`: the numeric model of
 * the algorithm that ran (src/dtype/tolerance.ts numericModel(); f32 accumulation, the CPU backend's, by default).
 */
export function checkAllReduce(
  dtype: Dtype,
  inputs: TensorArray[],
  outputs: TensorArray[],
  limit = 5,
  model: NumericModel = F32_ACCUMULATION,
): string[] {
  const problems: string[] = []
  const ranks = inputs.length
  const ref = float64Reference(dtype, inputs)
  const count = inputs[0].length
  for (let r = 0; r < ranks; r++) {
    if (outputs[r].length !== count) problems.push(`rank ${r}: length ${outputs[r].length}, expected ${count}`)
  }
  if (problems.length > 0) return problems
  for (let i = 0; i < count && problems.length < limit; i++) {
    const got = elementValue(dtype, outputs[0], i)
    if (!elementRight(got, ref.sums[i], ref.sumsAbs[i], ranks, dtype, model)) {
      problems.push(`element ${i}: got ${got}, reference ${ref.sums[i]} (sum|x| ${ref.sumsAbs[i]})`)
    }
    const bits0 = elementBits(dtype, outputs[0], i)
    for (let r = 1; r < ranks; r++) {
      const bits = elementBits(dtype, outputs[r], i)
      if (bits !== bits0) {
        problems.push(`element ${i}: rank ${r} has bits 0x${bits.toString(16)}, rank 0 has 0x${bits0.toString(16)}`)
        break
      }
    }
  }
  return problems
}
