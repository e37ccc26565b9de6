// The decode step (`llcomm decode`) on cuda: a small Llama-shaped model on 2 ranks against the float64 reference
// (test/support/decode-reference.ts) for every kernel together, with and without AllReduce, at batch sizes that use
// each GEMV variant and contexts from 1 token (one attention split) to several splits; every rank's residual stream
// must be bitwise identical after an AllReduce step. Then one timed run of Llama-3.1-8B's real shapes (2 layers).
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { createCudaCommunicator, DTYPE_CODECS } from 'llcomm/internal'
import { planDecodeStep } from '../../src/decode/plan.js'
import { type DecodeAlgorithm, decodeStep } from '../../src/decode/step.js'
import type { ModelArchitecture } from '../../src/model/decode-tables.js'
import { findModel, loadModelTable } from '../../src/model/decode-tables.js'
import { decodeReference } from '../support/decode-reference.js'
import { ON_GPU, recordCase } from './gpu-harness.js'

const TINY: ModelArchitecture = {
  ...findModel(loadModelTable(), 'llama-3.1-8b'),
  name: 'tiny-llama',
  layers: 2,
  hiddenSize: 256,
  heads: 4,
  kvHeads: 2,
  intermediateSize: 512,
  vocabSize: 512,
}

const DEVICES = process.env.LLCOMM_GPU_DECODE_DEVICES?.split(',').map(Number) ?? [0, 0]

/** max |got − want| / (|want| + rms(want)) over the elements. */
function worstError(got: ArrayLike<number>, want: Float64Array): number {
  let rms = 0
  for (const w of want) rms += w * w
  rms = Math.sqrt(rms / want.length)
  let worst = 0
  for (let i = 0; i < want.length; i++) {
    const e = Math.abs(got[i] - want[i]) / (Math.abs(want[i]) + rms)
    if (!(e <= worst)) worst = Number.isNaN(e) ? Number.POSITIVE_INFINITY : e
  }
  return worst
}

test('decode step: every kernel against the float64 reference, ranks bitwise equal', { skip: !ON_GPU }, async () => {
  const comm = await createCudaCommunicator({ backend: 'cuda', devices: DEVICES })
  const failures: string[] = []
  try {
    const algorithms: DecodeAlgorithm[] = ['none', 'oneshot-ll', 'twoshot-sentinel']
    for (const [batch, context] of [
      [1, 1],
      [3, 37],
      [16, 300],
    ]) {
      const result = await decodeStep(comm, {
        architecture: TINY,
        batch,
        context,
        algorithms,
        replays: 2,
        rounds: 1,
        warmup: 1,
        keepOutputs: true,
      })
      const plan = result.plan
      const withAr = decodeReference(plan, true)
      const withoutAr = decodeReference(plan, false)
      for (const row of result.rows) {
        const out = result.outputs?.[row.algorithm]
        assert.ok(out)
        const ref = row.algorithm === 'none' ? withoutAr : withAr
        let residualError = 0
        let logitsError = 0
        for (let r = 0; r < plan.tp; r++) {
          residualError = Math.max(residualError, worstError(out.residual[r], ref.residual[r]))
          const logits = Array.from(out.logits[r], (b) => DTYPE_CODECS.bf16.decodeLane(b))
          logitsError = Math.max(logitsError, worstError(logits, ref.logits[r]))
        }
        const agreeOk = row.algorithm === 'none' || row.ranksAgree
        const passed = agreeOk && row.finite && residualError < 0.03 && logitsError < 0.05
        const name = `decode/${row.algorithm}/batch=${batch}/context=${context}/splits=${plan.attentionSplits}`
        recordCase({ name, passed, residualError, logitsError, ranksAgree: row.ranksAgree, devices: DEVICES })
        if (!passed)
          failures.push(
            `${name}: residual error ${residualError.toExponential(2)}, logits ${logitsError.toExponential(2)}, ranks agree ${row.ranksAgree}, finite ${row.finite}`,
          )
      }
    }
  } finally {
    await comm.close()
  }
  assert.deepEqual(failures, [])
})

test('decode step: Llama-3.1-8B shapes (2 layers) time and agree', { skip: !ON_GPU }, async () => {
  const comm = await createCudaCommunicator({ backend: 'cuda', devices: DEVICES })
  try {
    const model = findModel(loadModelTable(), 'llama-3.1-8b')
    const result = await decodeStep(comm, {
      architecture: model,
      batch: 1,
      context: 1024,
      layers: 2,
      algorithms: ['none', 'oneshot-ll'],
      replays: 5,
      rounds: 2,
      warmup: 2,
    })
    const plan = planDecodeStep(model, { tp: DEVICES.length, batch: 1, context: 1024, layers: 2, smCount: 132 })
    assert.equal(result.plan.allReduceBytes, plan.allReduceBytes)
    for (const row of result.rows) {
      const ok = row.finite && (row.algorithm === 'none' || row.ranksAgree) && row.stepUs.length === 10
      const sorted = [...row.stepUs].sort((a, b) => a - b)
      recordCase({ name: `decode/llama-3.1-8b/2-layers/${row.algorithm}`, passed: ok, medianUs: sorted[5] })
      assert.ok(ok, `${row.algorithm}: finite ${row.finite}, agree ${row.ranksAgree}`)
    }
  } finally {
    await comm.close()
  }
})
