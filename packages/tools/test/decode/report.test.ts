// The `llcomm decode` rows, table and document check (src/decode/report.ts), from synthetic measurements.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { isLlcommError } from 'llcomm/internal'
import { planDecodeStep } from '../../src/decode/plan.js'
import {
  buildDecodeRows,
  type DecodeDocument,
  type DecodeMeasurement,
  type DecodeRow,
  formatDecodeReport,
  NO_ALLREDUCE_NAME,
  validateDecodeDocument,
} from '../../src/decode/report.js'
import { findModel, loadModelTable } from '../../src/model/decode-tables.js'
import { decodeDocumentFixture } from '../support/decode-document.js'

const plan = planDecodeStep(findModel(loadModelTable(), 'llama-3.1-8b'), {
  tp: 2,
  batch: 4,
  context: 4096,
  layers: 2,
  smCount: 132,
})

const measured: DecodeMeasurement[] = [
  { algorithm: 'none', stepUs: [1000, 1010, 990, 1005, 995], ranksAgree: false, finite: true, maxRelDiffVsFirst: 0.3 },
  { algorithm: 'nccl', stepUs: [1100, 1120, 1080, 1090, 1110], ranksAgree: true, finite: true, maxRelDiffVsFirst: 0 },
  {
    algorithm: 'oneshot-ll',
    stepUs: [1040, 1030, 1050, 1020, 1060],
    ranksAgree: true,
    finite: true,
    maxRelDiffVsFirst: 0,
  },
]
const medians = { none: 1000, nccl: 1100, 'oneshot-ll': 1040 } as const
// The decode model's price of one call in the step (it does not price 'ring' here: undefined).
const modelled = (a: string) => (a === 'nccl' ? 13 : a === 'oneshot-ll' ? 4.5 : undefined)

const near = (a: number | undefined, b: number, what: string) =>
  assert.ok(a !== undefined && Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(b)), `${what}: ${a} vs ${b}`)

test('buildDecodeRows: medians, tokens/s, AllReduce in step, vs nccl, bench and model terms', () => {
  assert.equal(plan.allReducesPerStep, 4)
  const rows = buildDecodeRows(plan, measured, { nccl: 10, 'oneshot-ll': 4 }, modelled)
  assert.deepEqual(
    rows.map((r) => r.algorithm),
    ['none', 'nccl', 'oneshot-ll'],
  )
  const by = new Map(rows.map((r) => [r.algorithm, r]))
  for (const r of rows) {
    const m = medians[r.algorithm as keyof typeof medians]
    assert.equal(r.samples, 5)
    assert.equal(r.stepMedianUs, m)
    near(r.tokensPerS, (plan.batch * 1e6) / m, `${r.algorithm} tokens/s`)
    near(r.vsNccl, m / medians.nccl, `${r.algorithm} vs nccl`)
    assert.ok(r.stepP10Us <= r.stepMedianUs && r.stepMedianUs <= r.stepP90Us, `${r.algorithm} p10 ≤ median ≤ p90`)
  }
  const none = by.get('none') as DecodeRow
  assert.equal(none.allReduceInStepUs, undefined, 'none has no AllReduce term')
  assert.equal(none.benchUs, undefined, 'none has no bench figure')
  assert.equal(none.modelInStepUs, undefined)
  assert.equal(none.stepP10Us, 990)
  assert.equal(none.stepP90Us, 1010)
  assert.equal(none.ranksAgree, false)
  assert.equal(none.maxRelDiffVsFirst, 0.3)

  const nccl = by.get('nccl') as DecodeRow
  near(nccl.allReduceInStepUs, (1100 - 1000) / 4, 'nccl AllReduce in step')
  assert.equal(nccl.benchUs, 10)
  near(nccl.modelInStepUs, 13, 'nccl model in step')
  assert.equal(nccl.vsNccl, 1)

  const ll = by.get('oneshot-ll') as DecodeRow
  near(ll.allReduceInStepUs, (1040 - 1000) / 4, 'oneshot-ll AllReduce in step')
  assert.equal(ll.benchUs, 4)
  near(ll.modelInStepUs, 4.5, 'oneshot-ll model in step')
  near(ll.vsNccl, 1040 / 1100, 'oneshot-ll vs nccl')
})

test('buildDecodeRows: the bench figure and the model term are independent; no model, no model term', () => {
  const rows = buildDecodeRows(plan, measured, { nccl: 10 }, (a) => (a === 'nccl' ? 13 : undefined))
  const ll = rows.find((r) => r.algorithm === 'oneshot-ll') as DecodeRow
  assert.ok(!('benchUs' in ll), 'no benchUs key')
  assert.ok(!('modelInStepUs' in ll), 'no modelInStepUs key where the model does not price the algorithm')
  near(ll.allReduceInStepUs, 10, 'the AllReduce term does not need the bench')

  const noModel = buildDecodeRows(plan, measured, { nccl: 10, 'oneshot-ll': 4 }, undefined)
  for (const r of noModel) assert.ok(!('modelInStepUs' in r), `${r.algorithm}: no model term without a model`)
  assert.equal(noModel.find((r) => r.algorithm === 'nccl')?.benchUs, 10)
})

test('buildDecodeRows: without none there is no AllReduce term; without nccl no ratio', () => {
  const rows = buildDecodeRows(
    plan,
    measured.filter((m) => m.algorithm !== NO_ALLREDUCE_NAME),
    {},
    undefined,
  )
  for (const r of rows) assert.ok(!('allReduceInStepUs' in r), r.algorithm)
  const noNccl = buildDecodeRows(
    plan,
    measured.filter((m) => m.algorithm !== 'nccl'),
    {},
    undefined,
  )
  for (const r of noNccl) assert.ok(!('vsNccl' in r), r.algorithm)
})

function decodeDocument(rows: DecodeRow[]): DecodeDocument {
  return decodeDocumentFixture(plan, rows, measured, 1000, { command: 'llcomm decode --ranks 2 --layers 2 --batch 4' })
}

test('formatDecodeReport: a header with the shapes, a row per algorithm, n/a in ranks agree for none', () => {
  const doc = decodeDocument(buildDecodeRows(plan, measured, { nccl: 10, 'oneshot-ll': 4 }, modelled))
  const text = formatDecodeReport(doc)
  assert.match(text, /^llcomm decode: Llama-3\.1-8B, TP 2 \(devices 0,1\), batch 4, context 4096, 2 of 32 layers\n/)
  assert.match(text, /4 AllReduces of 32768 B bf16/)
  assert.match(text, /NVIDIA H200 · commit abc1234/)
  const lines = text.split('\n')
  const line = (alg: string) => {
    const l = lines.find((x) => x.trimStart().startsWith(`${alg} `))
    assert.ok(l, `a row for ${alg} in\n${text}`)
    return l
  }
  const none = line('none')
  assert.match(none, /1000\.0/)
  assert.match(none, /\bn\/a\s*$/)
  assert.match(line('nccl'), /1100\.0.*25\.00\s+10\.00\s+13\.00\s+1\.000×\s+yes\s*$/)
  assert.match(line('oneshot-ll'), /1040\.0.*10\.00\s+4\.00\s+4\.50\s+0\.945×\s+yes\s*$/)
  assert.ok(text.endsWith('\n'))
})

test('formatDecodeReport: NO for disagreeing ranks, NOT FINITE before anything else', () => {
  const rows = buildDecodeRows(
    plan,
    [{ ...measured[0], finite: false }, { ...measured[1], ranksAgree: false }, measured[2]],
    {},
    undefined,
  )
  const text = formatDecodeReport(decodeDocument(rows))
  assert.match(text, /none .*NOT FINITE/)
  assert.match(text, /nccl .*\bNO\s*$/m)
  assert.match(text, /oneshot-ll .*\byes\s*$/m)
})

test('validateDecodeDocument: accepts a built document (also through JSON), rejects a bench document', () => {
  const doc = decodeDocument(buildDecodeRows(plan, measured, {}, undefined))
  assert.equal(validateDecodeDocument(doc), doc)
  assert.deepEqual(validateDecodeDocument(JSON.parse(JSON.stringify(doc))), JSON.parse(JSON.stringify(doc)))
  const bench = {
    machine: doc.machine,
    commit: 'abc',
    date: doc.date,
    command: 'llcomm bench',
    rows: [{ algorithm: 'nccl', bytes: 8192, medianUs: 12 }],
  }
  const rejects = (value: unknown, message: RegExp) =>
    assert.throws(
      () => validateDecodeDocument(value, 'saved.json'),
      (e: unknown) => {
        assert.ok(isLlcommError(e, 'INVALID_ARGUMENT'))
        assert.match(e.message, message)
        return true
      },
    )
  rejects(bench, /decode saved\.json: not an llcomm decode document/)
  rejects(null, /not an llcomm decode document/)
  rejects('text', /not an llcomm decode document/)
  rejects({ ...doc, plan: undefined }, /plan missing/)
  rejects({ ...doc, devices: undefined }, /devices, machine or model missing/)
  rejects({ ...doc, rows: [{ algorithm: 'nccl' }] }, /rows\[0\] lacks algorithm or stepMedianUs/)
  rejects({ ...doc, rows: [doc.rows[0], { stepMedianUs: 3 }] }, /rows\[1\] lacks/)
})
