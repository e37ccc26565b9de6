/**
 * Plain-text tables for stdout: one row per measurement (nccl-tests style), then per size the median of every
 * algorithm beside its ratio to the reference (best NCCL on cuda, oneshot-barrier otherwise).
 */
import type { BenchDocument, BenchRow } from './document.js'
import { algorithmLabel, comparisonKey, ratioToReference, referenceRows } from './reference.js'
import { formatBytes } from './sizes.js'

/** Columns padded to their widest cell; text left-aligned, numbers right-aligned. */
export function formatTable(
  headers: readonly string[],
  cells: readonly (readonly string[])[],
  rightAligned: readonly boolean[],
): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...cells.map((row) => row[i].length)))
  const line = (row: readonly string[]) =>
    row
      .map((cell, i) => (rightAligned[i] ? cell.padStart(widths[i]) : cell.padEnd(widths[i])))
      .join('  ')
      .trimEnd()
  return [line(headers), line(widths.map((w) => '-'.repeat(w))), ...cells.map(line)].join('\n')
}

/** µs with three significant figures at least: 1.234, 12.35, 123.5, 1234. */
export function formatMicros(us: number): string {
  if (us < 10) return us.toFixed(3)
  if (us < 100) return us.toFixed(2)
  if (us < 1000) return us.toFixed(1)
  return us.toFixed(0)
}

export function formatBandwidth(gbs: number): string {
  if (gbs === 0) return '0'
  if (gbs < 0.01) return gbs.toExponential(1)
  if (gbs < 10) return gbs.toFixed(3)
  return gbs.toFixed(1)
}

export function formatRatio(ratio: number | undefined): string {
  return ratio === undefined ? '-' : `${ratio.toFixed(2)}x`
}

/** One line per row: size, dtype, [pdl], algorithm, median, p99, algbw, busbw, wrong, [skew wait], vs ref. */
export function formatRowsTable(rows: readonly BenchRow[]): string {
  const refs = referenceRows(rows)
  const withPdl = rows.some((r) => r.pdl !== undefined)
  const withSkew = rows.some((r) => r.skewUs !== undefined || r.computeUs !== undefined)
  const withBackToBack = rows.some((r) => r.backToBackUs !== undefined)
  const headers = [
    'size',
    'dtype',
    ...(withPdl ? ['pdl'] : []),
    'algorithm',
    'median us',
    'p99 us',
    ...(withBackToBack ? ['b2b us'] : []),
    'algbw GB/s',
    'busbw GB/s',
    'wrong',
    ...(withSkew ? [rows.some((r) => r.computeUs !== undefined) ? 'delay us' : 'skew wait us'] : []),
    'vs ref',
  ]
  const right = headers.map((h) => !['dtype', 'pdl', 'algorithm'].includes(h))
  const cells = rows.map((r) => [
    formatBytes(r.bytes),
    r.dtype,
    ...(withPdl ? [r.pdl === undefined ? '-' : r.pdl ? 'on' : 'off'] : []),
    algorithmLabel(r),
    formatMicros(r.medianUs),
    formatMicros(r.p99Us),
    ...(withBackToBack ? [r.backToBackUs === undefined ? '-' : formatMicros(r.backToBackUs)] : []),
    formatBandwidth(r.algbwGBs),
    formatBandwidth(r.busbwGBs),
    String(r.wrong),
    ...(withSkew ? [r.skewWaitUs === undefined ? '-' : formatMicros(r.skewWaitUs)] : []),
    formatRatio(ratioToReference(r, refs)),
  ])
  return formatTable(headers, cells, right)
}

/**
 * Per size (and dtype, pdl), every algorithm's median µs with its ratio to the reference side by side:
 * `4K | oneshot-barrier 41.2 | oneshot-ll 20.1 (0.49x) | ...`.
 */
export function formatRatioTable(rows: readonly BenchRow[]): string {
  const refs = referenceRows(rows)
  const labels = [...new Set(rows.map(algorithmLabel))]
  const groups = new Map<string, BenchRow[]>()
  for (const r of rows) {
    const key = comparisonKey(r)
    groups.set(key, [...(groups.get(key) ?? []), r])
  }
  const withPdl = rows.some((r) => r.pdl !== undefined)
  const dtypes = new Set(rows.map((r) => r.dtype))
  const ranks = new Set(rows.map((r) => r.ranks))
  const headers = [
    ...(ranks.size > 1 ? ['ranks'] : []),
    'size',
    ...(dtypes.size > 1 ? ['dtype'] : []),
    ...(withPdl ? ['pdl'] : []),
    'reference',
    ...labels,
  ]
  const cells = [...groups.values()].map((group) => {
    const first = group[0]
    const ref = refs.get(comparisonKey(first))
    return [
      ...(ranks.size > 1 ? [String(first.ranks)] : []),
      formatBytes(first.bytes),
      ...(dtypes.size > 1 ? [first.dtype] : []),
      ...(withPdl ? [first.pdl === undefined ? '-' : first.pdl ? 'on' : 'off'] : []),
      ref ? `${ref.algorithm} ${formatMicros(ref.medianUs)}us` : '-',
      ...labels.map((label) => {
        const r = group.find((g) => algorithmLabel(g) === label)
        if (!r) return '-'
        const ratio = ratioToReference(r, refs)
        return ratio === undefined ? formatMicros(r.medianUs) : `${formatMicros(r.medianUs)} (${formatRatio(ratio)})`
      }),
    ]
  })
  const right = headers.map((h) => !['dtype', 'pdl', 'reference'].includes(h))
  return formatTable(headers, cells, right)
}

/** The whole stdout report of a run: a header line, the row table, the ratio table, and what was skipped. */
export function formatBenchReport(doc: BenchDocument): string {
  const first = doc.rows[0]
  const m = doc.machine
  const parts = [
    `# llcomm bench  ${doc.date}  commit ${doc.commit.slice(0, 12)}`,
    `# machine ${m.hostname}: ${m.cpuModel}, ${m.cores} cores${m.gpu ? `, ${m.gpu}` : ''}${m.loadAverage1m !== undefined ? `, load average ${m.loadAverage1m}` : ''}`,
  ]
  if (first)
    parts.push(
      `# backend ${first.backend}, ${first.ranks} ranks, ${first.iters} iters after ${first.warmup} warmup; ${
        first.repeats !== undefined
          ? `${first.repeats} interleaved rounds, median = median of the round medians`
          : 'times are medians over iterations'
      }, measured inside the ranks`,
    )
  if (doc.rows.some((r) => r.backToBackUs !== undefined))
    parts.push('# b2b us: the timed loop run back to back, per call (last finish - first arrival) / iters')
  parts.push(
    '',
    formatRowsTable(doc.rows),
    '',
    '# median us per size (ratio to reference: below 1x is faster)',
    formatRatioTable(doc.rows),
  )
  if (doc.rows.some((r) => r.fallback))
    parts.push('', '# (fallback): the requested algorithm could not serve this shape; the named one ran')
  for (const s of doc.skipped ?? [])
    parts.push(`# skipped ${s.algorithm} ${s.dtype} ${formatBytes(s.bytes)}: ${s.reason}`)
  return `${parts.join('\n')}\n`
}
