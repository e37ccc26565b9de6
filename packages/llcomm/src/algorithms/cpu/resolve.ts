/**
 * Which CPU algorithm serves a call: `auto` through the tuning table, then a fallback to `ring` when the chosen
 * algorithm cannot serve the call (reported as fallbackReason), or LlcommError when `fallback: false`.
 * With `deterministic`, `auto` chooses among the algorithms that keep it (determinism.ts), the fallback is
 * oneshot-barrier, and a requested algorithm that does not keep it is replaced or refused (enforceDeterminism).
 * A pure function of its inputs, so every rank of a per-rank view resolves the same algorithm.
 */
import type { AlgorithmChoice, AlgorithmName, Dtype, LlProtocol } from '../../api/types.js'
import { DTYPE_BYTES } from '../../api/types.js'
import { DTYPE_CODECS } from '../../dtype/codec.js'
import { LlcommError } from '../../errors.js'
import type { ChannelLayout } from '../../protocol/cpu/layout.js'
import { chooseAlgorithm, type TuningTable } from '../auto.js'
import { DETERMINISTIC_FALLBACK, deterministicAlgorithms, enforceDeterminism } from '../determinism.js'
import { CPU_ALGORITHMS, type CpuAlgorithm } from './index.js'

export const CPU_ALGORITHM_NAMES = Object.keys(CPU_ALGORITHMS) as AlgorithmName[]
/** Tie-break order of `auto` among algorithms the tuning table rates alike (exported for tests). */
export const CPU_AUTO_PREFERENCE: readonly AlgorithmName[] = ['oneshot-ll', 'twoshot-sentinel', 'ring']

export interface ResolvedCpuAlgorithm {
  algorithm: CpuAlgorithm
  fallbackReason?: string
}

export function resolveCpuAlgorithm(
  requested: AlgorithmChoice,
  call: { dtype: Dtype; count: number; protocol?: LlProtocol; fallback: boolean; deterministic?: boolean },
  layout: ChannelLayout,
  table: TuningTable,
): ResolvedCpuAlgorithm {
  if (!call.deterministic) return resolveAny(requested, call, layout, table)
  // Only among algorithms that keep determinism: `auto` from the start, a requested one after the usual rules.
  const names = deterministicAlgorithms(CPU_ALGORITHM_NAMES, 'cpu')
  const preference = [...deterministicAlgorithms(CPU_AUTO_PREFERENCE, 'cpu'), DETERMINISTIC_FALLBACK]
  const resolved = resolveAny(requested, call, layout, table, names, preference)
  const kept = enforceDeterminism(
    { algorithm: resolved.algorithm.name, fallbackReason: resolved.fallbackReason },
    'cpu',
    call.fallback,
  )
  const algorithm = CPU_ALGORITHMS[kept.algorithm] as CpuAlgorithm
  return kept.fallbackReason ? { algorithm, fallbackReason: kept.fallbackReason } : { algorithm }
}

function resolveAny(
  requested: AlgorithmChoice,
  call: { dtype: Dtype; count: number; protocol?: LlProtocol; fallback: boolean; deterministic?: boolean },
  layout: ChannelLayout,
  table: TuningTable,
  autoNames: readonly AlgorithmName[] = CPU_ALGORITHM_NAMES,
  preference: readonly AlgorithmName[] = CPU_AUTO_PREFERENCE,
): ResolvedCpuAlgorithm {
  const name =
    requested === 'auto'
      ? chooseAlgorithm(table, 'cpu', layout.ranks, call.count * DTYPE_BYTES[call.dtype], autoNames, preference)
      : requested
  const algorithm = CPU_ALGORITHMS[name]
  if (!algorithm) {
    throw new LlcommError('UNSUPPORTED_ALGORITHM', `algorithm ${name} does not exist on the cpu backend`, {
      algorithm: name,
    })
  }
  const reason = cannotServe(algorithm, call, layout)
  if (reason === undefined) return { algorithm }
  if (!call.fallback) {
    throw new LlcommError('UNSUPPORTED_ALGORITHM', `${name} cannot serve this call: ${reason}`, {
      algorithm: name,
      reason,
    })
  }
  // The fallback serves every shape: ring, or oneshot-barrier when the call must stay deterministic.
  const to = call.deterministic ? DETERMINISTIC_FALLBACK : 'ring'
  return { algorithm: CPU_ALGORITHMS[to] as CpuAlgorithm, fallbackReason: `${name}: ${reason}` }
}

function cannotServe(
  algorithm: CpuAlgorithm,
  call: { dtype: Dtype; protocol?: LlProtocol },
  layout: ChannelLayout,
): string | undefined {
  if (call.protocol === 'll16' && algorithm.name === 'oneshot-ll') {
    return 'LL16 packets need a 16-byte single-copy atomic store, which JavaScript Atomics do not have (ll8 only)'
  }
  if (algorithm.maxChunkWords(layout, DTYPE_CODECS[call.dtype]) < 1) {
    return `a ${layout.bufferBytes}-byte buffer holds no chunk at ${layout.ranks} ranks`
  }
  return undefined
}
