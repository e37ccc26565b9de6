/**
 * `--plot`: latency vs size per algorithm (log-log) above the speedup over the reference, as an SVG rendered
 * headless by vega (View.toSVG, no browser). vega and vega-lite are imported lazily, only when a plot is drawn:
 * the GPU machine's bundle does not carry them, and its JSON is plotted back here.
 */
import { writeFileSync } from 'node:fs'
import type { BenchDocument, BenchRow } from './document.js'
import { algorithmLabel, ratioToReference, referenceRows } from './reference.js'
import { formatBytes } from './sizes.js'

export interface PlotPoint {
  series: string
  bytes: number
  sizeLabel: string
  medianUs: number
  /** Reference medianUs / this medianUs: above 1 is faster than the reference. */
  speedup?: number
}

/** One series per algorithm label, split further by rank count, dtype and PDL when the document mixes them. */
export function plotPoints(rows: readonly BenchRow[]): PlotPoint[] {
  const refs = referenceRows(rows)
  const mixed = (f: (r: BenchRow) => unknown) => new Set(rows.map(f)).size > 1
  const splitRanks = mixed((r) => r.ranks)
  const splitDtype = mixed((r) => r.dtype)
  const splitPdl = mixed((r) => r.pdl)
  return rows.map((r) => {
    const tags = [
      ...(splitRanks ? [`${r.ranks}r`] : []),
      ...(splitDtype ? [r.dtype] : []),
      ...(splitPdl ? [`pdl ${r.pdl ? 'on' : 'off'}`] : []),
    ]
    const ratio = ratioToReference(r, refs)
    return {
      series: tags.length > 0 ? `${algorithmLabel(r)} [${tags.join(' ')}]` : algorithmLabel(r),
      bytes: r.bytes,
      sizeLabel: formatBytes(r.bytes),
      medianUs: r.medianUs,
      ...(ratio !== undefined && ratio > 0 ? { speedup: 1 / ratio } : {}),
    }
  })
}

function referenceName(rows: readonly BenchRow[]): string {
  const names = new Set([...referenceRows(rows).values()].map((r) => r.algorithm))
  return names.size > 0 ? [...names].join(' / ') : 'reference'
}

/** The x encoding of every size plot: bytes per rank on a log2 scale, labelled 8, 1K, 1M. */
export const SIZE_AXIS = {
  field: 'bytes',
  type: 'quantitative',
  scale: { type: 'log', base: 2 },
  axis: {
    title: 'message size per rank (bytes)',
    labelExpr:
      "datum.value >= 1048576 ? datum.value / 1048576 + 'M' : datum.value >= 1024 ? datum.value / 1024 + 'K' : datum.value",
  },
}

/** A dashed rule at y = 1, layered on a ratio panel. */
export const RULE_AT_ONE = {
  data: { values: [{ one: 1 }] },
  mark: { type: 'rule', strokeDash: [4, 4], color: 'gray' },
  encoding: { y: { field: 'one', type: 'quantitative' } },
}

/** The vega-lite specification (plain data; exported so tests can check it without rendering). */
export function benchPlotSpec(doc: BenchDocument): Record<string, unknown> {
  const points = plotPoints(doc.rows)
  const first = doc.rows[0]
  const title = first
    ? `llcomm AllReduce, ${first.backend}, ${[...new Set(doc.rows.map((r) => r.ranks))].join('/')} ranks — ${doc.machine.gpu ?? `${doc.machine.cpuModel}, ${doc.machine.cores} cores`}`
    : 'llcomm AllReduce'
  const xAxis = SIZE_AXIS
  const color = { field: 'series', type: 'nominal', title: 'algorithm' }
  const tooltip = [
    { field: 'series' },
    { field: 'sizeLabel', title: 'size' },
    { field: 'medianUs', format: '.3f' },
    { field: 'speedup', format: '.2f' },
  ]
  const hasSpeedup = points.some((p) => p.speedup !== undefined)
  const latencyPanel = {
    width: 560,
    height: 320,
    title: 'median latency (µs, log-log)',
    mark: { type: 'line', point: true },
    encoding: {
      x: xAxis,
      y: { field: 'medianUs', type: 'quantitative', scale: { type: 'log' }, axis: { title: 'median latency (µs)' } },
      color,
      tooltip,
    },
  }
  const speedupPanel = {
    width: 560,
    height: 220,
    title: `speedup over ${referenceName(doc.rows)} (above 1 = faster)`,
    transform: [{ filter: 'isValid(datum.speedup)' }],
    layer: [
      {
        mark: { type: 'line', point: true },
        encoding: {
          x: xAxis,
          y: { field: 'speedup', type: 'quantitative', scale: { type: 'log' }, axis: { title: 'speedup (×)' } },
          color,
          tooltip,
        },
      },
      RULE_AT_ONE,
    ],
  }
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v5.json',
    title: { text: title, subtitle: `${doc.date}  commit ${doc.commit.slice(0, 12)}` },
    data: { values: points },
    vconcat: hasSpeedup ? [latencyPanel, speedupPanel] : [latencyPanel],
    config: { font: 'sans-serif', background: 'white' },
  }
}

/** Renders a vega-lite specification to an SVG string, headless (also used by `llcomm decode --plot`). */
export async function renderVegaLiteSvg(spec: Record<string, unknown>): Promise<string> {
  const vegaLite = await import('vega-lite')
  const vega = await import('vega')
  const compiled = vegaLite.compile(spec as unknown as Parameters<typeof vegaLite.compile>[0])
  const view = new vega.View(vega.parse(compiled.spec), { renderer: 'none' })
  try {
    return await view.toSVG()
  } finally {
    view.finalize()
  }
}

/** Renders the bench spec to an SVG string, headless. */
export async function renderBenchSvg(doc: BenchDocument): Promise<string> {
  return renderVegaLiteSvg(benchPlotSpec(doc))
}

export async function writeBenchPlot(doc: BenchDocument, path: string): Promise<void> {
  writeFileSync(path, await renderBenchSvg(doc))
}
