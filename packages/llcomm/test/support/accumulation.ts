// The f32-accumulation inputs (issue 18 items 4 and 5), shared by the CPU and GPU tests, and their expected result.
import type { Dtype } from '../../src/api/types.js'
import { DTYPE_CODECS } from '../../src/dtype/codec.js'

/**
 * f32-accumulation input: rank 0 holds a large value, the others small ones that only survive when the sum is
 * carried in f32 (16-bit partial sums round them away): element i of rank r is (-1)^i * (r == 0 ? 256 : 0.25 + ...).
 */
export function accumulationInput(dtype: Dtype, count: number, seed: number, rank: number): Float32Array | Uint16Array {
  const f = new Float32Array(count)
  for (let i = 0; i < count; i++) {
    const sign = (i + seed) % 2 === 0 ? 1 : -1
    f[i] = rank === 0 ? sign * 256 : sign * (0.25 + ((i * 7 + rank * 3 + seed) % 4) * 0.125)
  }
  if (dtype === 'f32') return f
  const out = new Uint16Array(count)
  const bits = new Uint32Array(f.buffer)
  for (let i = 0; i < count; i++) {
    // exact conversions: every value above is exactly representable in f16 and bf16
    if (dtype === 'bf16') out[i] = bits[i] >>> 16
    else {
      const b = bits[i]
      const sign = (b >>> 16) & 0x8000
      const exp = ((b >>> 23) & 0xff) - 127 + 15
      out[i] = sign | (exp << 10) | ((b >>> 13) & 0x3ff)
    }
  }
  return out
}

/** The exact sum of the accumulation inputs (exact in f32: multiples of 1/8 below 2^11), rounded once: raw bits. */
export function expectedAccumulation(dtype: Dtype, count: number, seed: number, ranks: number): number[] {
  const codec = DTYPE_CODECS[dtype]
  const out: number[] = []
  const inputs = Array.from({ length: ranks }, (_, r) => accumulationInput(dtype, count, seed, r))
  for (let i = 0; i < count; i++) {
    let sum = 0
    for (let r = 0; r < ranks; r++) {
      const x = inputs[r][i]
      sum += dtype === 'f32' ? x : codec.decodeLane(x)
    }
    out.push(dtype === 'f32' ? new Uint32Array(Float32Array.of(sum).buffer)[0] : codec.encodeLane(sum))
  }
  return out
}
