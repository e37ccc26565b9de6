// The data of test/gpu/multiprocess-fused.test.ts (not a test file), shared by its ranks (multiprocess-fused-rank.ts)
// and its in-process reference: x, residual and weight of one rank and case, exactly representable in every dtype
// (multiples of 1/8), made from (case index, rank) alone so that both sides build the same bits.
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
