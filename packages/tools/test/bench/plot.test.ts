import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { BenchDocument, BenchRow } from '../../src/bench/document.js'
import { benchPlotSpec, plotPoints, renderBenchSvg } from '../../src/bench/plot.js'
import { benchRow } from '../support/bench-rows.js'

const row = (algorithm: BenchRow['algorithm'], bytes: number, medianUs: number): BenchRow =>
  benchRow(algorithm, bytes, medianUs)
const doc: BenchDocument = {
  machine: { hostname: 'h', cpuModel: 'cpu', cores: 2 },
  commit: 'abc',
  date: '2026-11-29T08:00:00.000Z',
  command: 'llcomm bench',
  rows: [
    row('oneshot-barrier', 64, 20),
    row('oneshot-ll', 64, 5),
    row('oneshot-barrier', 4096, 40),
    row('oneshot-ll', 4096, 30),
  ],
}

test('plot points carry the speedup over the reference', () => {
  const points = plotPoints(doc.rows)
  assert.equal(points[1].speedup, 4)
  assert.equal(points[3].speedup, 40 / 30)
  const spec = benchPlotSpec(doc) as { vconcat: unknown[] }
  assert.equal(spec.vconcat.length, 2)
})

test('the SVG renders headless with one line per algorithm in each panel', async () => {
  const svg = await renderBenchSvg(doc)
  assert.match(svg, /^<svg/)
  assert.match(svg, /median latency/)
  assert.match(svg, /speedup over oneshot-barrier/)
  // Two series × two panels = four line paths (role-mark line groups).
  const lineMarks = svg.match(/class="mark-line role-mark/g) ?? []
  assert.equal(lineMarks.length, 4)
  assert.match(svg, /oneshot-ll/)
})
