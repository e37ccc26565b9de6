/**
 * Across ranks: with one trace per rank of the same run, line up the k-th call of each collective on every rank and
 * split its kernel time into waiting and working.
 *
 *   arrival skew   = last rank's kernel start − first rank's kernel start
 *   post-arrival   = first kernel end − last kernel start: the collective's own time once every rank is in it
 *   wait on rank r = last kernel start − rank r's kernel start: what r's kernel spent waiting for the straggler
 *
 * A single trace cannot tell the two apart: an AllReduce kernel that took 1 ms may be 1 ms of waiting for a rank
 * that launched late. A faster collective shortens only the post-arrival part (seed 003: find what the critical
 * path waits on before changing the collective).
 *
 * The traces must share a clock. PyTorch's profiler stamps GPU activities in the host's clock, so the processes of
 * one host agree; the check is that the ranks' kernel ends agree (every rank leaves an AllReduce when the last data
 * arrives), reported as `endSpreadMedianUs`.
 */
import { LlcommError } from 'llcomm/internal'
import type { GpuActivity, NormalizedTrace } from './trace-types.js'

export interface CrossRankCollective {
  name: string
  bytes: number | null
  /** Calls lined up on every rank (the least count over the ranks). */
  calls: number
  /** Calls per rank as found (they differ when a trace was cut short). */
  callsPerRank: number[]
  skewUs: Distribution
  postArrivalUs: Distribution
  /** Total time each rank's kernels spent waiting for the last rank to arrive. */
  waitUsPerRank: number[]
  /** How often each rank was the last to arrive. */
  lastToArrive: number[]
}

export interface Distribution {
  meanUs: number
  medianUs: number
  p90Us: number
  maxUs: number
}

export interface CrossRankAnalysis {
  ranks: number
  collectives: CrossRankCollective[]
  /** Median over the lined-up calls of (last kernel end − first kernel end): small when the clocks agree. */
  endSpreadMedianUs: number
  /** Whether the ends agree well enough (within the typical post-arrival time, or 2 µs) to trust skew and wait. */
  clocksAgree: boolean
  notes: string[]
}

function distribution(values: number[]): Distribution {
  if (values.length === 0) return { meanUs: 0, medianUs: 0, p90Us: 0, maxUs: 0 }
  const s = [...values].sort((a, b) => a - b)
  const at = (q: number) => s[Math.min(s.length - 1, Math.floor(q * (s.length - 1) + 0.5))]
  return { meanUs: s.reduce((x, y) => x + y, 0) / s.length, medianUs: at(0.5), p90Us: at(0.9), maxUs: s[s.length - 1] }
}

function median(values: number[]): number {
  return values.length === 0 ? 0 : distribution(values).medianUs
}

/** Communication kernels of one trace, grouped by collective and size, each group in start order. */
function callsByCollective(trace: NormalizedTrace): Map<string, GpuActivity[]> {
  const groups = new Map<string, GpuActivity[]>()
  for (const a of trace.activities) {
    if (!a.collective) continue
    const key = `${a.collective.name}|${a.collective.bytes}`
    const list = groups.get(key)
    if (list) list.push(a)
    else groups.set(key, [a])
  }
  for (const list of groups.values()) list.sort((x, y) => x.startUs - y.startUs)
  return groups
}

/**
 * Lines up the collectives of one trace per rank (traces[r] is rank r's). Every rank must have issued the same
 * collectives in the same order, as a process group requires; a trace with fewer calls of a collective (cut short)
 * lines up its first calls only, and a note says so.
 */
export function analyzeAcrossRanks(traces: NormalizedTrace[]): CrossRankAnalysis {
  if (traces.length < 2)
    throw new LlcommError(
      'INVALID_ARGUMENT',
      `analysis across ranks needs a trace per rank (≥ 2), got ${traces.length}`,
    )
  const perRank = traces.map(callsByCollective)
  const notes: string[] = []
  const keys = [...new Set(perRank.flatMap((m) => [...m.keys()]))]
  const endSpreads: number[] = []
  const postArrivalAll: number[] = []
  const collectives: CrossRankCollective[] = []
  for (const key of keys) {
    const lists = perRank.map((m) => m.get(key) ?? [])
    const callsPerRank = lists.map((l) => l.length)
    const calls = Math.min(...callsPerRank)
    const [name, bytesText] = key.split('|')
    if (calls === 0) {
      notes.push(
        `${name} ${bytesText} B: missing on rank(s) ${callsPerRank.flatMap((n, r) => (n ? [] : [r])).join(', ')}`,
      )
      continue
    }
    if (callsPerRank.some((n) => n !== calls))
      notes.push(
        `${name} ${bytesText} B: calls per rank differ (${callsPerRank.join(', ')}); the first ${calls} lined up`,
      )
    const skew: number[] = []
    const post: number[] = []
    const waitUsPerRank = traces.map(() => 0)
    const lastToArrive = traces.map(() => 0)
    for (let k = 0; k < calls; k++) {
      const starts = lists.map((l) => l[k].startUs)
      const ends = lists.map((l) => l[k].startUs + l[k].durUs)
      const lastStart = Math.max(...starts)
      skew.push(lastStart - Math.min(...starts))
      post.push(Math.max(0, Math.min(...ends) - lastStart))
      endSpreads.push(Math.max(...ends) - Math.min(...ends))
      for (let r = 0; r < starts.length; r++) waitUsPerRank[r] += lastStart - starts[r]
      lastToArrive[starts.indexOf(lastStart)]++
    }
    postArrivalAll.push(...post)
    collectives.push({
      name,
      bytes: bytesText === 'null' ? null : Number(bytesText),
      calls,
      callsPerRank,
      skewUs: distribution(skew),
      postArrivalUs: distribution(post),
      waitUsPerRank,
      lastToArrive,
    })
  }
  collectives.sort((a, b) => b.calls - a.calls)
  const endSpreadMedianUs = median(endSpreads)
  // Ranks leave a collective together (within a hop or two); an end spread larger than the typical post-arrival
  // time itself means the traces' clocks do not line up, and skew and wait are then meaningless.
  const clocksAgree = endSpreads.length > 0 && endSpreadMedianUs <= Math.max(2, median(postArrivalAll))
  if (!clocksAgree && endSpreads.length > 0)
    notes.push(
      `kernel ends differ across ranks by ${endSpreadMedianUs.toFixed(1)} µs (median): the traces' clocks do not seem to agree, skew and wait are unreliable`,
    )
  return { ranks: traces.length, collectives, endSpreadMedianUs, clocksAgree, notes }
}
