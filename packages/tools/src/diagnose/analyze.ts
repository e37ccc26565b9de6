/**
 * The numbers diagnose reports: GPU-busy time, communication time and its share, the part of it no compute
 * overlaps (communication on the critical path), the gaps between kernels on each stream, and the collectives
 * with their sizes.
 *
 *   totalUs    = last GPU activity end − first start
 *   busyUs     = length of the union of all GPU activities (any stream)
 *   commUs     = length of the union of communication kernels
 *   commShare  = commUs / busyUs
 *   exposedCommUs = communication time during which no compute activity runs on any stream: on the critical path
 *   idleUs     = totalUs − busyUs
 */
import { LlcommError } from 'llcomm/internal'
import { type Interval, lengthNotCovered, totalLength, unionIntervals } from './intervals.js'
import type { GpuActivity, NormalizedTrace } from './trace-types.js'

export interface StreamGaps {
  stream: string
  activities: number
  busyUs: number
  gaps: number
  gapUs: number
  maxGapUs: number
  /** Gaps that end at a communication kernel (the stream waited to start it). */
  gapsBeforeCommUs: number
  /** Gaps that start at the end of a communication kernel. */
  gapsAfterCommUs: number
  /** The largest gaps (up to 3), with the activity that ended each: where the stream waited. */
  largestGaps: { gapUs: number; atUs: number; before: string }[]
}

export interface CollectiveSummary {
  name: string
  count: number
  /** Bytes per rank per call, null when the trace does not say. */
  bytes: number | null
  /** GPU time of the calls' kernels. */
  totalUs: number
  meanUs: number
  /** Calls seen on the CPU (record_param_comms) with no GPU kernel tied to them. */
  cpuOnly: number
  groupSize?: number
  /** The element type as the trace names it (PyTorch: 'BFloat16', 'Float', …), when it says. */
  dtype?: string
}

/** Steps found from annotations matching a pattern (GPU-side annotations preferred over CPU-side ones). */
export interface StepSummary {
  pattern: string
  count: number
  meanUs: number
  minUs: number
  maxUs: number
  steps: { name: string; durUs: number }[]
}

/** PyTorch's profiler marks each `prof.step()` as ProfilerStep#N. */
export const DEFAULT_STEP_PATTERN = '^ProfilerStep#\\d+$'

export function findSteps(trace: NormalizedTrace, pattern: string = DEFAULT_STEP_PATTERN): StepSummary | undefined {
  let re: RegExp
  try {
    re = new RegExp(pattern)
  } catch (e) {
    throw new LlcommError('INVALID_ARGUMENT', `bad step pattern ${JSON.stringify(pattern)}: ${(e as Error).message}`)
  }
  const matching = trace.annotations.filter((x) => re.test(x.name))
  const gpu = matching.filter((x) => x.onGpu)
  const chosen = (gpu.length > 0 ? gpu : matching).sort((a, b) => a.startUs - b.startUs)
  if (chosen.length === 0) return undefined
  const d = chosen.map((x) => x.durUs)
  return {
    pattern,
    count: chosen.length,
    meanUs: d.reduce((s, x) => s + x, 0) / d.length,
    minUs: Math.min(...d),
    maxUs: Math.max(...d),
    steps: chosen.map((x) => ({ name: x.name, durUs: x.durUs })),
  }
}

export interface TraceAnalysis {
  format: NormalizedTrace['format']
  totalUs: number
  busyUs: number
  commUs: number
  commShare: number
  computeUs: number
  exposedCommUs: number
  idleUs: number
  streams: StreamGaps[]
  collectives: CollectiveSummary[]
  kernels: number
  /** Present when annotations mark steps (ProfilerStep#N, or --step PATTERN). */
  steps?: StepSummary
  notes: string[]
}

function span(a: GpuActivity): Interval {
  return [a.startUs, a.startUs + a.durUs]
}

function streamGaps(stream: string, acts: GpuActivity[]): StreamGaps {
  const sorted = [...acts].sort((x, y) => x.startUs - y.startUs)
  let end = Number.NEGATIVE_INFINITY
  let lastWasComm = false
  const g: StreamGaps = {
    stream,
    activities: acts.length,
    busyUs: totalLength(unionIntervals(acts.map(span))),
    gaps: 0,
    gapUs: 0,
    maxGapUs: 0,
    gapsBeforeCommUs: 0,
    gapsAfterCommUs: 0,
    largestGaps: [],
  }
  const t0 = sorted.length ? sorted[0].startUs : 0
  for (const a of sorted) {
    if (end !== Number.NEGATIVE_INFINITY && a.startUs > end) {
      const gap = a.startUs - end
      g.gaps++
      g.gapUs += gap
      g.maxGapUs = Math.max(g.maxGapUs, gap)
      if (a.collective) g.gapsBeforeCommUs += gap
      if (lastWasComm) g.gapsAfterCommUs += gap
      g.largestGaps.push({ gapUs: gap, atUs: end - t0, before: a.name })
      g.largestGaps.sort((x, y) => y.gapUs - x.gapUs)
      g.largestGaps.length = Math.min(g.largestGaps.length, 3)
    }
    const aEnd = a.startUs + a.durUs
    if (aEnd >= end) {
      end = aEnd
      lastWasComm = a.collective !== undefined
    }
  }
  return g
}

export function analyzeTrace(trace: NormalizedTrace, options: { stepPattern?: string } = {}): TraceAnalysis {
  const acts = trace.activities
  const comm = acts.filter((a) => a.collective)
  const compute = acts.filter((a) => !a.collective)
  const busy = unionIntervals(acts.map(span))
  // loops, not Math.min(...spread): a long trace has more activities than the call stack has argument slots
  let first = acts.length ? Number.POSITIVE_INFINITY : 0
  let last = acts.length ? Number.NEGATIVE_INFINITY : 0
  for (const a of acts) {
    first = Math.min(first, a.startUs)
    last = Math.max(last, a.startUs + a.durUs)
  }
  const totalUs = last - first
  const busyUs = totalLength(busy)
  const commUs = totalLength(unionIntervals(comm.map(span)))
  const computeUs = totalLength(unionIntervals(compute.map(span)))
  const exposedCommUs = lengthNotCovered(comm.map(span), compute.map(span))

  const byStream = new Map<string, GpuActivity[]>()
  for (const a of acts) {
    const list = byStream.get(a.stream)
    if (list) list.push(a)
    else byStream.set(a.stream, [a])
  }
  const streams = [...byStream].sort(([a], [b]) => a.localeCompare(b)).map(([s, list]) => streamGaps(s, list))

  const groups = new Map<string, CollectiveSummary>()
  const group = (name: string, bytes: number | null, groupSize?: number, dtype?: string): CollectiveSummary => {
    const key = `${name}|${bytes}`
    let g = groups.get(key)
    if (!g) {
      g = { name, count: 0, bytes, totalUs: 0, meanUs: 0, cpuOnly: 0, groupSize }
      groups.set(key, g)
    }
    if (dtype !== undefined && g.dtype === undefined) g.dtype = dtype
    return g
  }
  for (const a of comm) {
    const c = a.collective as NonNullable<GpuActivity['collective']>
    const g = group(c.name, c.bytes, c.groupSize, c.dtype)
    g.count++
    g.totalUs += a.durUs
  }
  for (const op of trace.cpuCollectives) {
    if (op.kernels > 0) continue
    const g = group(op.info.name, op.info.bytes, op.info.groupSize, op.info.dtype)
    g.count++
    g.cpuOnly++
  }
  const collectives = [...groups.values()]
    .map((g) => ({ ...g, meanUs: g.count - g.cpuOnly > 0 ? g.totalUs / (g.count - g.cpuOnly) : 0 }))
    .sort((a, b) => b.totalUs - a.totalUs || b.count - a.count)

  return {
    format: trace.format,
    totalUs,
    busyUs,
    commUs,
    commShare: busyUs > 0 ? commUs / busyUs : 0,
    computeUs,
    exposedCommUs,
    idleUs: totalUs - busyUs,
    streams,
    collectives,
    kernels: acts.length,
    steps: findSteps(trace, options.stepPattern),
    notes: trace.notes,
  }
}
