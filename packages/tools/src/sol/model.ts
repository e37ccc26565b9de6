/**
 * Speed-of-light (SoL) bounds after seed 000: formulas over a few measured primitives, constants kept apart in a
 * table (STYLE habit 8; NCCL's src/graph/tuning.cc keeps its latency constants the same way).
 *
 *   L_SoL  = 2·L_L2_RTT + L_remote_store       one flag-carrying store made visible to a peer (one "hop")
 *   L_L2_RTT       = latency of one __threadfence()  (cpu: a seq-cst Atomics store + load)
 *   L_remote_store = ½·(two-rank ping-pong round trip) − 2·L_L2_RTT
 *
 * An algorithm's bound = kernel floor (an empty kernel inside a graph) + hops·L_SoL + a bandwidth term, where
 * hops is its critical path in hops (one-shot 1; two-shot 2; oneshot-barrier 1 + two barriers, each at least one
 * hop across the N ranks; ring 2(N−1)) and the bandwidth term is the larger of the bytes a rank sends (divided by
 * the protocol's payload efficiency) and the bytes it reads to reduce, over the measured copy bandwidth (the two
 * overlap at best, so a lower bound takes the larger). NCCL's own algorithms get no bound: which one NCCL runs
 * is its choice.
 */
import type { AlgorithmName } from 'llcomm/internal'
import { LlcommError } from 'llcomm/internal'

export interface SolPrimitives {
  /** One __threadfence() (cpu: one seq-cst store + load on shared memory), µs. */
  l2RoundTripUs: number
  /** ½ ping-pong round trip − 2 L2 round trips, µs. */
  remoteStoreUs: number
  /** An empty kernel's time inside a CUDA graph (cpu: an empty timed region in a worker), µs; absent = not measured. */
  kernelFloorUs?: number
  /** Device copy bandwidth, GB/s (10^9 B/s); absent = not measured (bounds then leave the bandwidth term out). */
  copyBandwidthGBs?: number
}

/** Published figures, never measured here: a test of the formula and a point of comparison. */
export const SOL_CONSTANTS: Readonly<Record<string, { source: string; primitives: SolPrimitives }>> = {
  'gb200-seed000': {
    source: 'seed 000: 4× GB200 over NVLink (0.306 µs L2 round trip, 0.792 µs remote store)',
    primitives: { l2RoundTripUs: 0.306, remoteStoreUs: 0.792 },
  },
}

/** L_SoL = 2·L_L2_RTT + L_remote_store (µs). */
export function hopLatencyUs(p: Pick<SolPrimitives, 'l2RoundTripUs' | 'remoteStoreUs'>): number {
  return 2 * p.l2RoundTripUs + p.remoteStoreUs
}

/** L_remote_store from a measured two-rank ping-pong round trip and the L2 round trip (µs). */
export function remoteStoreFromPingPongUs(pingPongRoundTripUs: number, l2RoundTripUs: number): number {
  return pingPongRoundTripUs / 2 - 2 * l2RoundTripUs
}

export interface CriticalPath {
  /** Flag hops on the critical path (barriers counted as one hop each). */
  hops: number
  /** Barriers among those hops. */
  barriers: number
  /** Bytes one rank sends to its peers, as payload (before protocol overhead). */
  sentBytes: number
  /** Bytes one rank reads to reduce. */
  readBytes: number
  /** Payload fraction of what goes over the link: LL8/LL16 ½, LL128 124/128, plain data 1. */
  payloadEfficiency: number
}

/** Payload efficiencies of the protocols (docs/design.md §2). */
export const PAYLOAD_EFFICIENCY = { ll: 0.5, sentinel: 1, ll128: 124 / 128, plain: 1 } as const

/** The critical path of one AllReduce of `bytes` per rank on `ranks` ranks; undefined for NCCL's own algorithms. */
export function criticalPath(algorithm: AlgorithmName, ranks: number, bytes: number): CriticalPath | undefined {
  if (!Number.isInteger(ranks) || ranks < 2)
    throw new LlcommError('INVALID_ARGUMENT', `a bound needs ≥ 2 ranks, got ${ranks}`)
  const n = ranks
  const oneShot = { sentBytes: (n - 1) * bytes, readBytes: n * bytes }
  // Two-shot: reduce-scatter (send N−1 shards of bytes/N, read N shards) then all-gather (send the owned shard to
  // N−1 peers, read N−1 shards): 2(N−1)/N·bytes each way.
  const twoShot = { sentBytes: (2 * (n - 1) * bytes) / n, readBytes: bytes + ((n - 1) * bytes) / n }
  switch (algorithm) {
    case 'oneshot-ll':
      return { hops: 1, barriers: 0, ...oneShot, payloadEfficiency: PAYLOAD_EFFICIENCY.ll }
    case 'oneshot-sentinel':
      return { hops: 1, barriers: 0, ...oneShot, payloadEfficiency: PAYLOAD_EFFICIENCY.sentinel }
    case 'twoshot-sentinel':
      return { hops: 2, barriers: 0, ...twoShot, payloadEfficiency: PAYLOAD_EFFICIENCY.sentinel }
    case 'twoshot-atomic':
      return { hops: 2, barriers: 0, ...twoShot, payloadEfficiency: PAYLOAD_EFFICIENCY.ll128 }
    case 'oneshot-barrier':
      return { hops: 3, barriers: 2, ...oneShot, payloadEfficiency: PAYLOAD_EFFICIENCY.plain }
    case 'ring':
      return { hops: 2 * (n - 1), barriers: 0, ...twoShot, payloadEfficiency: PAYLOAD_EFFICIENCY.plain }
    case 'nccl':
    case 'nccl-symmetric':
      return undefined
  }
}

export interface SolBound {
  algorithm: AlgorithmName
  ranks: number
  bytes: number
  hops: number
  kernelFloorUs: number | null
  hopsUs: number
  bandwidthUs: number | null
  /** kernel floor + hops + bandwidth, with the absent terms left out (see the fields that are null). */
  boundUs: number
}

export function solBound(
  p: SolPrimitives,
  algorithm: AlgorithmName,
  ranks: number,
  bytes: number,
): SolBound | undefined {
  const path = criticalPath(algorithm, ranks, bytes)
  if (!path) return undefined
  const hopsUs = path.hops * hopLatencyUs(p)
  const bandwidthUs =
    p.copyBandwidthGBs !== undefined && p.copyBandwidthGBs > 0
      ? Math.max(path.sentBytes / path.payloadEfficiency, path.readBytes) / (p.copyBandwidthGBs * 1e3)
      : null
  const kernelFloorUs = p.kernelFloorUs ?? null
  return {
    algorithm,
    ranks,
    bytes,
    hops: path.hops,
    kernelFloorUs,
    hopsUs,
    bandwidthUs,
    boundUs: (kernelFloorUs ?? 0) + hopsUs + (bandwidthUs ?? 0),
  }
}
