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
 *
 * With structure 'kernel' (a platform measured with llcomm's kernels), an algorithm that has an llcomm kernel is
 * counted from its launch shape instead (kernel-counts.ts):
 *
 *   T = launches · kernelFloor + launches · hopsFixed · hop + pollRounds · pollRound + storeRounds · storeRound
 *       + serialRecvs · serialRecv + rearms · rearm + atomicLineRounds · atomicLine + rearmBytes / rearmRate + ringSteps · ringStep + barrierCount · barrier(N) + wireBytes / linkBandwidth [+ atomic bytes / atomic rate]
 */

import type { Dtype } from '../api/types.js'
import { LLCOMM_MAX_RANKS } from '../backends/cuda/abi.js'
import { LlcommError } from '../errors.js'
import { kernelCounts } from './kernel-counts.js'
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
  'pollRoundUs',
  'storeRoundUs',
  'ringStepUs',
  'serialRecvUs',
  'rearmUs',
  'atomicLineUs',
  'usPerRearmByte',
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
export interface FeatureOptions {
  /** 'kernel': count launches, poll rounds, store rounds and ring steps from llcomm's launch shapes. */
  structure?: 'seed' | 'kernel'
  /** Element type of the call (launch shapes align pieces to 16 bytes of elements); default bf16. */
  dtype?: Dtype
}

export function modelFeatures(
  alg: AlgorithmStructure,
  ranks: number,
  bytes: number,
  topology: PlatformTopology,
  options: FeatureOptions = {},
): Features {
  if (!Number.isInteger(ranks) || ranks < 2)
    throw new LlcommError('INVALID_ARGUMENT', `ranks must be an integer ≥ 2, got ${ranks}`)
  if (!(bytes >= 0)) throw new LlcommError('INVALID_ARGUMENT', `bytes must be ≥ 0, got ${bytes}`)
  const b = barrierCountTerms(ranks)
  const wire = wireBytesPerGpu(alg, ranks, bytes)
  const bandwidth = {
    usPerWireByte: topology === 'virtual' ? wire * ranks : wire,
    usPerAtomicByte:
      (topology === 'virtual' ? ranks : 1) *
      (alg.atomicCoefficient ?? 0) *
      bytes *
      wireShapeFactor(alg.wireShape, ranks),
  }
  // Beyond LLCOMM_MAX_RANKS no llcomm kernel runs: the seed form stands in (scale simulations to 72 GPUs).
  if (
    options.structure === 'kernel' &&
    alg.kernel !== undefined &&
    alg.name !== undefined &&
    ranks <= LLCOMM_MAX_RANKS
  ) {
    const k = kernelCounts(alg.name, alg.kernel, ranks, bytes, options.dtype)
    return {
      kernelFloorUs: k.launches,
      hopUs: k.launches * alg.hopsFixed,
      barrierFixedUs: k.barriers * b.fixed,
      barrierPerPeerUs: k.barriers * b.perPeer,
      barrierQuadUs: k.barriers * b.quad,
      ...bandwidth,
      libraryOverheadUs: 0,
      nvlsSwitchReduceUs: 0,
      pollRoundUs: k.pollRounds,
      storeRoundUs: k.storeRounds,
      ringStepUs: k.ringSteps,
      serialRecvUs: k.serialRecvs,
      rearmUs: k.rearms,
      atomicLineUs: k.atomicLineRounds,
      usPerRearmByte: topology === 'virtual' ? k.rearmBytes * ranks : k.rearmBytes,
    }
  }
  return {
    kernelFloorUs: 1,
    hopUs: alg.hopsFixed + alg.hopsPerPeer * (ranks - 1),
    barrierFixedUs: alg.barriers * b.fixed,
    barrierPerPeerUs: alg.barriers * b.perPeer,
    barrierQuadUs: alg.barriers * b.quad,
    ...bandwidth,
    libraryOverheadUs: alg.libraryOverhead ? 1 : 0,
    nvlsSwitchReduceUs: alg.switchReduce ? 1 : 0,
    pollRoundUs: 0,
    storeRoundUs: 0,
    ringStepUs: 0,
    serialRecvUs: 0,
    rearmUs: 0,
    atomicLineUs: 0,
    usPerRearmByte: 0,
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
    pollRoundUs: c.pollRoundUs.value,
    storeRoundUs: c.storeRoundUs.value,
    ringStepUs: c.ringStepUs.value,
    serialRecvUs: c.serialRecvUs.value,
    rearmUs: c.rearmUs.value,
    atomicLineUs: c.atomicLineUs.value,
    usPerRearmByte: c.rearmGBs.value !== null && c.rearmGBs.value > 0 ? 1 / (c.rearmGBs.value * 1e3) : null,
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
    atomicUs: number
    libraryUs: number
    switchUs: number
    /** structure 'kernel': poll rounds, store rounds and ring steps of the launch shapes */
    pollsUs: number
    storesUs: number
    ringStepsUs: number
    serialRecvsUs: number
    rearmsUs: number
    atomicLinesUs: number
    rearmBandwidthUs: number
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
    pollsUs: part('pollRoundUs'),
    storesUs: part('storeRoundUs'),
    ringStepsUs: part('ringStepUs'),
    serialRecvsUs: part('serialRecvUs'),
    rearmsUs: part('rearmUs'),
    atomicLinesUs: part('atomicLineUs'),
    rearmBandwidthUs: part('usPerRearmByte'),
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
  dtype?: Dtype,
): LatencyPrediction {
  return predictFromParams(
    modelFeatures(alg, ranks, bytes, platform.topology, { structure: platform.structure, dtype }),
    params,
  )
}

/** Cost of one global barrier at N ranks under `params` (null when a barrier constant is absent). */
export function barrierUs(params: ParamValues, ranks: number): number | null {
  const { barrierFixedUs: f, barrierPerPeerUs: p, barrierQuadUs: q } = params
  if (f === null || p === null || q === null) return null
  const b = barrierCountTerms(ranks)
  return f * b.fixed + p * b.perPeer + q * b.quad
}
