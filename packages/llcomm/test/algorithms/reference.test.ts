// The grid's checker can fail: it flags an element outside the tolerance, a number where the reference is NaN,
// and two ranks whose outputs differ in one bit.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { allReduceTolerance } from '../../src/dtype/tolerance.js'
import { checkAllReduce } from '../support/reference.js'

test('checkAllReduce flags wrong values, a missing NaN and ranks that disagree in the last bit', () => {
  const inputs = [Float32Array.of(1, Number.NaN, 0.1), Float32Array.of(2, 1, 0.2)]
  const good = Float32Array.of(3, Number.NaN, Math.fround(Math.fround(0.1) + Math.fround(0.2)))
  assert.deepEqual(checkAllReduce('f32', inputs, [good, good.slice()]), [])
  assert.equal(checkAllReduce('f32', inputs, [Float32Array.of(3.001, Number.NaN, 0.3), good]).length, 2) // value + bits
  assert.equal(
    checkAllReduce('f32', inputs, [Float32Array.of(3, 1, good[2]), Float32Array.of(3, 1, good[2])]).length,
    1,
  )
  const offByOneBit = good.slice()
  new Uint32Array(offByOneBit.buffer)[2] ^= 1
  assert.equal(checkAllReduce('f32', inputs, [good, offByOneBit]).length, 1)
})

test('the tolerance grows with the rank count and the dtype roundoff', () => {
  assert.ok(allReduceTolerance('f32', 8, 8, 1) > allReduceTolerance('f32', 2, 8, 1))
  assert.ok(allReduceTolerance('bf16', 2, 2, 1) > allReduceTolerance('f16', 2, 2, 1))
  assert.ok(allReduceTolerance('f16', 2, 2, 1) > allReduceTolerance('f32', 2, 2, 1))
})
