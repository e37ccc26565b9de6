// The sentinel rule of docs/design.md §2: a value whose bits equal the sentinel (per 16-bit lane) is canonicalized to the
// dtype's quiet NaN, so no user value can look like an empty slot; everything else passes bit for bit.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { DTYPE_CODECS, wordsForCount } from '../../src/dtype/codec.js'
import { f32FromBits, f32ToBits } from '../../src/dtype/f32.js'
import { F32_CANONICAL_NAN, SENTINEL_LANE16, SENTINEL_WORD } from '../../src/dtype/sentinels.js'

test('f32: the sentinel word becomes the canonical quiet NaN; other words (other NaNs too) are untouched', () => {
  const c = DTYPE_CODECS.f32
  assert.equal(c.canonicalizeWord(SENTINEL_WORD), F32_CANONICAL_NAN)
  assert.equal(c.canonicalizeWord(SENTINEL_WORD | 0), F32_CANONICAL_NAN)
  for (const w of [0, 0x80000000, 0x7f800001, 0x7fa57fa4, 0xffa57fa5, 0x3f800000])
    assert.equal(c.canonicalizeWord(w), w)
})

test('f16/bf16: each sentinel lane becomes the canonical NaN, the other lane is kept', () => {
  for (const dtype of ['f16', 'bf16'] as const) {
    const c = DTYPE_CODECS[dtype]
    const nan = c.canonicalNan
    assert.equal(c.canonicalizeWord(SENTINEL_WORD), ((nan << 16) | nan) >>> 0)
    assert.equal(c.canonicalizeWord((0x3c00 << 16) | SENTINEL_LANE16), ((0x3c00 << 16) | nan) >>> 0)
    assert.equal(c.canonicalizeWord((SENTINEL_LANE16 << 16) | 0x0001), ((nan << 16) | 0x0001) >>> 0)
    assert.equal(c.canonicalizeWord(0x7fa47fa6), 0x7fa47fa6)
    assert.notEqual(c.canonicalizeWord(SENTINEL_WORD), SENTINEL_WORD)
  }
})

test('the sentinel is a NaN in every dtype and no conversion or f32 arithmetic produces it', () => {
  assert.ok(Number.isNaN(f32FromBits(SENTINEL_WORD)))
  assert.ok(Number.isNaN(DTYPE_CODECS.f16.decodeLane(SENTINEL_LANE16)))
  assert.ok(Number.isNaN(DTYPE_CODECS.bf16.decodeLane(SENTINEL_LANE16)))
  const s = f32FromBits(SENTINEL_WORD)
  for (const x of [s + 1, s * 2, Math.fround(s + s), s - Infinity]) assert.notEqual(f32ToBits(x), SENTINEL_WORD)
  for (const dtype of ['f16', 'bf16'] as const) {
    assert.notEqual(DTYPE_CODECS[dtype].encodeLane(s), SENTINEL_LANE16)
    assert.notEqual(DTYPE_CODECS[dtype].encodeLane(Number.NaN), SENTINEL_LANE16)
  }
})

test('wordsForCount packs two 16-bit lanes per word', () => {
  assert.equal(wordsForCount('f32', 7), 7)
  assert.equal(wordsForCount('f16', 7), 4)
  assert.equal(wordsForCount('bf16', 8), 4)
})
