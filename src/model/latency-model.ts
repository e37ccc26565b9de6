/**
 * The latency model of one AllReduce call, linear in its constants so that it can be fitted by least squares:
 *
 *   T(alg, N, M) = kernelFloor + hops(alg, N) · hop + barriers(alg) · barrier(N) + wireBytes(alg, N, M) / linkBandwidth
 *                  [+ libraryOverhead for NCCL] [+ switchReduce for NVLS]
 *   hop        = 2 · L2 round trip + remote store                      (seed 000's speed-of-light hop)
 *   barrier(N) = barrierFixed + barrierPerPeer · (N−1) + barrierQuad · (N−1)²   (super-linear in N, seed 000)
 *
 * On the `virtual` topology (all ranks on one GPU) the bandwidth term uses the bytes of all N ranks, since they
 * share one memory system. A constant that is absent (null) leaves its term out and is named in missingTerms.
 */

import { LlcommError } from '../errors.js'
import type { AlgorithmStructure, PlatformConstants, PlatformTopology, WireShape } from './latency-tables.js'

/** The model's linear parameters, in the order used by the fit. */
export const FIT_PARAMS = [
  'kernelFloorUs',
  'hopUs',
  'barrierFixedUs',
  'barrierPerPeerUs',
  'barrierQuadUs',
  'usPerWireByte',
  'usPerAtomicByte',
  'libraryOverheadUs',
  'nvlsSwitchReduceUs',
] as const
export type FitParam = (typeof FIT_PARAMS)[number]
export type ParamValues = Record<FitParam, number | null>
export type Features = Record<FitParam, number>

export function wireShapeFactor(shape: WireShape, ranks: number): number {
  switch (shape) {
    case 'N-1':
      return ranks - 1
    case '(N-1)/N':
      return (ranks - 1) / ranks
    case '1':
      return 1
  }
}

/** Bytes each GPU moves over its links for one call of `bytes` per rank, payload efficiency included. */
export function wireBytesPerGpu(alg: AlgorithmStructure, ranks: number, bytes: number): number {
  return alg.wireCoefficient * bytes * wireShapeFactor(alg.wireShape, ranks)
}

export function barrierCountTerms(ranks: number): { fixed: number; perPeer: number; quad: number } {
  return { fixed: 1, perPeer: ranks - 1, quad: (ranks - 1) ** 2 }
}

/** How much of each parameter one call uses: the row of the fit's design matrix. */
export function modelFeatures(
  alg: AlgorithmStructure,
  ranks: number,
  bytes: number,
  topology: PlatformTopology,
): Features {
  if (!Number.isInteger(ranks) || ranks < 2)
    throw new LlcommError('INVALID_ARGUMENT', `ranks must be an integer ≥ 2, got ${ranks}`)
  if (!(bytes >= 0)) throw new LlcommError('INVALID_ARGUMENT', `bytes must be ≥ 0, got ${bytes}`)
  const b = barrierCountTerms(ranks)
  const wire = wireBytesPerGpu(alg, ranks, bytes)
  return {
    kernelFloorUs: 1,
    hopUs: alg.hopsFixed + alg.hopsPerPeer * (ranks - 1),
    barrierFixedUs: alg.barriers * b.fixed,
    barrierPerPeerUs: alg.barriers * b.perPeer,
    barrierQuadUs: alg.barriers * b.quad,
    usPerWireByte: topology === 'virtual' ? wire * ranks : wire,
    usPerAtomicByte:
      (topology === 'virtual' ? ranks : 1) *
      (alg.atomicCoefficient ?? 0) *
      bytes *
      wireShapeFactor(alg.wireShape, ranks),
    libraryOverheadUs: alg.libraryOverhead ? 1 : 0,
    nvlsSwitchReduceUs: alg.switchReduce ? 1 : 0,
  }
}

/** The linear parameters a platform's constants table implies (null where absent). */
export function paramsFromPlatform(p: PlatformConstants): ParamValues {
  const c = p.constants
  const l2 = c.l2RoundTripUs.value
  const store = c.remoteStoreUs.value
  const hop = c.hopUs.value ?? (l2 !== null && store !== null ? 2 * l2 + store : null)
  const link = c.linkGBs.value
  const atomic = c.atomicGBs.value
  return {
    kernelFloorUs: c.kernelFloorUs.value,
    hopUs: hop,
    barrierFixedUs: c.barrierFixedUs.value,
    barrierPerPeerUs: c.barrierPerPeerUs.value,
    barrierQuadUs: c.barrierQuadUs.value,
    // GB/s = 1e3 bytes per µs
    usPerWireByte: link !== null && link > 0 ? 1 / (link * 1e3) : null,
    usPerAtomicByte: atomic !== null && atomic > 0 ? 1 / (atomic * 1e3) : null,
    libraryOverheadUs: c.libraryOverheadUs.value,
    nvlsSwitchReduceUs: c.nvlsSwitchReduceUs.value,
  }
}

export interface LatencyPrediction {
  latencyUs: number
  /** Contribution of each term in µs (0 where the algorithm does not use it). */
  terms: {
    kernelFloorUs: number
    hopsUs: number
    barriersUs: number
    bandwidthUs: number
    libraryUs: number
    switchUs: number
  }
  /** Parameters the call needs that are absent from the table: the prediction leaves them out. */
  missingTerms: FitParam[]
}

export function predictFromParams(features: Features, params: ParamValues): LatencyPrediction {
  const missingTerms: FitParam[] = []
  const part = (p: FitParam): number => {
    if (features[p] === 0) return 0
    const v = params[p]
    if (v === null) {
      missingTerms.push(p)
      return 0
    }
    return features[p] * v
  }
  const terms = {
    kernelFloorUs: part('kernelFloorUs'),
    hopsUs: part('hopUs'),
    barriersUs: part('barrierFixedUs') + part('barrierPerPeerUs') + part('barrierQuadUs'),
    bandwidthUs: part('usPerWireByte'),
    atomicUs: part('usPerAtomicByte'),
    libraryUs: part('libraryOverheadUs'),
    switchUs: part('nvlsSwitchReduceUs'),
  }
  const latencyUs = Object.values(terms).reduce((a, b) => a + b, 0)
  return { latencyUs, terms, missingTerms }
}

export function predictLatency(
  alg: AlgorithmStructure,
  platform: PlatformConstants,
  ranks: number,
  bytes: number,
  params: ParamValues = paramsFromPlatform(platform),
): LatencyPrediction {
  return predictFromParams(modelFeatures(alg, ranks, bytes, platform.topology), params)
}

/** Cost of one global barrier at N ranks under `params` (null when a barrier constant is absent). */
export function barrierUs(params: ParamValues, ranks: number): number | null {
  const { barrierFixedUs: f, barrierPerPeerUs: p, barrierQuadUs: q } = params
  if (f === null || p === null || q === null) return null
  const b = barrierCountTerms(ranks)
  return f * b.fixed + p * b.perPeer + q * b.quad
}
