/**
 * The dtype table (STYLE habit 8): how a dtype's values pack into the 32-bit words that LL buffers carry, how a
 * lane decodes to f32 for accumulation, and how an f32 result rounds back. f16/bf16 pack two values per word
 * (element 2i in the low half, 2i+1 in the high half) and accumulate in f32 (Math.fround per add).
 */
import type { Dtype } from '../api/types.js'
import { f32FromBits, f32ToBits } from './f32.js'
import { bf16DecodeTable, bf16FromF32Bits, f16DecodeTable, f16FromF32Bits } from './half.js'
import {
  BF16_CANONICAL_NAN,
  canonicalizeF32Word,
  canonicalizeLanes16,
  F16_CANONICAL_NAN,
  F32_CANONICAL_NAN,
} from './sentinels.js'

export interface DtypeCodec {
  readonly dtype: Dtype
  /** Values per 32-bit word: 1 for f32, 2 for f16/bf16. */
  readonly lanesPerWord: 1 | 2
  /** Bits per value. */
  readonly laneBits: 32 | 16
  readonly canonicalNan: number
  /** Lane bits -> f32 value (exact). */
  decodeLane(bits: number): number
  /** f32 value -> lane bits (round-to-nearest-even, canonical NaN). */
  encodeLane(x: number): number
  /** A word as the sender must write it into a sentinel slot: sentinel lanes become the canonical NaN. */
  canonicalizeWord(word: number): number
}

const f16Decode = f16DecodeTable()
const bf16Decode = bf16DecodeTable()

export const DTYPE_CODECS: Readonly<Record<Dtype, DtypeCodec>> = {
  f32: {
    dtype: 'f32',
    lanesPerWord: 1,
    laneBits: 32,
    canonicalNan: F32_CANONICAL_NAN,
    decodeLane: f32FromBits,
    encodeLane: f32ToBits,
    canonicalizeWord: canonicalizeF32Word,
  },
  f16: {
    dtype: 'f16',
    lanesPerWord: 2,
    laneBits: 16,
    canonicalNan: F16_CANONICAL_NAN,
    decodeLane: (bits) => f16Decode[bits & 0xffff],
    encodeLane: (x) => f16FromF32Bits(f32ToBits(x)),
    canonicalizeWord: (w) => canonicalizeLanes16(w, F16_CANONICAL_NAN),
  },
  bf16: {
    dtype: 'bf16',
    lanesPerWord: 2,
    laneBits: 16,
    canonicalNan: BF16_CANONICAL_NAN,
    decodeLane: (bits) => bf16Decode[bits & 0xffff],
    encodeLane: (x) => bf16FromF32Bits(f32ToBits(x)),
    canonicalizeWord: (w) => canonicalizeLanes16(w, BF16_CANONICAL_NAN),
  },
}

/** Words needed for `count` elements of a dtype (the last 16-bit word may carry one padding lane). */
export function wordsForCount(dtype: Dtype, count: number): number {
  return DTYPE_CODECS[dtype].lanesPerWord === 2 ? Math.ceil(count / 2) : count
}
