/**
 * NCCL's AllReduce in NCCL's own cost form: the tuner (src/graph/tuning.cc in NCCL) prices every (algorithm,
 * protocol) candidate as a latency plus bytes over a bandwidth, and runs the one it predicts fastest. Written from
 * the form NCCL documents in its tuner, not from its code:
 *
 *   T_c(N, M) = base_c + steps(alg, N) · step_c + wireBytes(alg, N, M) / (busBandwidth · efficiency_proto · f_alg)
 *   T(N, M)   = min over c ∈ {ring, tree} × {LL, LL128, Simple} of T_c(N, M)
 *
 * steps: ring AllReduce 2(N−1) hand-offs; tree in one NVLink domain 2(N−1) (NCCL's intra-node tree is a chain, up
 * then down; the log2 term of its tree counts nodes, and one NVLink domain — NVL72 included — is one node).
 * wireBytes: ring 2(N−1)/N · M per GPU; tree 2 · M (NCCL converts a tree's bus bandwidth to algorithm bandwidth at
 * one half). f_alg: 1 for ring, treeBandwidthFactor for tree (NCCL's 0.92). NVLS, NVLS-tree, CollNet and PAT are
 * left out (not measured here; NVLS must not run on shared machines).
 */

import { LlcommError } from 'llcomm/internal'
import type { SourcedValue } from './sourced-value.js'

export const NCCL_ALGORITHMS = ['ring', 'tree'] as const
export const NCCL_PROTOCOLS = ['LL', 'LL128', 'Simple'] as const
export type NcclAlgorithm = (typeof NCCL_ALGORITHMS)[number]
export type NcclProtocol = (typeof NCCL_PROTOCOLS)[number]

export interface NcclCandidate {
  algorithm: NcclAlgorithm
  protocol: NcclProtocol
}

export const NCCL_CANDIDATES: readonly NcclCandidate[] = NCCL_ALGORITHMS.flatMap((algorithm) =>
  NCCL_PROTOCOLS.map((protocol) => ({ algorithm, protocol })),
)

export type NcclBaseName = `${NcclAlgorithm}${NcclProtocol}BaseUs`
export type NcclStepName = `${NcclAlgorithm}${NcclProtocol}StepUs`
export type NcclEfficiencyName = `efficiency${NcclProtocol}`

/** The constant names of a platform's `nccl` block in data/latency/platforms.json. */
export const NCCL_CONSTANT_NAMES = [
  ...NCCL_CANDIDATES.map((c) => baseName(c)),
  ...NCCL_CANDIDATES.map((c) => stepName(c)),
  'busGBs',
  ...NCCL_PROTOCOLS.map((p) => efficiencyName(p)),
  'treeBandwidthFactor',
] as const
export type NcclConstantName = NcclBaseName | NcclStepName | NcclEfficiencyName | 'busGBs' | 'treeBandwidthFactor'
export type NcclConstants = Record<NcclConstantName, number>
export type NcclConstantTable = Record<NcclConstantName, SourcedValue>

export function baseName(c: NcclCandidate): NcclBaseName {
  return `${c.algorithm}${c.protocol}BaseUs`
}
export function stepName(c: NcclCandidate): NcclStepName {
  return `${c.algorithm}${c.protocol}StepUs`
}
export function efficiencyName(p: NcclProtocol): NcclEfficiencyName {
  return `efficiency${p}`
}
export function candidateLabel(c: NcclCandidate): string {
  return `${c.algorithm}/${c.protocol}`
}

/** Where NCCL's published tuning constants come from (the NVLink rows of its tuner's tables). */
export const NCCL_TUNING_SOURCE =
  'NCCL src/graph/tuning.cc (NVIDIA/nccl at b6475625, 2.19–2.21 era): baseLat and hwLat[NCCL_HW_NVLINK]'

/**
 * NCCL's published per-candidate latencies for NVLink, in µs: base (baseLat) and per step (hwLat, NVLink row).
 * The priors of every constant two ranks cannot identify (see nccl-calibrate.ts).
 */
export const NCCL_PUBLISHED_NVLINK: Readonly<Record<NcclBaseName | NcclStepName, number>> = {
  ringLLBaseUs: 6.6,
  ringLL128BaseUs: 14.0,
  ringSimpleBaseUs: 8.4,
  treeLLBaseUs: 6.8,
  treeLL128BaseUs: 14.0,
  treeSimpleBaseUs: 0,
  ringLLStepUs: 0.6,
  ringLL128StepUs: 1.9,
  ringSimpleStepUs: 3.4,
  treeLLStepUs: 0.6,
  treeLL128StepUs: 1.25,
  treeSimpleStepUs: 28,
}

/**
 * Payload per wire byte of each protocol: LL sends 4 data bytes with a 4-byte flag in every 8 (50%), LL128 120 of
 * 128 bytes per line, Simple all. NCCL's tuner uses 1/4 and 0.92 for ring AllReduce LL and LL128 (with per-channel
 * caps); the fit in nccl-calibrate.ts keeps these wire efficiencies as priors.
 */
export const PROTOCOL_EFFICIENCY: Readonly<Record<NcclProtocol, number>> = { LL: 0.5, LL128: 120 / 128, Simple: 1 }

/** NCCL's tree refinement: a tree's bus bandwidth is 0.92 of the ring's (busBw · .92 in its tuner). */
export const TREE_BANDWIDTH_FACTOR = 0.92

/** Sequential steps of one AllReduce: ring 2(N−1); tree in one NVLink domain 2(N−1) (a chain up, then down). */
export function ncclSteps(algorithm: NcclAlgorithm, ranks: number): number {
  return algorithm === 'ring' ? 2 * (ranks - 1) : 2 * (ranks - 1)
}

/** Bytes per GPU the candidate's bandwidth term charges: ring 2(N−1)/N · M, tree 2 · M. */
export function ncclWireBytes(algorithm: NcclAlgorithm, ranks: number, bytes: number): number {
  return algorithm === 'ring' ? (2 * (ranks - 1) * bytes) / ranks : 2 * bytes
}

/** The candidate's bandwidth in GB/s: bus bandwidth × protocol efficiency (× the tree factor for tree). */
export function ncclRateGBs(k: NcclConstants, c: NcclCandidate): number {
  return k.busGBs * k[efficiencyName(c.protocol)] * (c.algorithm === 'tree' ? k.treeBandwidthFactor : 1)
}

export interface NcclCandidateTime extends NcclCandidate {
  latencyUs: number
  baseUs: number
  stepsUs: number
  bandwidthUs: number
}

export interface NcclPrediction {
  latencyUs: number
  /** The candidate with the least predicted time: the one NCCL's tuner would run. */
  chosen: NcclCandidateTime
  candidates: NcclCandidateTime[]
}

/** Each candidate with the names of its constants, computed once (the fit prices candidates many times). */
const KEYED = NCCL_CANDIDATES.map((c) => ({
  candidate: c,
  base: baseName(c),
  step: stepName(c),
  efficiency: efficiencyName(c.protocol),
}))

function keyedTime(k: NcclConstants, i: number, ranks: number, bytes: number): [number, number, number] {
  const { candidate, base, step, efficiency } = KEYED[i]
  const stepsUs = ncclSteps(candidate.algorithm, ranks) * k[step]
  const rate = k.busGBs * k[efficiency] * (candidate.algorithm === 'tree' ? k.treeBandwidthFactor : 1)
  const wire = ncclWireBytes(candidate.algorithm, ranks, bytes)
  const bandwidthUs = wire === 0 ? 0 : rate > 0 ? wire / (rate * 1e3) : Number.POSITIVE_INFINITY
  return [k[base], stepsUs, bandwidthUs]
}

/** Time of one candidate; GB/s = 10³ bytes per µs. */
export function ncclCandidateTime(k: NcclConstants, c: NcclCandidate, ranks: number, bytes: number): NcclCandidateTime {
  const i = KEYED.findIndex((x) => x.candidate.algorithm === c.algorithm && x.candidate.protocol === c.protocol)
  const [baseUs, stepsUs, bandwidthUs] = keyedTime(k, i, ranks, bytes)
  return { ...c, latencyUs: baseUs + stepsUs + bandwidthUs, baseUs, stepsUs, bandwidthUs }
}

/**
 * The least candidate time and its index in NCCL_CANDIDATES (the first of equals), without building the
 * candidates: what the fit evaluates.
 */
export function ncclLeast(k: NcclConstants, ranks: number, bytes: number): { latencyUs: number; index: number } {
  let latencyUs = Number.POSITIVE_INFINITY
  let index = 0
  for (let i = 0; i < KEYED.length; i++) {
    const [b, s, w] = keyedTime(k, i, ranks, bytes)
    if (b + s + w < latencyUs) {
      latencyUs = b + s + w
      index = i
    }
  }
  return { latencyUs, index }
}

/** NCCL's choice: every candidate's time, and the least (the first of equals in NCCL_CANDIDATES order). */
export function predictNccl(k: NcclConstants, ranks: number, bytes: number): NcclPrediction {
  if (!Number.isInteger(ranks) || ranks < 2)
    throw new LlcommError('INVALID_ARGUMENT', `ranks must be an integer ≥ 2, got ${ranks}`)
  if (!(bytes >= 0)) throw new LlcommError('INVALID_ARGUMENT', `bytes must be ≥ 0, got ${bytes}`)
  const candidates = NCCL_CANDIDATES.map((c) => ncclCandidateTime(k, c, ranks, bytes))
  const chosen = candidates[ncclLeast(k, ranks, bytes).index]
  return { latencyUs: chosen.latencyUs, chosen, candidates }
}

/** The values of a platform's `nccl` block; null when the block is absent or any of its constants is. */
export function ncclConstantsFrom(table: Partial<NcclConstantTable> | undefined): NcclConstants | null {
  if (!table) return null
  const out: Partial<NcclConstants> = {}
  for (const name of NCCL_CONSTANT_NAMES) {
    const v = table[name]?.value
    if (v === null || v === undefined) return null
    out[name] = v
  }
  return out as NcclConstants
}

/** Checks a platform's `nccl` block: every constant present as { value: number|null, source }. */
export function checkNcclConstantTable(platform: string, table: unknown): void {
  if (typeof table !== 'object' || table === null)
    throw new LlcommError('INVALID_ARGUMENT', `platform ${platform}: nccl must be an object of constants`, {
      platform,
    })
  for (const name of NCCL_CONSTANT_NAMES) {
    const v = (table as Record<string, SourcedValue | undefined>)[name]
    if (!v || (v.value !== null && !Number.isFinite(v.value)) || typeof v.source !== 'string')
      throw new LlcommError(
        'INVALID_ARGUMENT',
        `platform ${platform}: nccl constant ${name} needs { value: number|null, source }`,
        { platform, constant: name },
      )
  }
}
