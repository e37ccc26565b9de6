/**
 * Shared pieces of the GPU tests (run by hand on the GPU machine: `LLCOMM_TEST_BACKEND=cuda node --test
 * dist/test/gpu/`, or scripts/gpu-test.sh which also writes the summary JSON). Every case is appended as one JSON
 * line to $LLCOMM_GPU_RESULTS so the script can summarize cases, passes and failures with their details.
 */
import { appendFileSync } from 'node:fs'
import type { Dtype, TensorArray } from '../../src/api/types.js'
import { DTYPE_CODECS } from '../../src/dtype/index.js'

export const ON_GPU = process.env.LLCOMM_TEST_BACKEND === 'cuda'
/** Reduced matrix (compute-sanitizer runs): fewer ranks, sizes and calls. */
export const REDUCED = process.env.LLCOMM_GPU_REDUCED === '1'
const PREFIX = process.env.LLCOMM_GPU_CASE_PREFIX ? `${process.env.LLCOMM_GPU_CASE_PREFIX}/` : ''

export interface CaseRecord {
  name: string
  passed: boolean
  [key: string]: unknown
}

export function recordCase(rec: CaseRecord): void {
  const file = process.env.LLCOMM_GPU_RESULTS
  if (!file) return
  appendFileSync(file, `${JSON.stringify({ ...rec, name: PREFIX + rec.name, at: new Date().toISOString() })}\n`)
}

/** Deterministic PRNG (mulberry32) so a failing case can be rerun with the same data. */
export function rng(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/** Adversarial bit patterns per dtype: NaN, ±0, ±Inf, subnormals, both sentinel patterns, extremes, ±1. */
export const ADVERSARIAL_BITS: Readonly<Record<Dtype, readonly number[]>> = {
  f32: [
    0x7fc00000, // quiet NaN
    0x00000000, // +0
    0x80000000, // -0
    0x7f800000, // +Inf
    0xff800000, // -Inf
    0x00000001, // smallest subnormal
    0x807fffff, // largest negative subnormal
    0xffffffff, // the device sentinel pattern (a NaN)
    0x7fa57fa5, // the cpu backend's sentinel pattern (a NaN)
    0x7f7fffff, // max finite
    0xff7fffff, // -max finite
    0x3f800000, // 1
    0xbf800000, // -1
    0x7f800001, // signalling NaN
  ],
  f16: [0x7e00, 0x0000, 0x8000, 0x7c00, 0xfc00, 0x0001, 0x83ff, 0xffff, 0x7fa5, 0x7bff, 0xfbff, 0x3c00, 0xbc00, 0x7c01],
  bf16: [
    0x7fc0, 0x0000, 0x8000, 0x7f80, 0xff80, 0x0001, 0x807f, 0xffff, 0x7fa5, 0x7f7f, 0xff7f, 0x3f80, 0xbf80, 0x7f81,
  ],
}

export type Pattern = 'random' | 'adversarial'

/** One rank's input: random in [-1, 1), or adversarial values (shifted per rank so specials meet each other). */
export function makeInput(
  dtype: Dtype,
  count: number,
  pattern: Pattern,
  rank: number,
  random: () => number,
): TensorArray {
  if (pattern === 'random') {
    if (dtype === 'f32') return Float32Array.from({ length: count }, () => random() * 2 - 1)
    const c = DTYPE_CODECS[dtype]
    return Uint16Array.from({ length: count }, () => c.encodeLane(random() * 2 - 1))
  }
  const bits = ADVERSARIAL_BITS[dtype]
  if (dtype === 'f32') {
    const w = new Uint32Array(count)
    for (let i = 0; i < count; i++) {
      // Most elements random, every third one special, so specials mix with ordinary values and with each other.
      w[i] =
        i % 3 === 0
          ? bits[(i / 3 + rank * 5) % bits.length]
          : new Uint32Array(Float32Array.of(random() * 2 - 1).buffer)[0]
    }
    return new Float32Array(w.buffer)
  }
  const c = DTYPE_CODECS[dtype]
  return Uint16Array.from({ length: count }, (_, i) =>
    i % 3 === 0 ? bits[(i / 3 + rank * 5) % bits.length] : c.encodeLane(random() * 2 - 1),
  )
}
