/**
 * `llcomm decode --plot`: the step time per algorithm (bars, the step without AllReduce marked) above what one
 * AllReduce costs in the step against the same call back to back, as an SVG (vega-lite, rendered headless by
 * src/bench/plot.ts; vega is imported only when a plot is drawn).
 */
import { writeFileSync } from 'node:fs'
import type { DecodeDocument } from './report.js'

export function decodePlotSpec(doc: DecodeDocument): Record<string, unknown> {
  const order = doc.rows.map((r) => r.algorithm)
  const steps = doc.rows.map((r) => ({ algorithm: r.algorithm, stepMs: r.stepMedianUs / 1000 }))
  const perCall = doc.rows.flatMap((r) => [
    ...(r.allReduceInStepUs !== undefined
      ? [{ algorithm: r.algorithm, what: 'in the step', us: r.allReduceInStepUs }]
      : []),
    ...(r.benchUs !== undefined ? [{ algorithm: r.algorithm, what: 'back to back', us: r.benchUs }] : []),
  ])
  const y = { field: 'algorithm', type: 'nominal', sort: order, title: null }
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v5.json',
    title: {
      text: `llcomm decode: ${doc.model}, TP ${doc.tp}, batch ${doc.batch}, context ${doc.context} — ${doc.machine.gpu ?? 'GPU'}`,
      subtitle: `${doc.date}  commit ${doc.commit.slice(0, 12)}`,
    },
    vconcat: [
      {
        width: 520,
        data: { values: steps },
        mark: 'bar',
        encoding: {
          y,
          x: { field: 'stepMs', type: 'quantitative', title: 'decode step (ms, median)' },
          color: {
            condition: { test: "datum.algorithm === 'none'", value: '#999999' },
            value: '#4c78a8',
          },
          tooltip: [{ field: 'algorithm' }, { field: 'stepMs', format: '.3f' }],
        },
      },
      {
        width: 520,
        data: { values: perCall },
        mark: 'bar',
        encoding: {
          y,
          yOffset: { field: 'what' },
          x: { field: 'us', type: 'quantitative', title: `one AllReduce of ${doc.plan.allReduceBytes} B (µs)` },
          color: { field: 'what', type: 'nominal', title: null },
        },
      },
    ],
    config: { font: 'sans-serif', background: 'white' },
  }
}

export async function writeDecodePlot(doc: DecodeDocument, path: string): Promise<void> {
  const { renderVegaLiteSvg } = await import('../bench/plot.js')
  writeFileSync(path, await renderVegaLiteSvg(decodePlotSpec(doc)))
}
