// The data of test/gpu/multiprocess-fused.test.ts (not a test file), shared by its ranks (multiprocess-fused-rank.ts)
// and its in-process reference: x, residual and weight of one rank and case, exactly representable in every dtype
// (multiples of 1/8), made from (case index, rank) alone so that both sides build the same bits. Also the
// allReduceMany groups (manyGroups, manyInputs) of the same test's many section.
import type { Dtype, TensorArray } from '../../src/api/types.js'
import type { FusedNormAlgorithm } from '../../src/backends/cuda/fused-launcher.js'
import { DTYPE_CODECS } from '../../src/dtype/index.js'
import { rng } from './gpu-harness.js'

export interface FusedShape {
  dtype: Dtype
  rows: number
  hidden: number
  algorithm: FusedNormAlgorithm | 'auto'
}
export const EPS = 1e-5

/** Every rank's call: 'auto' and each fused kernel forced, on shapes that take the split (cluster) kernels under
 * 'auto' (few rows of 8192) and the one-shot / two-shot (more rows), every dtype. */
export function fusedShapes(): FusedShape[] {
  const out: FusedShape[] = []
  for (const dtype of ['bf16', 'f16', 'f32'] as const)
    for (const [rows, hidden] of [
      [1, 4096],
      [4, 8192],
      [24, 4096],
    ])
      for (const algorithm of ['auto', 'oneshot', 'twoshot', 'split', 'split-ll', 'split-twoshot'] as const)
        out.push({ dtype, rows, hidden, algorithm })
  return out
}

function values(dtype: Dtype, n: number, next: () => number, k: number): TensorArray {
  const v = () => (Math.floor(next() * (2 * k + 1)) - k) / 8
  if (dtype === 'f32') return Float32Array.from({ length: n }, () => v())
  const codec = DTYPE_CODECS[dtype]
  return Uint16Array.from({ length: n }, () => codec.encodeLane(v()))
}

/** x, residual ([rows][hidden]) and weight ([hidden]) of `rank` in case `index`. */
export function fusedInputs(s: FusedShape, index: number, rank: number) {
  const next = rng(1000 * index + rank + 1)
  const n = s.rows * s.hidden
  return {
    x: values(s.dtype, n, next, 8),
    residual: values(s.dtype, n, next, 32),
    weight: values(s.dtype, s.hidden, rng(1000 * index + 999), 16),
  }
}

/** One allReduceMany call of the many section: `counts[b]` elements of buffer b, every rank alike. */
export interface ManyGroup {
  dtype: Dtype
  counts: number[]
}

/** Groups of 1 to 8 buffers of odd sizes (one launch, several: a buffer past one launch's lanes), every dtype. */
export function manyGroups(): ManyGroup[] {
  const out: ManyGroup[] = []
  for (const dtype of ['bf16', 'f16', 'f32'] as const)
    for (const counts of [[4097], [1, 37, 8191, 300, 5], [3, 1001, 17, 65_537, 9, 255, 2, 7777], [100_003, 13]])
      out.push({ dtype, counts })
  // an empty call: per process the signature block alone (one launch), in process no launch
  out.push({ dtype: 'bf16', counts: [0, 0] })
  return out
}

/** A device allocation for `bytes` (at least 16: an empty buffer still needs a valid, aligned pointer). */
export const allocBytes = (bytes: number) => Math.max(16, bytes)

/** The many section's mismatched call: the last rank passes MANY_MISMATCH_COUNT for buffer 1 (37 elsewhere). */
export const MANY_MISMATCH_GROUP: ManyGroup = { dtype: 'bf16', counts: [4096, 37, 300] }
export const MANY_MISMATCH_COUNT = 20

/** Each buffer's input of `rank` in many group `index`. */
export function manyInputs(g: ManyGroup, index: number, rank: number): TensorArray[] {
  return g.counts.map((n, b) => values(g.dtype, n, rng(1000 * index + 100 * b + rank + 1), 8))
}
