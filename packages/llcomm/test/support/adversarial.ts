/**
 * Adversarial inputs per dtype: ordinary values mixed with NaN (canonical, payload, signalling), ±0, ±Inf,
 * subnormals and the sentinel's own bit pattern (per 16-bit lane, and as a whole word of two sentinel lanes).
 * Magnitudes stay below 1000 so that a sum of 8 ranks cannot overflow f16 (max 65504).
 */
import type { Dtype, TensorArray } from '../../src/api/types.js'
import { DTYPE_CODECS } from '../../src/dtype/codec.js'
import { f32FromBits } from '../../src/dtype/f32.js'
import { SENTINEL_LANE16, SENTINEL_WORD } from '../../src/dtype/sentinels.js'
import { SeededRandom } from './prng.js'

/** Special bit patterns per dtype (lane bits). */
export const SPECIAL_BITS: Readonly<Record<Dtype, readonly number[]>> = {
  f32: [
    0x7fc00000, // canonical qNaN
    0xffc00001, // negative qNaN with payload
    0x7f800001, // sNaN
    SENTINEL_WORD, // the sentinel itself
    0x00000000, // +0
    0x80000000, // -0
    0x7f800000, // +Inf
    0xff800000, // -Inf
    0x00000001, // smallest subnormal
    0x807fffff, // largest negative subnormal
    0x00400000, // mid subnormal
  ],
  f16: [0x7e00, 0xfe01, 0x7c01, SENTINEL_LANE16, 0x0000, 0x8000, 0x7c00, 0xfc00, 0x0001, 0x83ff, 0x0200],
  bf16: [0x7fc0, 0xffc1, 0x7f81, SENTINEL_LANE16, 0x0000, 0x8000, 0x7f80, 0xff80, 0x0001, 0x807f, 0x0040],
}

export interface AdversarialOptions {
  /** Probability that an element is special (default 0.03). */
  specialRate?: number
  /** Magnitude of ordinary values (default 1). */
  scale?: number
}

/** One rank's adversarial input. Deterministic in (seed, rank). */
export function adversarialInput(
  dtype: Dtype,
  count: number,
  seed: number,
  rank: number,
  options: AdversarialOptions = {},
): TensorArray {
  const rng = new SeededRandom((seed * 7919 + rank * 104729 + 1) >>> 0)
  const codec = DTYPE_CODECS[dtype]
  const specials = SPECIAL_BITS[dtype]
  const rate = options.specialRate ?? 0.03
  const scale = options.scale ?? 1
  const bits = new Uint32Array(count)
  for (let i = 0; i < count; i++) {
    const u = rng.next()
    if (u < rate) bits[i] = specials[Math.floor(rng.next() * specials.length)]
    else if (u < rate * 2)
      bits[i] = codec.encodeLane((rng.next() * 2 - 1) * 1000) // large
    else if (u < rate * 3)
      bits[i] = codec.encodeLane((rng.next() * 2 - 1) * 2 ** -20) // tiny
    else bits[i] = codec.encodeLane((rng.next() * 2 - 1) * scale)
  }
  // The sentinel in a fixed place per rank (and, for 16-bit dtypes, two adjacent sentinel lanes = SENTINEL_WORD).
  const at = (rank * 5 + 3) % Math.max(1, count)
  if (count > 0) bits[at] = dtype === 'f32' ? SENTINEL_WORD : SENTINEL_LANE16
  if (dtype !== 'f32' && count >= 4) {
    const k = 2 * (rank % Math.floor(count / 2)) // an even index: lanes k, k+1 form one word
    bits[k] = SENTINEL_LANE16
    bits[k + 1] = SENTINEL_LANE16
  }
  if (dtype === 'f32') {
    const out = new Float32Array(count)
    new Uint32Array(out.buffer).set(bits)
    return out
  }
  return Uint16Array.from(bits)
}

/** Element i of a tensor as an f32 value (raw bits decoded for 16-bit dtypes). */
export function elementValue(dtype: Dtype, a: TensorArray, i: number): number {
  if (dtype === 'f32') return a[i]
  return DTYPE_CODECS[dtype].decodeLane(a[i])
}

/** Element i's raw bits. */
export function elementBits(dtype: Dtype, a: TensorArray, i: number): number {
  if (dtype === 'f32') return new Uint32Array(a.buffer, a.byteOffset, a.length)[i]
  return a[i]
}

export { f32FromBits }
