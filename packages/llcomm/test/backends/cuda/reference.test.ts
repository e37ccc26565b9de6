// The float64 reference and the wrong-element rule used by benchmark() and the GPU tests.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import {
  countWrong,
  elementRight,
  F32_ACCUMULATION,
  ranksAgreeBitwise,
  referenceSum,
} from '../../../src/backends/cuda/reference.js'
import { f32ToBf16 } from '../../../src/dtype/index.js'

test('NaN stays NaN, infinities keep their sign, finite values within the f32 accumulation bound', () => {
  assert.ok(elementRight(Number.NaN, Number.NaN, Number.NaN, 4, 'f32'))
  assert.ok(!elementRight(0, Number.NaN, Number.NaN, 4, 'f32'))
  assert.ok(elementRight(Number.POSITIVE_INFINITY, Number.POSITIVE_INFINITY, Number.POSITIVE_INFINITY, 2, 'f32'))
  assert.ok(!elementRight(Number.NEGATIVE_INFINITY, Number.POSITIVE_INFINITY, Number.POSITIVE_INFINITY, 2, 'f32'))
  assert.ok(!elementRight(Number.NaN, 1, 1, 2, 'f32'))
  assert.ok(elementRight(Math.fround(0.1 + 0.2), 0.1 + 0.2, 0.3, 2, 'f32'))
  assert.ok(!elementRight(0.31, 0.3, 0.3, 2, 'f32'))
  assert.ok(elementRight(1.0078125, 1.005, 1.005, 2, 'bf16'), 'one bf16 rounding is allowed')
  assert.ok(!elementRight(1.03125, 1.005, 1.005, 2, 'bf16'))
})

test('referenceSum and countWrong over ranks; bitwise agreement', () => {
  const a = Float32Array.from([1, 2, Number.NaN, -0])
  const b = Float32Array.from([3, -2, 1, -0])
  const ref = referenceSum([a, b], 'f32')
  assert.deepEqual([...ref.sum.slice(0, 2)], [4, 0])
  assert.ok(Number.isNaN(ref.sum[2]))
  assert.equal(countWrong(Float32Array.from([4, 0, Number.NaN, 0]), ref, 2, 'f32'), 0)
  assert.equal(countWrong(Float32Array.from([4, 1, 0, 0]), ref, 2, 'f32'), 2)
  const h = Uint16Array.from([f32ToBf16(1.5), f32ToBf16(-2)])
  const href = referenceSum([h, h], 'bf16')
  assert.deepEqual([...href.sum], [3, -4])
  assert.equal(ranksAgreeBitwise([Float32Array.from([1, 2]), Float32Array.from([1, 2])]), -1)
  assert.equal(
    ranksAgreeBitwise([Float32Array.from([0, 2]), Float32Array.from([-0, 2])]),
    0,
    '+0 and -0 differ bitwise',
  )
})

test('numeric models: f32 accumulation by default; accumulation: dtype rounds ring and twoshot-atomic in the dtype per step; red.add.f32 may flush subnormals', async () => {
  const { numericModel } = await import('../../../src/backends/cuda/reference.js')
  // Default (issue 18 item 4): ring's f32 partials and twoshot-atomic's f32 lines accumulate in f32.
  for (const dtype of ['f16', 'bf16'] as const) {
    assert.deepEqual(numericModel('ring', dtype), F32_ACCUMULATION)
    assert.equal(numericModel('twoshot-atomic', dtype).stepRounding, 'f32')
    assert.equal(numericModel('ring', dtype, 'f32').stepRounding, 'f32')
  }
  // red.add.f32 flushes f32 subnormals; a bf16 subnormal is one, an f16 value never is.
  assert.ok(numericModel('twoshot-atomic', 'f32').flushesSubnormals)
  assert.ok(numericModel('twoshot-atomic', 'bf16').flushesSubnormals)
  assert.ok(!numericModel('twoshot-atomic', 'f16').flushesSubnormals)
  // The 16-bit option: partial sums rounded in the dtype, no flush (red.add.noftz); f32 is unchanged by it.
  const ring = numericModel('ring', 'bf16', 'dtype')
  assert.equal(ring.stepRounding, 'dtype')
  assert.deepEqual(numericModel('twoshot-atomic', 'f16', 'dtype'), { stepRounding: 'dtype', flushesSubnormals: false })
  assert.deepEqual(numericModel('twoshot-atomic', 'f32', 'dtype'), numericModel('twoshot-atomic', 'f32'))
  assert.deepEqual(numericModel('ring', 'f32', 'dtype'), F32_ACCUMULATION)
  assert.equal(numericModel('oneshot-ll', 'bf16', 'dtype').stepRounding, 'f32')
  assert.equal(numericModel('nccl', 'bf16').stepRounding, 'dtype')
  // Four bf16 partial sums each rounded: an error of two bf16 ulps of the partials is within the 16-bit ring's bound
  // and outside the f32-accumulation bound.
  const ref = 0.0078125
  const refAbs = 12
  const got = ref + 2 * 2 ** -8 * 4
  assert.ok(elementRight(got, ref, refAbs, 4, 'bf16', ring))
  assert.ok(!elementRight(got, ref, refAbs, 4, 'bf16'))
  assert.ok(!elementRight(got, ref, refAbs, 4, 'bf16', numericModel('ring', 'bf16')))
  // The H200's twoshot-atomic f16 result with 16-bit lines (2 ranks, before issue 18 item 4): outside the f32 bound,
  // inside the 16-bit one.
  assert.ok(!elementRight(0.00732421875, 0.0074462890625, 1.73, 2, 'f16', numericModel('twoshot-atomic', 'f16')))
  assert.ok(
    elementRight(0.00732421875, 0.0074462890625, 1.73, 2, 'f16', numericModel('twoshot-atomic', 'f16', 'dtype')),
  )
  const atomicF32 = numericModel('twoshot-atomic', 'f32')
  const sub = -1.1754942106924411e-38 // largest negative f32 subnormal
  assert.ok(elementRight(0, sub, Math.abs(sub), 2, 'f32', atomicF32))
  assert.ok(!elementRight(0, sub, Math.abs(sub), 2, 'f32'), 'subnormals must survive f32 accumulation')
  const bf16Sub = 2 ** -130 // a bf16 subnormal (an f32 subnormal too): flushed on f32 lines
  assert.ok(elementRight(0, bf16Sub, bf16Sub, 2, 'bf16', numericModel('twoshot-atomic', 'bf16')))
  assert.ok(!elementRight(0, bf16Sub, bf16Sub, 2, 'bf16', numericModel('twoshot-atomic', 'f16')))
})
