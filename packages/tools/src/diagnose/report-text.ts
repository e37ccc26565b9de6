/** The readable diagnose report (no --json). */
import { fixed, formatBytes, percent, textTable } from '../model/text-table.js'
import type { TraceAnalysis } from './analyze.js'
import type { Classification } from './classify.js'
import type { CrossRankAnalysis } from './cross-rank.js'
import type { WhatIf } from './what-if.js'

/** The across-ranks section: each collective's arrival skew, post-arrival time and who waited. */
export function acrossRanksText(x: CrossRankAnalysis): string[] {
  const out = ['', `## across ranks (${x.ranks} traces, one per rank)`]
  out.push(
    `kernel ends agree within ${fixed(x.endSpreadMedianUs, 2)} µs (median over the lined-up calls): ${x.clocksAgree ? 'one clock' : 'the clocks do NOT agree; skew and wait below are unreliable'}`,
  )
  out.push(
    textTable(
      [
        'collective',
        'bytes',
        'calls',
        'skew median µs',
        'skew p90 µs',
        'post-arrival median µs',
        'wait per rank µs',
        'last to arrive (calls per rank)',
      ],
      x.collectives.map((c) => [
        c.name,
        c.bytes === null ? '?' : formatBytes(c.bytes),
        c.calls,
        fixed(c.skewUs.medianUs, 2),
        fixed(c.skewUs.p90Us, 2),
        fixed(c.postArrivalUs.medianUs, 2),
        c.waitUsPerRank.map((u) => fixed(u, 0)).join(' / '),
        c.lastToArrive.join(' / '),
      ]),
    ),
  )
  for (const c of x.collectives) {
    const total = c.waitUsPerRank.reduce((s, u) => s + u, 0)
    const post = c.postArrivalUs.meanUs * c.calls * x.ranks
    if (total > post)
      out.push(
        `${c.name} ${c.bytes === null ? '' : formatBytes(c.bytes)}: the ranks' kernels spent ${fixed(total, 0)} µs waiting for the last rank against ${fixed(post, 0)} µs of post-arrival work: the stall is arrival skew (what the last rank did before the call), not the collective`,
      )
  }
  for (const n of x.notes) out.push(`note: ${n}`)
  return out
}

export function diagnoseText(
  path: string,
  a: TraceAnalysis,
  c: Classification,
  w: WhatIf,
  acrossRanks?: CrossRankAnalysis,
): string {
  const out: string[] = []
  out.push(`# ${path} (${a.format} trace): ${a.kernels} GPU activities on ${a.streams.length} stream(s)`)
  out.push(
    `span ${fixed(a.totalUs, 1)} µs (first GPU activity to last): GPU busy ${fixed(a.busyUs, 1)} µs, idle ${fixed(a.idleUs, 1)} µs (${percent(a.totalUs ? a.idleUs / a.totalUs : 0)})`,
    `communication ${fixed(a.commUs, 1)} µs = ${percent(a.commShare)} of GPU-busy time; on the critical path (no compute overlapping) ${fixed(a.exposedCommUs, 1)} µs`,
  )
  if (a.steps) {
    const st = a.steps
    out.push(
      `${st.count} steps (/${st.pattern}/): mean ${fixed(st.meanUs, 1)} µs, min ${fixed(st.minUs, 1)}, max ${fixed(st.maxUs, 1)} — ${st.steps.map((x) => `${x.name} ${fixed(x.durUs, 1)}`).join(', ')}`,
    )
  }
  out.push('', '## collectives')
  out.push(
    a.collectives.length
      ? textTable(
          ['collective', 'bytes', 'calls', 'GPU µs', 'mean µs', 'ranks', 'note'],
          a.collectives.map((x) => [
            x.name,
            x.bytes === null ? '?' : formatBytes(x.bytes),
            x.count,
            fixed(x.totalUs, 1),
            fixed(x.meanUs, 2),
            x.groupSize ?? '?',
            x.cpuOnly ? `${x.cpuOnly} without GPU kernel` : '',
          ]),
        )
      : 'none found',
  )
  out.push('', '## gaps between kernels, per stream')
  out.push(
    textTable(
      ['stream', 'kernels', 'busy µs', 'gaps', 'gap µs', 'max gap µs', 'before comm µs', 'after comm µs'],
      a.streams.map((s) => [
        s.stream,
        s.activities,
        fixed(s.busyUs, 1),
        s.gaps,
        fixed(s.gapUs, 1),
        fixed(s.maxGapUs, 1),
        fixed(s.gapsBeforeCommUs, 1),
        fixed(s.gapsAfterCommUs, 1),
      ]),
    ),
  )
  for (const s of a.streams) {
    for (const g of s.largestGaps)
      out.push(
        `stream ${s.stream}: gap of ${fixed(g.gapUs, 1)} µs at +${fixed(g.atUs, 1)} µs, before ${g.before.slice(0, 90)}`,
      )
  }
  out.push('', `## classification: ${c.label}`, c.reason, `(${c.seedRow})`)
  for (const s of c.nextSteps) out.push(`next: ${s}`)
  if (acrossRanks) out.push(...acrossRanksText(acrossRanks))
  out.push('', "## what if the AllReduces took llcomm's latency")
  if (!w.available) out.push(`not available: ${w.reason}`)
  else {
    out.push(`source ${w.source}, ${w.ranks} ranks; compute unchanged`)
    out.push(
      textTable(
        [
          'collective',
          'bytes',
          'calls',
          'trace mean µs',
          'replaces',
          'replaced mean µs',
          'llcomm µs',
          'algorithm',
          'saved µs',
        ],
        w.rows.map((r) => [
          r.name,
          r.bytes === null ? '?' : formatBytes(r.bytes),
          r.count,
          fixed(r.measuredMeanUs, 2),
          r.replaces,
          fixed(r.replacedMeanUs, 2),
          r.llcommUs === null ? '-' : fixed(r.llcommUs, 2),
          r.algorithm ?? '-',
          fixed(r.savedUs, 1),
        ]),
      ),
    )
    for (const r of w.rows)
      if (r.from.length)
        out.push(
          `${r.name} ${r.bytes === null ? '' : formatBytes(r.bytes)}: llcomm's figure from ${r.setup}: ${r.from.join(', ')}`,
        )
    out.push(`span ${fixed(w.stepUs, 1)} µs → ${fixed(w.predictedStepUs, 1)} µs (×${fixed(w.speedup, 3)})`)
  }
  for (const n of a.notes) out.push(`note: ${n}`)
  return out.join('\n')
}
