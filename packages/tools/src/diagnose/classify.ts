/**
 * Bottleneck classification after seed 003's table ("快速判断瓶颈在通信还是计算"). Of its five probes, a trace
 * answers one directly — the GPU kernel timeline: "many gaps between kernels" signals a communication or
 * synchronization bottleneck (the GPU waits for data), "kernels almost back to back" signals compute. The
 * other probes (change the batch size, add network delay, lower concurrency, pin CPU threads) need experiments;
 * the report names them as next steps. Thresholds are a table, not branches (STYLE habit 8).
 */
import type { TraceAnalysis } from './analyze.js'
import type { CrossRankAnalysis } from './cross-rank.js'

export type BottleneckLabel =
  | 'communication-bound (small messages)'
  | 'communication-bound (bandwidth)'
  | 'gpu-waiting (gaps between kernels)'
  | 'compute-bound'
  | 'mixed'
  | 'arrival skew (ranks reach collectives apart)'

export interface ClassificationSignals {
  /** GPU idle time (no activity on any stream) over the step. */
  idleShare: number
  /** Communication kernel time over GPU-busy time. */
  commShare: number
  /** Communication no compute overlaps, plus the gaps just before collectives, over the step. */
  criticalCommShare: number
  /** Bytes-weighted mean message size of the collectives (null when no sizes are known). */
  meanCollectiveBytes: number | null
}

export interface Classification {
  label: BottleneckLabel
  reason: string
  /** The seed 003 table row this rests on. */
  seedRow: string
  signals: ClassificationSignals
  nextSteps: string[]
}

/** Thresholds (fractions). A message is small when its per-rank size is at most smallMessageBytes. */
export const CLASSIFICATION_THRESHOLDS = {
  commBound: 0.25,
  gpuWaiting: 0.25,
  computeIdleMax: 0.1,
  computeCommMax: 0.1,
  smallMessageBytes: 1 << 20,
} as const

const SEED_ROW_TIMELINE =
  "seed 003 table, row 'observe the GPU kernel timeline': communication bottleneck ⇔ many gaps between kernels; compute bottleneck ⇔ kernels almost back to back"
const SEED_NEXT_STEPS = [
  'raise the batch size: latency barely grows if communication bound, grows linearly if compute bound (seed 003)',
  'add network round-trip delay: end-to-end latency rises if communication is on the critical path (seed 003)',
  'lower concurrency and pin communication threads: jitter falls if communication bound (seed 003)',
]

export function classificationSignals(a: TraceAnalysis): ClassificationSignals {
  const gapsBeforeComm = a.streams.reduce((s, g) => s + g.gapsBeforeCommUs, 0)
  const sized = a.collectives.filter((c) => c.bytes !== null && c.count > 0)
  const calls = sized.reduce((s, c) => s + c.count, 0)
  return {
    idleShare: a.totalUs > 0 ? a.idleUs / a.totalUs : 0,
    commShare: a.commShare,
    criticalCommShare: a.totalUs > 0 ? Math.min(1, (a.exposedCommUs + gapsBeforeComm) / a.totalUs) : 0,
    meanCollectiveBytes: calls > 0 ? sized.reduce((s, c) => s + (c.bytes as number) * c.count, 0) / calls : null,
  }
}

const SKEW_NEXT_STEPS = [
  'look at what the last-arriving rank does before each collective (host launches, Python, data, a slower GPU): a faster collective does not remove waiting for it (seed 003)',
  'capture the step in a CUDA graph or fuse launches, so that every rank reaches the collective when its GPU does',
]

/**
 * With one trace per rank (clocks agreeing): when the ranks' kernels spend more time waiting for the last rank than
 * the collectives take once every rank is in, the run is bound by arrival skew, whatever one trace's shares say.
 */
function skewClassification(x: CrossRankAnalysis | undefined): { label: BottleneckLabel; reason: string } | undefined {
  if (!x?.clocksAgree) return undefined
  const wait = x.collectives.reduce((s, c) => s + c.waitUsPerRank.reduce((t, u) => t + u, 0), 0)
  const work = x.collectives.reduce((s, c) => s + c.postArrivalUs.meanUs * c.calls * x.ranks, 0)
  if (wait <= work) return undefined
  return {
    label: 'arrival skew (ranks reach collectives apart)',
    reason: `across ${x.ranks} ranks the collective kernels spent ${wait.toFixed(0)} µs waiting for the last rank to arrive against ${work.toFixed(0)} µs of work once all had arrived`,
  }
}

export function classify(a: TraceAnalysis, acrossRanks?: CrossRankAnalysis): Classification {
  const skew = skewClassification(acrossRanks)
  if (skew)
    return {
      ...skew,
      seedRow: SEED_ROW_TIMELINE,
      signals: classificationSignals(a),
      nextSteps: [...SKEW_NEXT_STEPS, ...SEED_NEXT_STEPS],
    }
  const t = CLASSIFICATION_THRESHOLDS
  const s = classificationSignals(a)
  const pct = (x: number) => `${(x * 100).toFixed(1)}%`
  const small = s.meanCollectiveBytes === null || s.meanCollectiveBytes <= t.smallMessageBytes
  let label: BottleneckLabel
  let reason: string
  if (s.commShare >= t.commBound) {
    label = small ? 'communication-bound (small messages)' : 'communication-bound (bandwidth)'
    reason = `communication kernels take ${pct(s.commShare)} of GPU-busy time (≥ ${pct(t.commBound)}); mean message ${s.meanCollectiveBytes === null ? 'unknown' : `${Math.round(s.meanCollectiveBytes)} B`}`
  } else if (s.idleShare >= t.gpuWaiting) {
    label = 'gpu-waiting (gaps between kernels)'
    reason = `the GPU is idle ${pct(s.idleShare)} of the step (≥ ${pct(t.gpuWaiting)}): it waits for the host, a launch or a peer`
  } else if (s.idleShare < t.computeIdleMax && s.commShare < t.computeCommMax) {
    label = 'compute-bound'
    reason = `kernels almost back to back (idle ${pct(s.idleShare)}) and communication ${pct(s.commShare)} of GPU-busy time`
  } else {
    label = 'mixed'
    reason = `idle ${pct(s.idleShare)}, communication ${pct(s.commShare)} of GPU-busy time: neither dominates`
  }
  return {
    label,
    reason,
    seedRow: SEED_ROW_TIMELINE,
    signals: s,
    nextSteps: label === 'compute-bound' ? [] : SEED_NEXT_STEPS,
  }
}
