// Exhaustive f16 and bf16 conversions: every one of the 65536 patterns decodes to the value its fields say,
// round-trips, and every midpoint between neighbours (and one f32 ulp either side) rounds to nearest, ties to
// even, checked against a float64 reference written independently of the implementation.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { f32FromBits, f32ToBits } from '../../src/dtype/f32.js'
import { bf16FromF32Bits, bf16ToF32, f16FromF32Bits, f16ToF32, f32ToBf16, f32ToF16 } from '../../src/dtype/half.js'
import { BF16_CANONICAL_NAN, F16_CANONICAL_NAN } from '../../src/dtype/sentinels.js'

interface Format {
  name: string
  exponentBits: number
  mantissaBits: number
  decode(bits: number): number
  encodeBits(f32Bits: number): number
  canonicalNan: number
}

const F16: Format = {
  name: 'f16',
  exponentBits: 5,
  mantissaBits: 10,
  decode: f16ToF32,
  encodeBits: f16FromF32Bits,
  canonicalNan: F16_CANONICAL_NAN,
}
const BF16: Format = {
  name: 'bf16',
  exponentBits: 8,
  mantissaBits: 7,
  decode: bf16ToF32,
  encodeBits: bf16FromF32Bits,
  canonicalNan: BF16_CANONICAL_NAN,
}

/** Reference decode from the fields, in float64. */
function referenceValue(f: Format, bits: number): number {
  const sign = bits & 0x8000 ? -1 : 1
  const expMask = (1 << f.exponentBits) - 1
  const e = (bits >>> f.mantissaBits) & expMask
  const m = bits & ((1 << f.mantissaBits) - 1)
  const bias = (1 << (f.exponentBits - 1)) - 1
  if (e === expMask) return m === 0 ? sign * Infinity : Number.NaN
  if (e === 0) return sign * m * 2 ** (1 - bias - f.mantissaBits)
  return sign * (1 + m / 2 ** f.mantissaBits) * 2 ** (e - bias)
}

function isNanBits(f: Format, bits: number): boolean {
  const expMask = (1 << f.exponentBits) - 1
  return ((bits >>> f.mantissaBits) & expMask) === expMask && (bits & ((1 << f.mantissaBits) - 1)) !== 0
}

for (const f of [F16, BF16]) {
  test(`${f.name}: all 65536 patterns decode exactly and round-trip (NaN -> canonical quiet NaN)`, () => {
    for (let b = 0; b < 65536; b++) {
      const want = referenceValue(f, b)
      const got = f.decode(b)
      if (Number.isNaN(want)) {
        assert.ok(Number.isNaN(got), `${f.name} 0x${b.toString(16)} should decode to NaN`)
        assert.equal(f.encodeBits(f32ToBits(got)), f.canonicalNan)
        assert.equal(f.encodeBits(0x7f800001), f.canonicalNan) // an f32 sNaN
        continue
      }
      assert.ok(Object.is(got, want), `${f.name} 0x${b.toString(16)} decodes to ${got}, expected ${want}`)
      // Round trip through the f32 bits (Object.is: -0 stays -0).
      assert.equal(f.encodeBits(f32ToBits(got)), b, `${f.name} 0x${b.toString(16)} round trip`)
    }
  })

  test(`${f.name}: every midpoint rounds to nearest-even, one f32 ulp off rounds to the nearer neighbour`, () => {
    const infBits = ((1 << f.exponentBits) - 1) << f.mantissaBits
    for (let b = 0; b < infBits; b++) {
      // Neighbours b and b+1 (b+1 may be +Inf: treat it as the value the next exponent would give).
      const lo = referenceValue(f, b)
      const hi = b + 1 === infBits ? nextBinade(f, b) : referenceValue(f, b + 1)
      const mid = (lo + hi) / 2
      const midBits = f32ToBits(mid)
      assert.equal(f32FromBits(midBits), mid, 'midpoints are exact in f32')
      const evenBits = (b & 1) === 0 ? b : b + 1
      for (const sign of [0, 0x8000]) {
        const s = sign ? 0x80000000 : 0
        assert.equal(
          f.encodeBits((midBits | s) >>> 0),
          evenBits | sign,
          `${f.name} tie above 0x${(b | sign).toString(16)}`,
        )
        assert.equal(
          f.encodeBits(((midBits + 1) | s) >>> 0),
          (b + 1) | sign,
          `${f.name} just above the tie at 0x${b.toString(16)}`,
        )
        if (mid > 0)
          assert.equal(
            f.encodeBits(((midBits - 1) | s) >>> 0),
            b | sign,
            `${f.name} just below the tie at 0x${b.toString(16)}`,
          )
      }
    }
  })
}

/** The value one ulp above the format's largest finite value (where rounding to +Inf starts counting). */
function nextBinade(f: Format, maxFiniteBits: number): number {
  const ulp = referenceValue(f, maxFiniteBits) - referenceValue(f, maxFiniteBits - 1)
  return referenceValue(f, maxFiniteBits) + ulp
}

test('f16: values beyond the range overflow to ±Inf, below half the smallest subnormal to ±0', () => {
  assert.equal(f32ToF16(65504), 0x7bff)
  assert.equal(f32ToF16(65520), 0x7c00) // the tie between 65504 and 65536 goes to even = Inf
  assert.equal(f32ToF16(-1e6), 0xfc00)
  assert.equal(f32ToF16(2 ** -25), 0x0000) // tie with 0: even
  assert.equal(f32ToF16(-(2 ** -25) * 1.0000001), 0x8001)
  assert.equal(f32ToF16(1e-40), 0x0000) // f32 subnormal
  assert.equal(f32ToF16(-0), 0x8000)
  assert.equal(f32ToF16(Number.NaN), F16_CANONICAL_NAN)
})

test('bf16: f32 subnormals keep their top bits, NaN payloads become the canonical NaN', () => {
  assert.equal(f32ToBf16(f32FromBits(0x00010000)), 0x0001)
  assert.equal(f32ToBf16(f32FromBits(0x7fa5a5a5)), BF16_CANONICAL_NAN)
  assert.equal(bf16FromF32Bits(0x7f7fffff), 0x7f80) // max f32 rounds up to Inf in bf16
  assert.ok(!isNanBits(BF16, bf16FromF32Bits(0xff800000)))
})
