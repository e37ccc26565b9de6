// The float64 reference and the wrong-element rule used by benchmark() and the GPU tests.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { countWrong, elementRight, ranksAgreeBitwise, referenceSum } from '../../../src/backends/cuda/reference.js'
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

test('numeric models: ring and twoshot-atomic round in the dtype per step; red.add.f32 may flush subnormals', async () => {
  const { numericModel } = await import('../../../src/backends/cuda/reference.js')
  const ring = numericModel('ring', 'bf16')
  assert.equal(ring.stepRounding, 'dtype')
  assert.equal(numericModel('oneshot-ll', 'bf16').stepRounding, 'f32')
  // Four bf16 partial sums each rounded: an error of two bf16 ulps of the partials is within the ring's bound
  // and outside the f32-accumulation bound.
  const ref = 0.0078125
  const refAbs = 12
  const got = ref + 2 * 2 ** -8 * 4
  assert.ok(elementRight(got, ref, refAbs, 4, 'bf16', ring))
  assert.ok(!elementRight(got, ref, refAbs, 4, 'bf16'))
  const atomicF32 = numericModel('twoshot-atomic', 'f32')
  assert.ok(atomicF32.flushesSubnormals)
  const sub = -1.1754942106924411e-38 // largest negative f32 subnormal
  assert.ok(elementRight(0, sub, Math.abs(sub), 2, 'f32', atomicF32))
  assert.ok(!elementRight(0, sub, Math.abs(sub), 2, 'f32'), 'subnormals must survive f32 accumulation')
})
