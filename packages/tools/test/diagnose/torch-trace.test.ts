import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { gunzipSync } from 'node:zlib'
import { analyzeTrace } from '../../src/diagnose/analyze.js'
import { classify } from '../../src/diagnose/classify.js'
import { parseTraceText, readTraceFile } from '../../src/diagnose/read-trace.js'
import { diagnoseHtml } from '../../src/diagnose/report-html.js'
import { diagnoseText } from '../../src/diagnose/report-text.js'
import { whatIf } from '../../src/diagnose/what-if.js'

// Recorded on one H200 by scripts/record-torch-trace.py (8-layer Llama-style decoder, hidden 2048, bf16, random
// weights, 3 decode steps, torch.distributed NCCL at world_size 1: 2 AllReduces of 2048 bf16 elements per layer).
const FIXTURE = fileURLToPath(
  new URL('../../../test/fixtures/traces/torch-llama-decode-h200.trace.json.gz', import.meta.url),
)
const LAYERS = 8
const STEPS = 3

type Json = Record<string, unknown>
function rawEvents(): Json[] {
  return (JSON.parse(gunzipSync(readFileSync(FIXTURE)).toString('utf8')) as { traceEvents: Json[] }).traceEvents
}

describe('diagnose on a real PyTorch profiler trace', () => {
  it('finds every AllReduce with its size and the NCCL kernel of each', () => {
    const trace = readTraceFile(FIXTURE)
    assert.equal(trace.format, 'pytorch')
    const a = analyzeTrace(trace)
    const ars = a.collectives.filter((c) => c.name === 'allreduce')
    assert.equal(ars.length, 1)
    assert.equal(ars[0].count, 2 * LAYERS * STEPS)
    assert.equal(ars[0].bytes, 2048 * 2)
    assert.equal(ars[0].groupSize, 1)
    assert.equal(ars[0].cpuOnly, 0)
    assert.equal(trace.cpuCollectives.length, 2 * LAYERS * STEPS)
    assert.ok(a.commShare > 0 && a.commShare < 0.5, String(a.commShare))
    assert.ok(a.busyUs <= a.totalUs && a.commUs <= a.busyUs)
    const c = classify(a)
    const text = diagnoseText('fixture', a, c, whatIf(a, undefined))
    assert.match(text, /allreduce/)
    const html = diagnoseHtml('fixture', trace, a, c, whatIf(a, undefined), text)
    assert.ok(html.length < 2_000_000 && html.includes('<svg'))
  })

  it('finds the decode steps from their annotations', () => {
    const a = analyzeTrace(readTraceFile(FIXTURE), { stepPattern: '^decode_step_\\d+$' })
    assert.equal(a.steps?.count, STEPS)
    assert.ok((a.steps?.maxUs ?? 0) <= a.totalUs)
    assert.equal(analyzeTrace(readTraceFile(FIXTURE)).steps, undefined) // no ProfilerStep#N in this trace
  })

  it('still ties the kernels to their ops through correlation ids when kernels carry no collective args', () => {
    const events = rawEvents().map((e) => {
      if (e.cat !== 'kernel') return e
      const {
        ['Collective name']: _n,
        ['In msg nelems']: _i,
        ['Out msg nelems']: _o,
        dtype: _d,
        ['Group size']: _g,
        ...args
      } = e.args as Json
      return { ...e, args }
    })
    const trace = parseTraceText(JSON.stringify({ traceEvents: events }))
    const comm = trace.activities.filter((x) => x.collective)
    assert.equal(comm.length, 2 * LAYERS * STEPS)
    assert.ok(comm.every((x) => x.collective?.via === 'correlation' && x.collective.bytes === 4096))
  })

  it('and through ac2g flow events when kernels carry no correlation either', () => {
    const events = rawEvents().map((e) => {
      if (e.cat !== 'kernel') return e
      const { ['Collective name']: _n, correlation: _c, ['External id']: _x, ...args } = e.args as Json
      return { ...e, args }
    })
    const trace = parseTraceText(JSON.stringify({ traceEvents: events }))
    const comm = trace.activities.filter((x) => x.collective)
    assert.equal(comm.length, 2 * LAYERS * STEPS)
    assert.ok(comm.every((x) => x.collective?.via === 'correlation' && x.collective.bytes === 4096))
  })
})
