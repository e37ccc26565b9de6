/**
 * The --html page: self-contained (inline SVG and CSS, no network assets): a timeline of GPU activities per
 * stream with collectives highlighted, a bar of the step's time shares, and the tables of the text report.
 */
import type { TraceAnalysis } from './analyze.js'
import type { Classification } from './classify.js'
import type { NormalizedTrace } from './trace-types.js'
import type { WhatIf } from './what-if.js'

function esc(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;')
}

const COLORS = { compute: '#4e79a7', comm: '#e15759', idle: '#d3d3d3', exposed: '#b07aa1' }

/**
 * A mapping from trace time to x that shows busy time to scale and shrinks each idle gap longer than
 * `maxGapUs` to `maxGapUs` (drawn as a dashed break), so that kernels stay visible across long host stalls.
 */
function compressedTime(
  acts: NormalizedTrace['activities'],
  compress: boolean,
): { toX: (us: number) => number; totalUs: number; breaks: number[]; maxGapUs: number } {
  const spans = acts.map((a) => [a.startUs, a.startUs + a.durUs] as const).sort((x, y) => x[0] - y[0])
  const t0 = spans[0][0]
  const busy = spans.reduce((s, [a, b]) => s + (b - a), 0)
  const maxGapUs = compress ? Math.max(busy / 100, 1) : Number.POSITIVE_INFINITY
  // breakpoints: (trace time, shown time) pairs at each shrunk gap
  const points: [number, number][] = [[t0, 0]]
  const breaks: number[] = []
  let end = t0
  let shown = 0
  for (const [a, b] of spans) {
    if (a - end > maxGapUs) {
      shown += end - points[points.length - 1][0] + maxGapUs
      points.push([a, shown])
      // mark only the stalls that were shortened a lot, so that an eager-mode trace is not all dashes
      if (a - end > 100 * maxGapUs) breaks.push(shown - maxGapUs / 2)
    }
    end = Math.max(end, b)
  }
  const totalUs = shown + (end - points[points.length - 1][0])
  const toX = (us: number): number => {
    // binary search for the last breakpoint at or before `us`
    let lo = 0
    let hi = points.length - 1
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1
      if (points[mid][0] <= us) lo = mid
      else hi = mid - 1
    }
    return points[lo][1] + (us - points[lo][0])
  }
  return { toX, totalUs, breaks, maxGapUs }
}

/** Above this many activities the timeline is drawn per pixel column (comm wins a column), keeping the page small. */
const MAX_RECTS = 5000

type ToX = (us: number) => number

function activityRects(
  acts: NormalizedTrace['activities'],
  streams: string[],
  label: number,
  rowH: number,
  scale: number,
  toX: ToX,
): string {
  return acts
    .map((a) => {
      const x = label + toX(a.startUs) * scale
      const y = 20 + streams.indexOf(a.stream) * rowH
      const w = Math.max(a.durUs * scale, 0.5)
      const color = a.collective ? COLORS.comm : COLORS.compute
      const title = `${a.name.slice(0, 120)} — ${a.durUs.toFixed(2)} µs${a.collective ? ` — ${a.collective.name} ${a.collective.bytes ?? '?'} B` : ''}`
      return `<rect x="${x.toFixed(2)}" y="${y}" width="${w.toFixed(2)}" height="${rowH - 6}" fill="${color}"><title>${esc(title)}</title></rect>`
    })
    .join('')
}

function binnedRects(
  acts: NormalizedTrace['activities'],
  streams: string[],
  label: number,
  rowH: number,
  scale: number,
  toX: ToX,
  width: number,
): string {
  const columns = width - label - 10
  // 0 = idle, 1 = compute, 2 = communication, per stream and pixel column
  const cells = streams.map(() => new Uint8Array(columns + 1))
  const row = new Map(streams.map((st, i) => [st, i]))
  for (const a of acts) {
    const c = cells[row.get(a.stream) as number]
    const x0 = Math.max(0, Math.min(columns, Math.floor(toX(a.startUs) * scale)))
    const x1 = Math.max(x0, Math.min(columns, Math.floor(toX(a.startUs) * scale + a.durUs * scale)))
    const v = a.collective ? 2 : 1
    for (let x = x0; x <= x1; x++) if (c[x] < v) c[x] = v
  }
  const out: string[] = []
  cells.forEach((c, i) => {
    let x = 0
    while (x <= columns) {
      const v = c[x]
      let end = x
      while (end + 1 <= columns && c[end + 1] === v) end++
      if (v > 0)
        out.push(
          `<rect x="${label + x}" y="${20 + i * rowH}" width="${end - x + 1}" height="${rowH - 6}" fill="${v === 2 ? COLORS.comm : COLORS.compute}"/>`,
        )
      x = end + 1
    }
  })
  return out.join('')
}

function timelineSvg(activities: NormalizedTrace['activities'], width: number, compress: boolean): string {
  const acts = activities
  if (acts.length === 0) return '<p>no GPU activity</p>'
  const streams = [...new Set(acts.map((a) => a.stream))].sort()
  const time = compressedTime(acts, compress)
  const label = 90
  const rowH = 22
  const scale = (width - label - 10) / Math.max(time.totalUs, 1e-9)
  const rects =
    acts.length <= MAX_RECTS
      ? activityRects(acts, streams, label, rowH, scale, time.toX)
      : binnedRects(acts, streams, label, rowH, scale, time.toX, width)
  const h = 30 + streams.length * rowH
  const breaks = time.breaks
    .map(
      (b) =>
        `<line x1="${(label + b * scale).toFixed(2)}" x2="${(label + b * scale).toFixed(2)}" y1="16" y2="${h - 4}" stroke="#888" stroke-dasharray="3,3"/>`,
    )
    .join('')
  const names = streams
    // several ranks' traces: streams are named 'rank R <stream>' (diagnose.ts), short enough without the prefix
    .map(
      (s, i) =>
        `<text x="4" y="${20 + i * rowH + 12}" font-size="11">${s.startsWith('rank ') ? '' : 'stream '}${esc(s)}</text>`,
    )
    .join('')
  const axis = `<text x="${label}" y="12" font-size="11">0 µs</text><text x="${width - 10}" y="12" font-size="11" text-anchor="end">${time.totalUs.toFixed(1)} µs shown${compress ? ` (idle gaps over ${time.maxGapUs.toFixed(1)} µs shortened to it)` : ''}</text>`
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${h}" role="img" aria-label="timeline">${axis}${names}${breaks}${rects}</svg>`
}

const ZOOM_ACTIVITIES = 40

function lastActivities(trace: NormalizedTrace, n: number): NormalizedTrace['activities'] {
  return [...trace.activities].sort((a, b) => a.startUs - b.startUs).slice(-n)
}

function sharesSvg(a: TraceAnalysis, width: number): string {
  const total = a.totalUs || 1
  const overlappedComm = a.commUs - a.exposedCommUs
  const parts = [
    { name: 'compute', us: a.busyUs - a.exposedCommUs, color: COLORS.compute },
    { name: 'communication on the critical path', us: a.exposedCommUs, color: COLORS.comm },
    { name: 'idle', us: a.idleUs, color: COLORS.idle },
  ]
  let x = 0
  const bar = parts
    .map((p) => {
      const w = (p.us / total) * width
      const r = `<rect x="${x.toFixed(2)}" y="0" width="${Math.max(w, 0).toFixed(2)}" height="24" fill="${p.color}"><title>${esc(p.name)}: ${p.us.toFixed(1)} µs</title></rect>`
      x += w
      return r
    })
    .join('')
  const legend = parts
    .map(
      (p, i) =>
        `<rect x="${i * 340}" y="34" width="12" height="12" fill="${p.color}"/><text x="${i * 340 + 16}" y="45" font-size="12">${esc(p.name)} ${((p.us / total) * 100).toFixed(1)}%</text>`,
    )
    .join('')
  const note =
    overlappedComm > 0
      ? `<text x="0" y="66" font-size="12">communication overlapped by compute: ${overlappedComm.toFixed(1)} µs</text>`
      : ''
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="72" role="img" aria-label="time shares">${bar}${legend}${note}</svg>`
}

function collectivesSvg(a: TraceAnalysis, width: number): string {
  const cs = a.collectives.filter((c) => c.totalUs > 0)
  if (cs.length === 0) return ''
  const max = Math.max(...cs.map((c) => c.totalUs))
  const rows = cs
    .map((c, i) => {
      const w = (c.totalUs / max) * (width - 260)
      return `<text x="0" y="${i * 22 + 15}" font-size="12">${esc(c.name)} ${c.bytes ?? '?'} B ×${c.count}</text><rect x="200" y="${i * 22 + 3}" width="${w.toFixed(2)}" height="16" fill="${COLORS.comm}"/><text x="${205 + w}" y="${i * 22 + 15}" font-size="12">${c.totalUs.toFixed(1)} µs</text>`
    })
    .join('')
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${cs.length * 22 + 6}" role="img" aria-label="collective time">${rows}</svg>`
}

export function diagnoseHtml(
  path: string,
  trace: NormalizedTrace,
  a: TraceAnalysis,
  c: Classification,
  w: WhatIf,
  text: string,
): string {
  const width = 1100
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>llcomm diagnose — ${esc(path)}</title>
<style>body{font-family:system-ui,sans-serif;margin:24px;max-width:${width + 40}px}pre{background:#f6f6f6;padding:12px;overflow:auto;font-size:12px}h2{margin-top:28px}</style>
</head><body>
<h1>llcomm diagnose</h1>
<p>${esc(path)} — ${esc(c.label)}: ${esc(c.reason)}</p>
<p>step ${a.totalUs.toFixed(1)} µs, communication ${(a.commShare * 100).toFixed(1)}% of GPU-busy time${w.available ? `, with llcomm ${w.predictedStepUs.toFixed(1)} µs (×${w.speedup.toFixed(3)})` : ''}</p>
<h2>Time shares</h2>
${sharesSvg(a, width)}
<h2>Timeline, idle gaps shortened (red: collectives; dashed: a shortened gap)</h2>
${timelineSvg(trace.activities, width, true)}
<h2>Close-up: the last ${ZOOM_ACTIVITIES} GPU activities, to scale</h2>
${timelineSvg(lastActivities(trace, ZOOM_ACTIVITIES), width, false)}
<h2>Timeline to scale</h2>
${timelineSvg(trace.activities, width, false)}
<h2>Collective time</h2>
${collectivesSvg(a, width)}
<h2>Report</h2>
<pre>${esc(text)}</pre>
</body></html>
`
}
