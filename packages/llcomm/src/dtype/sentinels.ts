/**
 * Sentinel patterns and canonical quiet NaNs per dtype (backend-neutral: the CUDA side uses the same numbers).
 *
 * The sentinel-slot protocol pre-fills receive slots with SENTINEL_WORD and a reader polls until the bits
 * differ. One 32-bit word serves every dtype, so a slot armed during an f32 call is still armed for a following
 * bf16 or f16 call:
 *   f32 : 0x7FA57FA5 is a signalling NaN (exponent all ones, quiet bit 22 clear, payload non-zero).
 *   bf16: each lane 0x7FA5 is a signalling NaN (quiet bit 6 clear).
 *   f16 : each lane 0x7FA5 is a NaN with a non-canonical payload.
 * Arithmetic never produces any of them: hardware quiets signalling NaNs, and llcomm's conversions
 * (src/dtype) and reductions emit only the canonical quiet NaNs below. A user value whose bits equal the
 * sentinel (per 16-bit lane) is canonicalized by the sender: NaN in, NaN out, never a hang.
 */
export const SENTINEL_WORD = 0x7fa57fa5
/** The 16-bit lane of SENTINEL_WORD, for f16 and bf16. */
export const SENTINEL_LANE16 = 0x7fa5

export const F32_CANONICAL_NAN = 0x7fc00000
export const F16_CANONICAL_NAN = 0x7e00
export const BF16_CANONICAL_NAN = 0x7fc0

/** Replace a 32-bit f32 pattern equal to the sentinel by the canonical quiet NaN (result is unsigned). */
export function canonicalizeF32Word(word: number): number {
  return (word | 0) === (SENTINEL_WORD | 0) ? F32_CANONICAL_NAN : word >>> 0
}

/** Per-lane canonicalization of a word of two 16-bit values: a lane equal to the sentinel lane becomes `nan`. */
export function canonicalizeLanes16(word: number, nan: number): number {
  let lo = word & 0xffff
  let hi = (word >>> 16) & 0xffff
  if (lo === SENTINEL_LANE16) lo = nan
  if (hi === SENTINEL_LANE16) hi = nan
  return ((hi << 16) | lo) >>> 0
}
