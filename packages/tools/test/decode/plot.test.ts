// `llcomm decode --plot`: the spec holds every algorithm's step and per-call bars, and it renders to an SVG headless.
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { renderVegaLiteSvg } from '../../src/bench/plot.js'
import { decodePlotSpec } from '../../src/decode/plot.js'
import { validateDecodeDocument } from '../../src/decode/report.js'
import { repoPath } from '../support/paths.js'

const SAVED = repoPath('bench/results/cuda-h200x2-decode-8b-b1-c4096-2026-11-29b.json')

test('decode plot: a bar per algorithm, in-step and back-to-back bars per AllReduce, rendered as SVG', async () => {
  const doc = validateDecodeDocument(JSON.parse(readFileSync(SAVED, 'utf8')), SAVED)
  const spec = decodePlotSpec(doc) as { vconcat: { data: { values: Record<string, unknown>[] } }[] }
  const [steps, perCall] = spec.vconcat.map((p) => p.data.values)
  assert.deepEqual(
    steps.map((v) => v.algorithm),
    doc.rows.map((r) => r.algorithm),
  )
  const withAr = doc.rows.filter((r) => r.algorithm !== 'none')
  assert.equal(perCall.filter((v) => v.what === 'in the step').length, withAr.length)
  assert.equal(perCall.filter((v) => v.what === 'back to back').length, withAr.length)
  const svg = await renderVegaLiteSvg(spec as unknown as Record<string, unknown>)
  assert.match(svg, /^<svg/)
  for (const r of doc.rows) assert.ok(svg.includes(r.algorithm), `${r.algorithm} labelled in the SVG`)
})
