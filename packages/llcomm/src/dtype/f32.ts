/**
 * f32 <-> raw 32-bit patterns. Everything that crosses an LL buffer is a bit pattern, never a float: comparing
 * floats is how a flush-to-zero compare once turned subnormals into the sentinel (docs/design.md §2).
 */
import { F32_CANONICAL_NAN } from './sentinels.js'

const scratchF32 = new Float32Array(1)
const scratchU32 = new Uint32Array(scratchF32.buffer)

/** The f32 value of a 32-bit pattern (signed or unsigned int input both work). */
export function f32FromBits(bits: number): number {
  scratchU32[0] = bits
  return scratchF32[0]
}

/** The bit pattern of Math.fround(x) as an unsigned 32-bit integer; every NaN becomes the canonical quiet NaN. */
export function f32ToBits(x: number): number {
  if (Number.isNaN(x)) return F32_CANONICAL_NAN
  scratchF32[0] = x
  return scratchU32[0]
}
