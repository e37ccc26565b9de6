/**
 * f16 and bf16 <-> f32 with round-to-nearest-even; NaN -> the dtype's canonical quiet NaN, ±Inf, ±0 and
 * subnormals exact. Inputs of the `fromF32` functions are f32 values (or their bits); the 16-bit decoders
 * are exact (every f16 and bf16 value is an f32 value).
 */
import { f32ToBits } from './f32.js'
import { BF16_CANONICAL_NAN, F16_CANONICAL_NAN } from './sentinels.js'

/** f16 bits -> f32 value, computed (the table below is built from this). */
function f16BitsToNumberSlow(bits: number): number {
  const sign = bits & 0x8000 ? -1 : 1
  const exponent = (bits >>> 10) & 0x1f
  const mantissa = bits & 0x3ff
  if (exponent === 0x1f) return mantissa === 0 ? sign * Infinity : Number.NaN
  if (exponent === 0) return sign * mantissa * 2 ** -24
  return sign * (1 + mantissa / 1024) * 2 ** (exponent - 15)
}

let f16Table: Float32Array | undefined
let bf16Table: Float32Array | undefined

/** Decode table for all 65536 f16 patterns (built once, 256 KB). */
export function f16DecodeTable(): Float32Array {
  if (!f16Table) {
    f16Table = new Float32Array(65536)
    for (let b = 0; b < 65536; b++) f16Table[b] = f16BitsToNumberSlow(b)
  }
  return f16Table
}

/** Decode table for all 65536 bf16 patterns: a bf16 is the top half of an f32. */
export function bf16DecodeTable(): Float32Array {
  if (!bf16Table) {
    bf16Table = new Float32Array(65536)
    const u = new Uint32Array(bf16Table.buffer)
    for (let b = 0; b < 65536; b++) u[b] = (b << 16) >>> 0
  }
  return bf16Table
}

export function f16ToF32(bits: number): number {
  return f16DecodeTable()[bits & 0xffff]
}

export function bf16ToF32(bits: number): number {
  return bf16DecodeTable()[bits & 0xffff]
}

/** f32 bit pattern -> f16 bits, round-to-nearest-even; NaN -> 0x7E00; overflow -> ±Inf. */
export function f16FromF32Bits(f32Bits: number): number {
  const x = f32Bits >>> 0
  const sign = (x >>> 16) & 0x8000
  const exponent = (x >>> 23) & 0xff
  const mantissa = x & 0x7fffff
  if (exponent === 0xff) return mantissa !== 0 ? F16_CANONICAL_NAN : sign | 0x7c00
  const e = exponent - 112 // f16 biased exponent (127 - 15)
  if (e >= 0x1f) return sign | 0x7c00
  if (e <= 0) {
    // f16 subnormal (or zero): value in units of 2^-24 is M * 2^(e-14), M the 24-bit significand.
    if (e < -10) return sign // below half the smallest subnormal: rounds to ±0
    const significand = mantissa | 0x800000
    const shift = 14 - e // 14..24
    let r = significand >>> shift
    const rem = significand & ((1 << shift) - 1)
    const half = 1 << (shift - 1)
    if (rem > half || (rem === half && (r & 1) === 1)) r++ // a carry into bit 10 gives the smallest normal: right
    return sign | r
  }
  let r = (e << 10) | (mantissa >>> 13)
  const rem = mantissa & 0x1fff
  if (rem > 0x1000 || (rem === 0x1000 && (r & 1) === 1)) r++ // a carry into the exponent is right, up to ±Inf
  return sign | r
}

/** f32 bit pattern -> bf16 bits, round-to-nearest-even; NaN -> 0x7FC0. */
export function bf16FromF32Bits(f32Bits: number): number {
  const x = f32Bits >>> 0
  if ((x & 0x7f800000) === 0x7f800000 && (x & 0x7fffff) !== 0) return BF16_CANONICAL_NAN
  // x + 0x7FFF + lsb stays below 2^32 for every non-NaN x (max 0xFF800000 + 0x8000).
  return ((x + 0x7fff + ((x >>> 16) & 1)) >>> 16) & 0xffff
}

/** A number (rounded to f32 first) -> f16 bits. */
export function f32ToF16(x: number): number {
  return f16FromF32Bits(f32ToBits(x))
}

/** A number (rounded to f32 first) -> bf16 bits. */
export function f32ToBf16(x: number): number {
  return bf16FromF32Bits(f32ToBits(x))
}
