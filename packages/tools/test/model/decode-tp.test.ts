import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { estimateDecode } from '../../src/model/decode-model.js'
import { findGpu, findModel, loadGpuTable, loadModelTable } from '../../src/model/decode-tables.js'
import { readDecodeTpFile, validateDecodeTp } from '../../src/model/decode-tp.js'
import { getPlatform, loadAlgorithmTable, loadPlatformTable } from '../../src/model/latency-tables.js'

// data/models/cuda-h200x2-decode-tp2-2026-11-29.json: scripts/measure-decode.py --tp-real 2 on two H200s
// (bench/results/model-decode-tp2-h200x2-2026-11-29.txt is the report)
describe('decode model against real tensor-parallel steps on two H200s', () => {
  const doc = readDecodeTpFile()
  const v = validateDecodeTp(doc)

  it('reads the four measured steps: with and without their 2 × layers NCCL AllReduces', () => {
    assert.equal(doc.gpus, 2)
    assert.deepEqual(
      doc.rows.map((r) => [r.model, r.tp, r.batch, r.context, r.allReducesPerStep, r.allReduceBytes]),
      [
        ['llama-3.1-8b', 2, 1, 1024, 64, 8192],
        ['llama-3.1-8b', 2, 16, 1024, 64, 131072],
        ['llama-3.1-70b', 2, 1, 1024, 160, 16384],
        ['llama-3.1-70b', 2, 16, 4096, 160, 262144],
      ],
    )
    // an AllReduce costs more in the step than NCCL's back-to-back bench latency, every row
    for (const r of v.rows) assert.ok(r.perAllReduceUs > r.ncclModelUs + 3, `${r.perAllReduceUs} vs ${r.ncclModelUs}`)
  })

  it('fits the in-step term that data/models/gpus.json carries, and it brings every ITL within ±5%', () => {
    const table = findGpu(loadGpuTable(), 'h200').decodeStep?.allReduceInStepUs
    assert.ok(table?.value !== undefined && table.value !== null)
    assert.ok(Math.abs(v.allReduceInStepUs - table.value) < 1e-3, `${v.allReduceInStepUs} vs ${table.value}`)
    assert.match(table.source, /cuda-h200x2-decode-tp2-2026-11-29\.json/)
    const rel = (p: number, m: number) => (p - m) / m
    // without it the model is low on every row (−0.8 … −10.4%)
    assert.ok(v.rows.every((r) => rel(r.itlBareUs, r.row.graphArUs) < 0))
    for (const r of v.rows) {
      assert.ok(Math.abs(rel(r.itlUs, r.row.graphArUs)) < 0.05, `${r.row.model} b${r.row.batch}`)
      assert.ok(Math.abs(rel(r.itlLooUs, r.row.graphArUs)) < 0.05, `${r.row.model} b${r.row.batch} (row left out)`)
    }
  })

  it('adds the in-step term per AllReduce (each algorithm its own after-kernel part), not with launch none or at TP=1', () => {
    const gpu = findGpu(loadGpuTable(), 'h200')
    const inStep = gpu.decodeStep?.allReduceInStepUs?.value as number
    const base = {
      model: findModel(loadModelTable(), 'llama-3.1-8b'),
      gpu,
      batch: 1,
      contextTokens: 1024,
      algorithms: ['oneshot-ll'],
    }
    const platform = getPlatform(loadPlatformTable(), 'h200')
    const est = (tp: number, launch: 'graph' | 'none') =>
      estimateDecode({ ...base, tp, launch }, loadAlgorithmTable(), platform)
    const g = est(2, 'graph')
    const row = g.perAlgorithm[0]
    // NCCL's own part of the fitted in-step term, as measured in llcomm decode's step, swapped for oneshot-ll's
    const after = gpu.decodeStep?.allReduceInDecodeStepUs?.values as Record<string, number>
    assert.ok(after.nccl > 3 && after['oneshot-ll'] < 1, JSON.stringify(after))
    const own = inStep - after.nccl + after['oneshot-ll']
    assert.ok(Math.abs(row.commUs - g.allReducesPerToken * (row.allReduceUs + own)) < 1e-9)
    const nccl = estimateDecode(
      { ...base, algorithms: ['nccl'], tp: 2, launch: 'graph' },
      loadAlgorithmTable(),
      platform,
    )
    const n0 = nccl.perAlgorithm[0]
    assert.ok(Math.abs(n0.commUs - nccl.allReducesPerToken * (n0.allReduceUs + inStep)) < 1e-9)
    const n = est(2, 'none').perAlgorithm[0]
    assert.ok(Math.abs(n.commUs - g.allReducesPerToken * n.allReduceUs) < 1e-9)
    assert.equal(est(1, 'graph').perAlgorithm[0].commUs, 0)
  })
})
