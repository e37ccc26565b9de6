/**
 * The latency model of one AllReduce call, linear in its constants (seed form) or homogeneous of degree one in
 * them (kernel structure), so that it can be fitted by non-negative least squares:
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
 * counted from its launch shapes instead (kernel-counts.ts), launch by launch:
 *
 *   T = Σ_launches [ kernelFloor + smax_q(L, B) + max(blockBytes / blockRate, memoryBytes / memoryRate) ]
 *   smax_q(L, B) = (L^q + B^q)^(1/q)   (q = overlapExponent)
 *   L = hopsFixed·hop + pollRounds·pollRound + storeRounds·storeRound + serialRecvs·serialRecv + rearms·rearm
 *       + atomicLineRounds·atomicLine + ringSteps·ringStep + barriers·barrier(N) + spreadWindows·spreadWindow
 *       + stagedReduces·stagedReduce + halfWordSentinelSlots·halfWordSentinel + blockAccesses·blockAccess
 *   B = wireBytes / linkBandwidth + atomicBytes / atomicRate + rearmBytes / rearmRate      (all N ranks on virtual)
 *
 * On `virtual` storeRounds is the block's store instructions in full-block rounds (storeLaneRounds: a one-shot
 * block pays slots / T of a round per peer): every rank's blocks store into
 * the one L2, whose store throughput, not one thread's chain of fire-and-forget stores, sets the cost. Over NVLink
 * (h200) it stays one thread's chain, r·(N−1). Also on `virtual` only, twoshot-atomic's all-gather pays
 * serialRecvs + secondLineRecvs serial receives (a receiving warp whose words come from two owner lines waits for
 * both, kernel-counts.ts); h200 keeps the form its constants were fitted with.
 * L is one thread's critical path (blockAccesses: the block's memory requests, issued one after another through its
 * SM, stretch every thread's path), B what the launch asks of the memory system; the hard maximum (MAX_GROUPS) is a
 * block's own L2 traffic at one SM's share or the message's operands (2·M per rank) at the memory's rate.
 * For a fixed q the model is homogeneous of degree one in its constants (T = ∇T · θ), which is what lets the fit
 * stay NNLS (calibrate.ts); the maximum is piecewise linear, so q = 1 (or absent) is linear on each piece.
 */

import type { Dtype } from 'llcomm/internal'
import { LLCOMM_MAX_RANKS, LlcommError } from 'llcomm/internal'
import {
  type KernelCounts,
  type KernelShape,
  kernelCounts,
  kernelLaunches,
  type LaunchCounting,
} from './kernel-counts.js'
import type {
  AlgorithmStructure,
  PlatformConstants,
  PlatformTopology,
  SourcedValue,
  WireShape,
} from './latency-tables.js'
import { candidateLabel, type NcclPrediction, ncclConstantsFrom, predictNccl } from './nccl-model.js'

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
  'spreadWindowUs',
  'stagedReduceUs',
  'halfWordSentinelUs',
  'blockAccessUs',
  'usPerBlockByte',
  'usPerMemoryByte',
] as const
export type FitParam = (typeof FIT_PARAMS)[number]
/** Parameters added with the peer-parallel path and the per-block bytes: optional in ParamValues (absent = null). */
type OptionalParam =
  | 'spreadWindowUs'
  | 'stagedReduceUs'
  | 'halfWordSentinelUs'
  | 'blockAccessUs'
  | 'usPerBlockByte'
  | 'usPerMemoryByte'
/**
 * The linear parameters, plus the exponent q of the smooth maximum that overlaps a launch's latency path with its
 * bandwidth time (structure 'kernel' only; absent or null = 1, the terms add).
 */
export type ParamValues = Record<Exclude<FitParam, OptionalParam>, number | null> &
  Partial<Record<OptionalParam, number | null>> & { overlapExponent?: number | null }
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

/**
 * Structure 'kernel' also takes LaunchCounting (kernel-counts.ts): the buffer, block targets, twoshot-sentinel
 * all-gather, accumulation and twoshot-sentinel spread-path broadcast the launches are counted with; each absent one
 * is the model's own (modelCounting).
 */
export interface FeatureOptions extends LaunchCounting {
  /** 'kernel': count launches, poll rounds, store rounds and ring steps from llcomm's launch shapes. */
  structure?: 'seed' | 'kernel'
  /** Element type of the call (launch shapes align pieces to 16 bytes of elements); default bf16. */
  dtype?: Dtype
}

const ZERO_FEATURES: Features = Object.fromEntries(FIT_PARAMS.map((p) => [p, 0])) as Features

function checkCall(ranks: number, bytes: number): void {
  if (!Number.isInteger(ranks) || ranks < 2)
    throw new LlcommError('INVALID_ARGUMENT', `ranks must be an integer ≥ 2, got ${ranks}`)
  if (!(bytes >= 0)) throw new LlcommError('INVALID_ARGUMENT', `bytes must be ≥ 0, got ${bytes}`)
}

/**
 * kernelLaunches' / kernelCounts' arguments for one call of `alg`: its kernel shape, and the dtype and counting
 * (buffer, block targets, all-gather kernel, accumulation, twoshot-sentinel broadcast, twoshot-atomic all-gather) of
 * `options`.
 */
function countingArgs(alg: AlgorithmStructure, ranks: number, bytes: number, options: FeatureOptions) {
  const { bufferBytes, blockTargets, allGather, accumulation, twoshotBroadcast, twoshotAtomicAllGather } = options
  const counting: LaunchCounting = {
    bufferBytes,
    blockTargets,
    allGather,
    accumulation,
    twoshotBroadcast,
    twoshotAtomicAllGather,
  }
  return [alg.name as string, alg.kernel as KernelShape, ranks, bytes, options.dtype, counting] as const
}

/** Beyond LLCOMM_MAX_RANKS no llcomm kernel runs: the seed form stands in (scale simulations to 72 GPUs). */
function usesKernelStructure(alg: AlgorithmStructure, ranks: number, options: FeatureOptions): boolean {
  return (
    options.structure === 'kernel' && alg.kernel !== undefined && alg.name !== undefined && ranks <= LLCOMM_MAX_RANKS
  )
}

/**
 * Bytes moved for `messageBytes` per rank: over the links, or on `virtual` inside the one GPU (all N ranks'). Of
 * them, `wideReduceScatterBytes` reduce-scatter at twice the width (f16/bf16 with f32 accumulation: ring, twoshot-
 * atomic; kernel-counts.ts): the reduce-scatter half of their wire bytes and all of their red.add bytes count twice.
 */
function byteFeatures(
  alg: AlgorithmStructure,
  ranks: number,
  messageBytes: number,
  topology: PlatformTopology,
  wideReduceScatterBytes = 0,
) {
  const everyRank = topology === 'virtual' ? ranks : 1
  return {
    usPerWireByte: everyRank * wireBytesPerGpu(alg, ranks, messageBytes + wideReduceScatterBytes / 2),
    usPerAtomicByte:
      everyRank *
      (alg.atomicCoefficient ?? 0) *
      (messageBytes + wideReduceScatterBytes) *
      wireShapeFactor(alg.wireShape, ranks),
  }
}

/** Kernel counts as features: each count multiplies its per-event constant; bytes multiply a µs-per-byte. */
function kernelFeatures(alg: AlgorithmStructure, ranks: number, k: KernelCounts, topology: PlatformTopology): Features {
  const b = barrierCountTerms(ranks)
  return {
    ...ZERO_FEATURES,
    kernelFloorUs: k.launches,
    hopUs: k.launches * alg.hopsFixed,
    barrierFixedUs: k.barriers * b.fixed,
    barrierPerPeerUs: k.barriers * b.perPeer,
    barrierQuadUs: k.barriers * b.quad,
    pollRoundUs: k.pollRounds,
    // on virtual every rank's blocks store into the one L2: a round costs the store instructions the block issues
    storeRoundUs: topology === 'virtual' ? k.storeLaneRounds : k.storeRounds,
    // twoshot-sentinel's pull kernel: each publish flag is a ring step's hand-off, event for event (twoshot_sentinel.cu
    // kPull: __syncthreads, thread 0's release store at .sys scope, the waiting threads' acquire polls, __syncthreads;
    // flags.cuh llcBlockRingSignal / llcBlockRingWait), so it takes the ring step's price. Its waits for N−1 owners'
    // flags run in parallel (one thread each), so the hand-off is one, not N−1.
    ringStepUs: k.ringSteps + k.publishFlags,
    // on virtual, a twoshot-atomic receiving warp whose words span two owner lines waits once more per owner
    serialRecvUs: topology === 'virtual' ? k.serialRecvs + k.secondLineRecvs : k.serialRecvs,
    rearmUs: k.rearms,
    atomicLineUs: k.atomicLineRounds,
    spreadWindowUs: k.spreadWindows,
    stagedReduceUs: k.stagedReduces,
    halfWordSentinelUs: k.halfWordSentinelSlots,
    blockAccessUs: k.blockAccesses,
    usPerBlockByte: k.blockBytes,
    // every rank's input read and output written (on virtual, all N ranks' on the one GPU's memory)
    usPerMemoryByte: (topology === 'virtual' ? ranks : 1) * 2 * k.messageBytes,
    ...byteFeatures(alg, ranks, k.messageBytes, topology, k.wideReduceScatterBytes),
    usPerRearmByte: topology === 'virtual' ? k.rearmBytes * ranks : k.rearmBytes,
  }
}

/**
 * The two sides of a launch that may overlap: its latency path (per-thread chains of polls, stores, receives,
 * barriers and per-block work) and the bandwidth the whole launch needs from the one memory system (wire, atomic
 * and re-armed bytes of every rank). The launch costs smax(latency, bandwidth) = (L^q + B^q)^(1/q): q = 1 adds
 * them, a large q takes the longer one. The launch floor is outside: it is paid before either starts.
 */
export const OVERLAPPED_PAIR: readonly [readonly FitParam[], readonly FitParam[]] = [
  [
    'hopUs',
    'barrierFixedUs',
    'barrierPerPeerUs',
    'barrierQuadUs',
    'pollRoundUs',
    'storeRoundUs',
    'ringStepUs',
    'serialRecvUs',
    'rearmUs',
    'atomicLineUs',
    'spreadWindowUs',
    'stagedReduceUs',
    'halfWordSentinelUs',
    'blockAccessUs',
  ],
  ['usPerWireByte', 'usPerAtomicByte', 'usPerRearmByte'],
]

/**
 * Groups of terms of which a launch pays the largest (a hard maximum), added to the launch's time: a block's own
 * bytes through L2 at one SM's share (usPerBlockByte), or the message's bytes — every rank's input read and output
 * written — at the memory's rate (usPerMemoryByte; the bench rotates four input and output sets, so at large sizes
 * they do not stay in L2). A block cannot go faster than its SM, nor the call faster than memory delivers its
 * operands.
 */
export const MAX_GROUPS: readonly (readonly FitParam[])[] = [['usPerBlockByte', 'usPerMemoryByte']]

/**
 * The model's terms for one call, in the form the prediction combines them:
 *   T = fixed · θ + Σ_launch groups times · smax(first · θ, second · θ)
 * with smax(x, y) = (x^q + y^q)^(1/q) for the platform's overlap exponent q (q = 1: the two add; large q: the
 * launch waits for the longer of the two). first and second are OVERLAPPED_PAIR's terms; every other term adds.
 * The seed form has no overlapped pairs.
 */
export interface ModelTerms {
  /** Terms that add (the whole seed form). */
  fixed: Features
  overlapped: { times: number; first: Features; second: Features }[]
  /** MAX_GROUPS per launch group: times · max over sides of side · θ. The seed form has none. */
  maxed: { times: number; sides: Features[] }[]
}

export function modelTerms(
  alg: AlgorithmStructure,
  ranks: number,
  bytes: number,
  topology: PlatformTopology,
  options: FeatureOptions = {},
): ModelTerms {
  checkCall(ranks, bytes)
  if (!usesKernelStructure(alg, ranks, options))
    return { fixed: modelFeatures(alg, ranks, bytes, topology, options), overlapped: [], maxed: [] }
  const groups = kernelLaunches(...countingArgs(alg, ranks, bytes, options))
  const fixed = { ...ZERO_FEATURES }
  const overlapped: ModelTerms['overlapped'] = []
  const maxed: ModelTerms['maxed'] = []
  const [firstParams, secondParams] = OVERLAPPED_PAIR
  const maxedParams = MAX_GROUPS.flat()
  for (const g of groups) {
    const f = kernelFeatures(alg, ranks, g.counts, topology)
    const first = { ...ZERO_FEATURES }
    const second = { ...ZERO_FEATURES }
    for (const p of firstParams) first[p] = f[p]
    for (const p of secondParams) second[p] = f[p]
    for (const p of FIT_PARAMS)
      if (!firstParams.includes(p) && !secondParams.includes(p) && !maxedParams.includes(p)) fixed[p] += g.times * f[p]
    if (FIT_PARAMS.some((p) => first[p] !== 0 || second[p] !== 0)) overlapped.push({ times: g.times, first, second })
    for (const group of MAX_GROUPS) {
      if (group.every((p) => f[p] === 0)) continue
      maxed.push({ times: g.times, sides: group.map((p) => ({ ...ZERO_FEATURES, [p]: f[p] })) })
    }
  }
  return { fixed, overlapped, maxed }
}

function dot(f: Features, params: ParamValues): number {
  let s = 0
  for (const p of FIT_PARAMS) if (f[p] !== 0) s += f[p] * (params[p] ?? 0)
  return s
}

/**
 * The gradient of T with respect to the linear parameters at `params` (the row of the fit's design matrix).
 * smax is homogeneous of degree one, so T = gradient · θ exactly (Euler): the Gauss–Newton step of the fit is an
 * NNLS solve on this gradient.
 */
export function termsGradient(terms: ModelTerms, params: ParamValues, additive = false): Features {
  const q = additive ? 1 : (params.overlapExponent ?? 1)
  const out = { ...terms.fixed }
  for (const g of terms.maxed) {
    // the later side carries the gradient (a tie splits it, so that terms still at 0 can all move)
    const values = g.sides.map((side) => dot(side, params))
    const top = Math.max(...values)
    const tied = values.filter((v) => v === top).length
    g.sides.forEach((side, i) => {
      const w = additive ? 1 : values[i] === top ? 1 / tied : 0
      if (w > 0) for (const p of FIT_PARAMS) out[p] += g.times * w * side[p]
    })
  }
  for (const g of terms.overlapped) {
    const x = dot(g.first, params)
    const y = dot(g.second, params)
    let wx = 1
    let wy = 1
    if (q !== 1 && x + y > 0) {
      const sm = smoothMax(x, y, q)
      wx = x > 0 ? (x / sm) ** (q - 1) : 0
      wy = y > 0 ? (y / sm) ** (q - 1) : 0
    }
    for (const p of FIT_PARAMS) out[p] += g.times * (wx * g.first[p] + wy * g.second[p])
  }
  return out
}

/** (x^q + y^q)^(1/q), computed without overflow; q = Infinity gives max(x, y). */
export function smoothMax(x: number, y: number, q: number): number {
  const m = Math.max(x, y)
  if (m <= 0) return 0
  if (!Number.isFinite(q)) return m
  return m * ((x / m) ** q + (y / m) ** q) ** (1 / q)
}

/**
 * The prediction from structured terms. The breakdown scales an overlapped pair's terms by smax(x, y) / (x + y),
 * so the terms still add up to latencyUs.
 */
export function predictFromTerms(terms: ModelTerms, params: ParamValues): LatencyPrediction {
  if (terms.overlapped.length === 0 && terms.maxed.length === 0) return predictFromParams(terms.fixed, params)
  const q = params.overlapExponent ?? 1
  const scaled = { ...terms.fixed }
  for (const g of terms.maxed) {
    // the later side only (the first of equals; an absent constant counts as 0 here)
    const values = g.sides.map((side) => dot(side, params))
    const later = g.sides[values.indexOf(Math.max(...values))]
    for (const p of FIT_PARAMS) scaled[p] += g.times * later[p]
  }
  for (const g of terms.overlapped) {
    const x = dot(g.first, params)
    const y = dot(g.second, params)
    const share = x + y > 0 ? smoothMax(x, y, q) / (x + y) : 1
    for (const p of FIT_PARAMS) scaled[p] += g.times * share * (g.first[p] + g.second[p])
  }
  return predictFromParams(scaled, params)
}

/**
 * How much of each parameter one call uses, every term added (the seed form's design-matrix row; for kernel
 * structure the sum over launches with q = 1 and both sides of each MAX_GROUPS maximum added: the columns the rows
 * use, not a prediction). modelTerms keeps the launches apart.
 */
export function modelFeatures(
  alg: AlgorithmStructure,
  ranks: number,
  bytes: number,
  topology: PlatformTopology,
  options: FeatureOptions = {},
): Features {
  checkCall(ranks, bytes)
  if (usesKernelStructure(alg, ranks, options)) {
    const k = kernelCounts(...countingArgs(alg, ranks, bytes, options))
    return kernelFeatures(alg, ranks, k, topology)
  }
  const b = barrierCountTerms(ranks)
  return {
    ...ZERO_FEATURES,
    kernelFloorUs: 1,
    hopUs: alg.hopsFixed + alg.hopsPerPeer * (ranks - 1),
    barrierFixedUs: alg.barriers * b.fixed,
    barrierPerPeerUs: alg.barriers * b.perPeer,
    barrierQuadUs: alg.barriers * b.quad,
    ...byteFeatures(alg, ranks, bytes, topology),
    libraryOverheadUs: alg.libraryOverhead ? 1 : 0,
    nvlsSwitchReduceUs: alg.switchReduce ? 1 : 0,
    pollRoundUs: 0,
    storeRoundUs: 0,
    ringStepUs: 0,
    serialRecvUs: 0,
    rearmUs: 0,
  }
}

/** µs per byte of a rate in GB/s (1 GB/s = 10³ bytes per µs): 0 when unbounded, null when absent. */
function usPerByte(rate: SourcedValue): number | null {
  if (rate.unbounded) return 0
  return rate.value !== null && rate.value > 0 ? 1 / (rate.value * 1e3) : null
}

/** The linear parameters a platform's constants table implies (null where absent). */
export function paramsFromPlatform(p: PlatformConstants): ParamValues {
  const c = p.constants
  const l2 = c.l2RoundTripUs.value
  const store = c.remoteStoreUs.value
  const hop = c.hopUs.value ?? (l2 !== null && store !== null ? 2 * l2 + store : null)
  return {
    kernelFloorUs: c.kernelFloorUs.value,
    hopUs: hop,
    barrierFixedUs: c.barrierFixedUs.value,
    barrierPerPeerUs: c.barrierPerPeerUs.value,
    barrierQuadUs: c.barrierQuadUs.value,
    // GB/s = 1e3 bytes per µs
    usPerWireByte: usPerByte(c.linkGBs),
    usPerAtomicByte: usPerByte(c.atomicGBs),
    libraryOverheadUs: c.libraryOverheadUs.value,
    nvlsSwitchReduceUs: c.nvlsSwitchReduceUs.value,
    pollRoundUs: c.pollRoundUs.value,
    storeRoundUs: c.storeRoundUs.value,
    ringStepUs: c.ringStepUs.value,
    serialRecvUs: c.serialRecvUs.value,
    rearmUs: c.rearmUs.value,
    atomicLineUs: c.atomicLineUs.value,
    usPerRearmByte: usPerByte(c.rearmGBs),
    spreadWindowUs: c.spreadWindowUs.value,
    stagedReduceUs: c.stagedReduceUs.value,
    halfWordSentinelUs: c.halfWordSentinelUs.value,
    blockAccessUs: c.blockAccessUs.value,
    usPerBlockByte: usPerByte(c.blockGBs),
    usPerMemoryByte: usPerByte(c.memoryGBs),
    overlapExponent: c.overlapExponent.value,
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
    /** peer-parallel one-shot path: shared-stage windows and staged reduces */
    spreadUs: number
    /** 16-bit sentinel slots checked or canonicalized half by half */
    halfWordSentinelUs: number
    /** one block's bytes through L2 at one SM's rate, or the message's bytes at the memory's rate (the later) */
    blockBandwidthUs: number
    /** the block's memory requests, one after another through its SM (on the latency path) */
    blockAccessesUs: number
  }
  /** Parameters the call needs that are absent from the table: the prediction leaves them out. */
  missingTerms: FitParam[]
  /** Priced in NCCL's cost form: the candidate NCCL's tuner would run, e.g. 'ring/LL' (nccl-model.ts). */
  ncclChoice?: string
}

export function predictFromParams(features: Features, params: ParamValues): LatencyPrediction {
  const missingTerms: FitParam[] = []
  const part = (p: FitParam): number => {
    if (features[p] === 0) return 0
    const v = params[p] ?? null
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
    spreadUs: part('spreadWindowUs') + part('stagedReduceUs'),
    halfWordSentinelUs: part('halfWordSentinelUs'),
    blockBandwidthUs: part('usPerBlockByte') + part('usPerMemoryByte'),
    blockAccessesUs: part('blockAccessUs'),
  }
  const latencyUs = Object.values(terms).reduce((a, b) => a + b, 0)
  return { latencyUs, terms, missingTerms }
}

/**
 * NCCL's chosen candidate as a prediction: its base in libraryUs, its steps in hopsUs, its bytes in bandwidthUs.
 */
export function predictionFromNccl(p: NcclPrediction): LatencyPrediction {
  const terms = predictFromParams(ZERO_FEATURES, {} as ParamValues).terms
  return {
    latencyUs: p.latencyUs,
    terms: { ...terms, libraryUs: p.chosen.baseUs, hopsUs: p.chosen.stepsUs, bandwidthUs: p.chosen.bandwidthUs },
    missingTerms: [],
    ncclChoice: candidateLabel(p.chosen),
  }
}

/** How a bench file's launches are counted (kernel-counts.ts); absent fields: the model's own. */
export type { LaunchCounting } from './kernel-counts.js'

/**
 * One call's predicted latency. An algorithm with `tuner: 'nccl'` on a platform with a complete `nccl` block is
 * priced in NCCL's cost form (the platform's constants; `params` do not enter); every other one in this file's form.
 */
export function predictLatency(
  alg: AlgorithmStructure,
  platform: PlatformConstants,
  ranks: number,
  bytes: number,
  params: ParamValues = paramsFromPlatform(platform),
  dtype?: Dtype,
  counting: LaunchCounting = {},
): LatencyPrediction {
  const tuner = alg.tuner === 'nccl' ? ncclConstantsFrom(platform.nccl) : null
  if (tuner) return predictionFromNccl(predictNccl(tuner, ranks, bytes))
  return predictFromTerms(
    modelTerms(alg, ranks, bytes, platform.topology, { structure: platform.structure, dtype, ...counting }),
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
