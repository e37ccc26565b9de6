// The decode model's per-algorithm in-step values (data/models/gpus.json h200 allReduceInDecodeStepUs) are what
// src/model/decode-step-fit.ts computes from the committed `llcomm decode` runs: no hand-typed figure.
import assert from 'node:assert/strict'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { type DecodeDocument, validateDecodeDocument } from '../../src/decode/report.js'
import { fitDecodeStepTerms } from '../../src/model/decode-step-fit.js'
import { findGpu, loadGpuTable } from '../../src/model/decode-tables.js'
import { COUNTING_2026_11_29 } from '../../src/model/kernel-counts.js'
import { getPlatform, loadAlgorithmTable, loadPlatformTable } from '../../src/model/latency-tables.js'
import { repoPath } from '../support/paths.js'

const RESULTS = repoPath('bench/results/')

test('gpus.json h200 allReduceInDecodeStepUs = the fit of the committed llcomm decode runs', () => {
  const files = readdirSync(RESULTS).filter((f) => /^cuda-h200x2-decode-.*-2026-11-29b?\.json$/.test(f))
  const docs: { file: string; doc: DecodeDocument }[] = []
  for (const file of files) {
    const raw = JSON.parse(readFileSync(join(RESULTS, file), 'utf8'))
    if (raw.kind === 'llcomm-decode') docs.push({ file, doc: validateDecodeDocument(raw, file) })
  }
  assert.equal(docs.filter((d) => !d.doc.pdl).length, 14)
  // the runs ran the 11-29 build (1 MiB buffer, the block targets before the 12-02 sweep, 16-bit accumulation): the
  // latency model prices their calls as they ran
  const h200 = getPlatform(loadPlatformTable(), 'h200')
  const fit = fitDecodeStepTerms(docs, loadAlgorithmTable(), h200, COUNTING_2026_11_29)
  const table = findGpu(loadGpuTable(), 'h200').decodeStep?.allReduceInDecodeStepUs?.values
  assert.deepEqual(table, fit.values)
  for (const list of Object.values(fit.rows)) assert.equal(list.length, 14)
  // What the runs show: NCCL pays far more in the step than llcomm's algorithms do.
  assert.ok(fit.values.nccl - fit.values['oneshot-ll'] > 3)
})
