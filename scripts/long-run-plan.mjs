// The call plan of scripts/long-run.mjs, the same on every rank: call k's algorithm, dtype, element count and input
// set come from k alone. Inputs are small integers, so every sum is exact in every dtype (|sum| <= 8 x ranks, well
// inside bf16's 8-bit significand) and outputs are compared bit for bit with the expected sum.
import { DTYPE_CODECS } from 'llcomm/internal'

export const ALGORITHMS = [
  'oneshot-ll',
  'oneshot-sentinel',
  'twoshot-sentinel',
  'twoshot-atomic',
  'oneshot-barrier',
  'ring',
]
export const DTYPES = ['f32', 'bf16', 'f16']
/** Element counts: mostly small (the decode-step regime), some chunked (above the 8 KB test buffer). */
export const COUNTS = [1, 2, 7, 33, 64, 255, 256, 1000, 1023, 4099, 20_000]
const SETS = 4

function mix(k, salt) {
  let h = Math.imul((k ^ salt) >>> 0, 0x9e3779b1) >>> 0
  h ^= h >>> 15
  h = Math.imul(h, 0x85ebca77) >>> 0
  return (h ^ (h >>> 13)) >>> 0
}

export function callOf(k) {
  const c = mix(k, 3) % 100
  // 70% of calls at most 256 elements, 25% up to 4099, 5% 20,000.
  const count = c < 70 ? COUNTS[mix(k, 5) % 7] : c < 95 ? COUNTS[7 + (mix(k, 5) % 3)] : COUNTS[10]
  return {
    algorithm: ALGORITHMS[mix(k, 1) % ALGORITHMS.length],
    dtype: DTYPES[mix(k, 2) % DTYPES.length],
    count,
    set: mix(k, 4) % SETS,
  }
}

function value(call, rank, i) {
  return ((i * 7 + rank * 5 + call.set * 3 + call.count) % 17) - 8
}

export function inputOf(call, rank) {
  if (call.dtype === 'f32') return Float32Array.from({ length: call.count }, (_, i) => value(call, rank, i))
  const c = DTYPE_CODECS[call.dtype]
  return Uint16Array.from({ length: call.count }, (_, i) => c.encodeLane(value(call, rank, i)))
}

/** The expected output as raw words (u32 bits of f32, u16 lanes otherwise). */
export function expectedWords(call, ranks) {
  const sums = Array.from({ length: call.count }, (_, i) => {
    let s = 0
    for (let r = 0; r < ranks; r++) s += value(call, r, i)
    return s
  })
  if (call.dtype === 'f32') return new Uint32Array(Float32Array.from(sums).buffer)
  const c = DTYPE_CODECS[call.dtype]
  return Uint16Array.from(sums, (s) => c.encodeLane(s))
}
