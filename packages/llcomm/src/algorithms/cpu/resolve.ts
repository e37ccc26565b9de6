/**
 * The CPU backend's row of the capability table (../resolve.ts resolves from it, as it does for CUDA): every CPU
 * algorithm, why one cannot serve a call (LL16 has no 16-byte atomic store in JavaScript; a buffer too small for a
 * chunk), `auto`'s tie-break order and `ring` as the fallback that serves every shape. A pure function of its
 * inputs, so every rank of a per-rank view resolves the same algorithm.
 */
import type { AlgorithmChoice, AlgorithmName, Dtype, LlProtocol } from '../../api/types.js'
import { DTYPE_CODECS } from '../../dtype/codec.js'
import { LlcommError } from '../../errors.js'
import type { ChannelLayout } from '../../protocol/cpu/layout.js'
import type { TuningTable } from '../auto.js'
import { type AlgorithmCapabilities, resolveAlgorithm } from '../resolve.js'
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
  const caps: AlgorithmCapabilities = {
    backend: 'cpu',
    ranks: layout.ranks,
    available: CPU_ALGORITHM_NAMES,
    cannotServe: (name, c) => {
      const algorithm = CPU_ALGORITHMS[name]
      if (!algorithm) return `${name} does not exist on the cpu backend`
      const reason = cannotServe(algorithm, c, layout)
      return reason === undefined ? undefined : `${name} cannot serve this call: ${reason}`
    },
    autoPreference: CPU_AUTO_PREFERENCE,
    // ring serves every shape; under `deterministic` the resolver replaces it with DETERMINISTIC_FALLBACK.
    fallbacks: ['ring'],
    tuning: table,
  }
  const resolved = resolveAlgorithm(requested, { ...call, op: 'sum' }, caps)
  const algorithm = CPU_ALGORITHMS[resolved.algorithm] as CpuAlgorithm
  return resolved.fallbackReason ? { algorithm, fallbackReason: resolved.fallbackReason } : { algorithm }
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
