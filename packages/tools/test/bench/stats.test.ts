import assert from 'node:assert/strict'
import { test } from 'node:test'
import { isLlcommError } from 'llcomm/internal'
import {
  algorithmBandwidthGBs,
  allReduceBusFactor,
  busBandwidthGBs,
  median,
  percentile,
} from '../../src/bench/stats.js'

test('median of odd and even counts, unsorted input untouched', () => {
  const values = [5, 1, 3]
  assert.equal(median(values), 3)
  assert.deepEqual(values, [5, 1, 3])
  assert.equal(median([4, 1, 3, 2]), 2.5)
  assert.equal(median([7]), 7)
  assert.throws(
    () => median([]),
    (e) => isLlcommError(e, 'INVALID_ARGUMENT'),
  )
})

test('p99 is the nearest-rank percentile', () => {
  const hundred = Array.from({ length: 100 }, (_, i) => i + 1) // 1..100
  assert.equal(percentile(hundred, 99), 99)
  assert.equal(percentile(hundred, 50), 50)
  assert.equal(percentile(hundred, 100), 100)
  const twenty = Array.from({ length: 20 }, (_, i) => 20 - i) // 20..1
  assert.equal(percentile(twenty, 99), 20) // ceil(19.8) = 20th of 20
  assert.equal(percentile([3, 1, 2], 1), 1)
  assert.throws(
    () => percentile([1], 0),
    (e) => isLlcommError(e, 'INVALID_ARGUMENT'),
  )
})

test('algbw and busbw follow nccl-tests', () => {
  // 1 MB in 10 µs = 1e6 / 1e-5 = 1e11 B/s = 100 GB/s... with 2^20 bytes: 104.8576 GB/s.
  assert.equal(algorithmBandwidthGBs(1 << 20, 10), 104.8576)
  assert.equal(allReduceBusFactor(2), 1)
  assert.equal(allReduceBusFactor(4), 1.5)
  assert.equal(allReduceBusFactor(8), 1.75)
  assert.equal(busBandwidthGBs(1 << 20, 10, 8), 104.8576 * 1.75)
  assert.equal(algorithmBandwidthGBs(8, 0), 0)
})
