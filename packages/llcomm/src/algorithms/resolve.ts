/**
 * Which algorithm serves a call, from a backend's capability table, for both backends: `auto` through the tuning
 * table, then, when the chosen or requested algorithm cannot serve the call, the first fallback that can (reported
 * as fallbackReason, never silent), or UNSUPPORTED_ALGORITHM when `fallback: false`. With `deterministic`, only the
 * algorithms that keep the rank-order f32 sum (determinism.ts) take part: `auto` chooses among them, the fallback is
 * DETERMINISTIC_FALLBACK, and a requested one that does not keep it is replaced with the reason (or refused).
 * Deterministic in its inputs, so every rank resolves the same algorithm. A backend supplies only its table (what
 * it has and why it cannot serve a call).
 */

import type { AlgorithmChoice, AlgorithmName, Backend, Dtype, LlProtocol, ReduceOp } from '../api/types.js'
import { ALL_ALGORITHMS, DTYPE_BYTES } from '../api/types.js'
import { LlcommError } from '../errors.js'
import { chooseAlgorithm, type TuningTable } from './auto.js'
import { DETERMINISTIC_FALLBACK, deterministicAlgorithms, enforceDeterminism } from './determinism.js'

export interface ResolveCall {
  dtype: Dtype
  op: ReduceOp
  /** Elements per rank. */
  count: number
  protocol?: LlProtocol
  /**
   * What replaces an algorithm that cannot serve the call: true = the first of the table's fallbacks that can;
   * a name = that algorithm only (the cuda device path's `fallback: 'nccl'`); false = none (UNSUPPORTED_ALGORITHM).
   */
  fallback: boolean | AlgorithmName
  /** The rank-order f32 sum rounded once, whatever the algorithm (determinism.ts). */
  deterministic?: boolean
}

export interface AlgorithmCapabilities {
  backend: Backend
  ranks: number
  /** Algorithms this communicator has ('auto' excluded). */
  available: readonly AlgorithmName[]
  /** Why `algorithm` (one of `available`, or not) cannot serve `call`; undefined when it can. */
  cannotServe(algorithm: AlgorithmName, call: ResolveCall): string | undefined
  /** Tie-break order of `auto` among algorithms the tuning table rates alike. */
  autoPreference: readonly AlgorithmName[]
  /** Tried in order when the algorithm cannot serve the call: the first available one that can replaces it. */
  fallbacks: readonly AlgorithmName[]
  tuning: TuningTable
}

export interface ResolvedAlgorithm {
  algorithm: AlgorithmName
  fallbackReason?: string
}

export function resolveAlgorithm(
  requested: AlgorithmChoice,
  call: ResolveCall,
  caps: AlgorithmCapabilities,
): ResolvedAlgorithm {
  if (requested !== 'auto' && !ALL_ALGORITHMS.includes(requested)) {
    throw new LlcommError('UNSUPPORTED_ALGORITHM', `unknown algorithm ${JSON.stringify(requested)}`, {
      algorithm: requested,
    })
  }
  if (!call.deterministic) return resolveFrom(requested, call, caps)
  const replace = call.fallback !== false
  const only: AlgorithmCapabilities = {
    ...caps,
    available: deterministicAlgorithms(caps.available, caps.backend),
    autoPreference: [...deterministicAlgorithms(caps.autoPreference, caps.backend), DETERMINISTIC_FALLBACK],
    fallbacks: [DETERMINISTIC_FALLBACK],
  }
  const asked = requested === 'auto' ? undefined : enforceDeterminism({ algorithm: requested }, caps.backend, replace)
  const resolved = resolveFrom(asked?.algorithm ?? 'auto', { ...call, fallback: replace }, only)
  const reasons = [asked?.fallbackReason, resolved.fallbackReason].filter((r): r is string => r !== undefined)
  return reasons.length > 0 ? { algorithm: resolved.algorithm, fallbackReason: reasons.join('; then ') } : resolved
}

function resolveFrom(requested: AlgorithmChoice, call: ResolveCall, caps: AlgorithmCapabilities): ResolvedAlgorithm {
  const name =
    requested === 'auto'
      ? chooseAlgorithm(
          caps.tuning,
          caps.backend,
          caps.ranks,
          call.count * DTYPE_BYTES[call.dtype],
          caps.available,
          caps.autoPreference,
        )
      : requested
  const reason = caps.available.includes(name)
    ? caps.cannotServe(name, call)
    : (caps.cannotServe(name, call) ?? `${name} is not available on this ${caps.backend} communicator`)
  if (reason === undefined) return { algorithm: name }
  if (!call.fallback) {
    throw new LlcommError('UNSUPPORTED_ALGORITHM', reason, { algorithm: name, reason })
  }
  const candidates = call.fallback === true ? caps.fallbacks : [call.fallback]
  const to = candidates.find((a) => caps.available.includes(a) && caps.cannotServe(a, call) === undefined)
  if (!to && call.fallback !== true) {
    const why =
      caps.cannotServe(call.fallback, call) ?? `${call.fallback} is not available on this ${caps.backend} communicator`
    throw new LlcommError('UNSUPPORTED_ALGORITHM', `${reason}, and the ${call.fallback} fallback asked for: ${why}`, {
      algorithm: name,
      reason,
    })
  }
  if (!to) {
    throw new LlcommError('UNSUPPORTED_ALGORITHM', `${reason}, and no fallback is available`, {
      algorithm: name,
      reason,
    })
  }
  return { algorithm: to, fallbackReason: reason }
}
