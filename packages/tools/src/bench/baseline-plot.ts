/**
 * `llcomm bench --baseline FILE --plot out.svg`: latency vs size of llcomm's best, its nccl row and every baseline
 * algorithm (log-log), above llcomm's best over each baseline (below 1 = llcomm faster). The same vega-lite
 * renderer as the bench plot.
 */
import { writeFileSync } from 'node:fs'
import type { BaselineDocument, SideBySide } from './baseline.js'
import type { BenchDocument } from './document.js'
import { RULE_AT_ONE, renderVegaLiteSvg, SIZE_AXIS } from './plot.js'
import { formatBytes } from './sizes.js'

export interface SideBySidePoint {
  series: string
  /** the facet column: one per dtype (and rank count, when the documents mix them) */
  panel: string
  bytes: number
  sizeLabel: string
  medianUs?: number
  /** llcomm's best ÷ this series' time (baselines only) */
  ratio?: number
}

export function sideBySidePoints(s: SideBySide): SideBySidePoint[] {
  const ranks = new Set(s.rows.map((r) => r.ranks))
  const points: SideBySidePoint[] = []
  for (const r of s.rows) {
    const panel = ranks.size > 1 ? `${r.dtype}, ${r.ranks} ranks` : r.dtype
    const at = { panel, bytes: r.bytes, sizeLabel: formatBytes(r.bytes) }
    if (r.best) points.push({ series: 'llcomm best', ...at, medianUs: r.best.medianUs })
    if (r.nccl !== undefined) points.push({ series: 'nccl (llcomm bench)', ...at, medianUs: r.nccl })
    for (const [algorithm, v] of Object.entries(r.baselines)) {
      if (!v?.right) continue // a wrong result has no time worth drawing
      points.push({
        series: algorithm,
        ...at,
        medianUs: v.medianUs,
        ...(r.best ? { ratio: r.best.medianUs / v.medianUs } : {}),
      })
    }
  }
  return points
}

export function sideBySidePlotSpec(
  s: SideBySide,
  bench: BenchDocument,
  base: BaselineDocument,
): Record<string, unknown> {
  const x = SIZE_AXIS
  const color = { field: 'series', type: 'nominal', title: 'series', legend: { labelLimit: 320 } }
  const tooltip = [{ field: 'series' }, { field: 'sizeLabel', title: 'size' }, { field: 'medianUs', format: '.3f' }]
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v5.json',
    title: {
      text: `llcomm side by side — ${bench.machine.gpu ?? 'GPU not named'}`,
      subtitle: `llcomm ${bench.commit.slice(0, 12)} ${bench.date}; baseline ${base.commit.slice(0, 12)} ${base.date}`,
    },
    data: { values: sideBySidePoints(s) },
    vconcat: [
      {
        facet: { column: { field: 'panel', type: 'nominal', title: null } },
        spec: {
          width: 420,
          height: 300,
          title: 'median latency per call (µs, log-log)',
          transform: [{ filter: 'isValid(datum.medianUs)' }],
          mark: { type: 'line', point: true },
          encoding: {
            x,
            y: { field: 'medianUs', type: 'quantitative', scale: { type: 'log' }, axis: { title: 'µs' } },
            color,
            tooltip,
          },
        },
      },
      {
        facet: { column: { field: 'panel', type: 'nominal', title: null } },
        spec: {
          width: 420,
          height: 200,
          title: "llcomm's best ÷ each baseline (below 1 = llcomm faster)",
          transform: [{ filter: 'isValid(datum.ratio)' }],
          layer: [
            {
              mark: { type: 'line', point: true },
              encoding: {
                x,
                y: { field: 'ratio', type: 'quantitative', scale: { type: 'log' }, axis: { title: 'ratio (×)' } },
                color,
                tooltip: [...tooltip, { field: 'ratio', format: '.2f' }],
              },
            },
            RULE_AT_ONE,
          ],
        },
      },
    ],
    config: { font: 'sans-serif', background: 'white' },
  }
}

export async function writeSideBySidePlot(
  s: SideBySide,
  bench: BenchDocument,
  base: BaselineDocument,
  path: string,
): Promise<void> {
  writeFileSync(path, await renderVegaLiteSvg(sideBySidePlotSpec(s, bench, base)))
}
