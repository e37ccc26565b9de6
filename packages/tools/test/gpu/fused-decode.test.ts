// The decode step with the fused AllReduce + RMSNorm (llcomm decode --fused) against the float64 decode reference,
// on virtual ranks: moved beside the decode step's other GPU test (the library's fused kernels are tested in
// packages/llcomm/test/gpu/fused.test.ts).
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { createCudaCommunicator } from 'llcomm/internal'
import { decodeStep } from '../../src/decode/step.js'
import { findModel, loadModelTable } from '../../src/model/decode-tables.js'
import { decodeReference } from '../support/decode-reference.js'
import { ON_GPU, recordCase } from './gpu-harness.js'

/** Index of the first byte where two views differ, or -1. */
function bitsEqual(a: ArrayBufferView, b: ArrayBufferView): number {
  const x = new Uint8Array(a.buffer, a.byteOffset, a.byteLength)
  const y = new Uint8Array(b.buffer, b.byteOffset, b.byteLength)
  for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return i
  return -1
}

test('decode step with the fused AllReduce + RMSNorm: float64 reference, ranks bitwise equal, fused = unfused bitwise', {
  skip: !ON_GPU,
}, async () => {
  const tiny = {
    ...findModel(loadModelTable(), 'llama-3.1-8b'),
    name: 'tiny-llama',
    layers: 2,
    hiddenSize: 256,
    heads: 4,
    kvHeads: 2,
    intermediateSize: 512,
    vocabSize: 512,
  }
  const comm = await createCudaCommunicator({ backend: 'cuda', devices: [0, 0] })
  const failures: string[] = []
  try {
    for (const [batch, context] of [
      [1, 1],
      [3, 37],
      [16, 300],
    ]) {
      const algorithms = ['fused-oneshot', 'fused-twoshot', 'fused', 'unfused', 'none+rmsnorm'] as const
      const result = await decodeStep(comm, {
        architecture: tiny,
        batch,
        context,
        algorithms: [...algorithms],
        replays: 2,
        rounds: 1,
        warmup: 1,
        keepOutputs: true,
      })
      const plan = result.plan
      const withAr = decodeReference(plan, true)
      const withoutAr = decodeReference(plan, false)
      const unfusedAr = comm.resolveAlgorithm('auto', 'bf16', 'sum', plan.allReduceBytes, false).algorithm
      const rankOrder = ['oneshot-ll', 'oneshot-sentinel', 'twoshot-sentinel'].includes(unfusedAr)
      const fusedBits = result.outputs?.['fused-oneshot']?.residual[0]
      for (const row of result.rows) {
        const out = result.outputs?.[row.algorithm]
        assert.ok(out && fusedBits)
        const ref = row.algorithm === 'none+rmsnorm' ? withoutAr : withAr
        let worst = 0
        for (let r = 0; r < plan.tp; r++) {
          let rms = 0
          for (const w of ref.residual[r]) rms += w * w
          rms = Math.sqrt(rms / ref.residual[r].length)
          for (let i = 0; i < ref.residual[r].length; i++)
            worst = Math.max(
              worst,
              Math.abs(out.residual[r][i] - ref.residual[r][i]) / (Math.abs(ref.residual[r][i]) + rms),
            )
        }
        const sameAsFused =
          row.algorithm === 'none+rmsnorm' ||
          (row.algorithm === 'unfused' && !rankOrder) ||
          bitsEqual(out.residual[0], fusedBits) < 0
        const agree = row.algorithm === 'none+rmsnorm' || row.ranksAgree
        const passed = row.finite && agree && worst < 0.03 && sameAsFused
        const name = `fused/decode/${row.algorithm}/batch=${batch}/context=${context}`
        recordCase({ name, passed, residualError: worst, ranksAgree: row.ranksAgree, sameAsFused, unfusedAr })
        if (!passed)
          failures.push(
            `${name}: residual error ${worst}, ranks agree ${row.ranksAgree}, bitwise as fused ${sameAsFused}`,
          )
      }
    }
  } finally {
    await comm.close()
  }
  assert.deepEqual(failures, [])
})
