import assert from 'node:assert/strict'
import { test } from 'node:test'
import { isLlcommError } from 'llcomm/internal'
import { elementCount, formatBytes, parseSizeBytes, parseSizeList, powersOfTwoBetween } from '../../src/bench/sizes.js'

test('parseSizeBytes reads plain and binary-unit sizes', () => {
  assert.equal(parseSizeBytes('8'), 8)
  assert.equal(parseSizeBytes('4K'), 4096)
  assert.equal(parseSizeBytes('64k'), 65536)
  assert.equal(parseSizeBytes('1M'), 1 << 20)
  assert.equal(parseSizeBytes('16MB'), 16 << 20)
  assert.equal(parseSizeBytes('2KiB'), 2048)
  assert.equal(parseSizeBytes(' 1G '), 1 << 30)
})

test('parseSizeBytes rejects junk with INVALID_ARGUMENT', () => {
  for (const bad of ['', 'K', '4Q', '-8', '1.5K', '0', '8 8']) {
    assert.throws(
      () => parseSizeBytes(bad),
      (e) => isLlcommError(e, 'INVALID_ARGUMENT'),
      bad,
    )
  }
})

test('parseSizeList sorts and deduplicates', () => {
  assert.deepEqual(parseSizeList('64K,8,4K,8'), [8, 4096, 65536])
  assert.throws(
    () => parseSizeList(','),
    (e) => isLlcommError(e, 'INVALID_ARGUMENT'),
  )
})

test('powersOfTwoBetween covers the range inclusively', () => {
  assert.deepEqual(powersOfTwoBetween(8, 64), [8, 16, 32, 64])
  assert.deepEqual(powersOfTwoBetween(6, 40), [8, 16, 32])
  assert.equal(powersOfTwoBetween(8, 16 << 20).length, 22)
  assert.throws(
    () => powersOfTwoBetween(64, 8),
    (e) => isLlcommError(e, 'INVALID_ARGUMENT'),
  )
  assert.throws(
    () => powersOfTwoBetween(5, 7),
    (e) => isLlcommError(e, 'INVALID_ARGUMENT'),
  )
})

test('elementCount needs whole elements', () => {
  assert.equal(elementCount(4096, 'f32'), 1024)
  assert.equal(elementCount(4096, 'bf16'), 2048)
  assert.throws(
    () => elementCount(6, 'f32'),
    (e) => isLlcommError(e, 'INVALID_ARGUMENT'),
  )
})

test('formatBytes uses the largest exact unit', () => {
  assert.equal(formatBytes(8), '8')
  assert.equal(formatBytes(4096), '4K')
  assert.equal(formatBytes(1536), '1536')
  assert.equal(formatBytes(16 << 20), '16M')
})
