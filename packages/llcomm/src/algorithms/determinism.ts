/**
 * `deterministic: true` (issue 18 item 3): the result is the rank-order f32 sum rounded once to the dtype —
 * ((x_0 + x_1) + x_2) + ... + x_{N-1} in f32, every x_r widened exactly from its dtype, then one round-to-nearest-even
 * to the dtype — bit-identical whatever algorithm is asked for, whatever the size or chunking (each element's sum does
 * not depend on where the chunk boundaries fall), on both backends. This table says which algorithm computes exactly
 * that; `auto` then chooses among those only, and a requested one that does not is replaced (with the reason in
 * info.fallbackReason) or, with `fallback: false`, refused with UNSUPPORTED_ALGORITHM. Guarantee and limits:
 * docs/protocols.md, "Deterministic results".
 */
import type { AlgorithmName, Backend } from '../api/types.js'
import { LlcommError } from '../errors.js'

export interface DeterminismFacts {
  algorithm: AlgorithmName
  /** Computes the rank-order f32 sum rounded once, on this backend. */
  cpu: boolean
  cuda: boolean
  /** Why (or why not), in one sentence: the docs and the error messages quote it. */
  why: string
}

export const DETERMINISM_TABLE: readonly DeterminismFacts[] = [
  {
    algorithm: 'oneshot-ll',
    cpu: true,
    cuda: true,
    why: 'every rank receives every input and sums them in rank order 0..N-1 in f32, rounding once',
  },
  {
    algorithm: 'oneshot-sentinel',
    cpu: true,
    cuda: true,
    why: 'every rank receives every input and sums them in rank order 0..N-1 in f32, rounding once',
  },
  {
    algorithm: 'twoshot-sentinel',
    cpu: true,
    cuda: true,
    why: "each part's owner sums every rank's words in rank order 0..N-1 in f32, rounds once, and forwards the bits",
  },
  {
    algorithm: 'oneshot-barrier',
    cpu: true,
    cuda: true,
    why: 'every rank reads every staged input and sums them in rank order 0..N-1 in f32, rounding once',
  },
  {
    algorithm: 'twoshot-atomic',
    cpu: false,
    cuda: false,
    why: 'atomic adds land in arrival order, so the order of the f32 sum changes from call to call',
  },
  {
    algorithm: 'ring',
    cpu: false,
    cuda: false,
    why: 'partial sums travel around the ring, so each part is summed starting at its owner, not in rank order (and, with the CUDA option accumulation: dtype, rounded to the dtype at every hop)',
  },
  {
    algorithm: 'nccl',
    cpu: false,
    cuda: false,
    why: 'NCCL chooses its own algorithm and summation order by size and topology',
  },
  {
    algorithm: 'nccl-symmetric',
    cpu: false,
    cuda: false,
    why: 'NCCL chooses its own algorithm and summation order by size and topology',
  },
]

/** Serves every shape on both backends (it chunks at the buffer) and keeps determinism: the deterministic fallback. */
export const DETERMINISTIC_FALLBACK: AlgorithmName = 'oneshot-barrier'

export function determinismFacts(algorithm: AlgorithmName): DeterminismFacts {
  const row = DETERMINISM_TABLE.find((r) => r.algorithm === algorithm)
  if (!row) throw new LlcommError('UNSUPPORTED_ALGORITHM', `no determinism facts for ${algorithm}`, { algorithm })
  return row
}

export function keepsDeterminism(algorithm: AlgorithmName, backend: Backend): boolean {
  return determinismFacts(algorithm)[backend]
}

/** The algorithms of `available` that keep determinism on `backend`, in the given order. */
export function deterministicAlgorithms(available: readonly AlgorithmName[], backend: Backend): AlgorithmName[] {
  return available.filter((a) => keepsDeterminism(a, backend))
}

/**
 * Applies `deterministic: true` to an already resolved algorithm: kept when it keeps determinism, else replaced by
 * DETERMINISTIC_FALLBACK with the reason (fallback allowed) or refused with UNSUPPORTED_ALGORITHM.
 */
export function enforceDeterminism(
  resolved: { algorithm: AlgorithmName; fallbackReason?: string },
  backend: Backend,
  fallback: boolean,
): { algorithm: AlgorithmName; fallbackReason?: string } {
  const facts = determinismFacts(resolved.algorithm)
  if (facts[backend]) return resolved
  const reason = `${resolved.algorithm} does not give deterministic results: ${facts.why}`
  if (!fallback) {
    throw new LlcommError('UNSUPPORTED_ALGORITHM', `deterministic: true refuses ${resolved.algorithm}: ${facts.why}`, {
      algorithm: resolved.algorithm,
      reason,
    })
  }
  const earlier = resolved.fallbackReason ? `${resolved.fallbackReason}; then ` : ''
  return { algorithm: DETERMINISTIC_FALLBACK, fallbackReason: `${earlier}${reason}` }
}
