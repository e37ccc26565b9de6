// `llcomm decode` through the built CLI on a machine without a GPU: model and argument errors come before any GPU
// is looked for, a real run fails fast with NO_DEVICE pointing at the cost model, and --from prints a saved
// document. The child gets no libcuda (LLCOMM_LIBCUDA names a missing file) and no visible device, so these hold
// on a GPU machine too.
import assert from 'node:assert/strict'
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import { planDecodeStep } from '../../src/decode/plan.js'
import { buildDecodeRows, type DecodeMeasurement } from '../../src/decode/report.js'
import { findModel, loadModelTable } from '../../src/model/decode-tables.js'
import { decodeDocumentFixture } from '../support/decode-document.js'
import { runCli } from './cli-helpers.js'

const dir = mkdtempSync(join(tmpdir(), 'llcomm-decode-cli-'))

/** The CLI with no libcuda (LLCOMM_LIBCUDA names a missing file) and no visible device. */
function runDecode(args: string[], timeoutMs = 60_000) {
  return runCli(['decode', ...args], timeoutMs, {
    LLCOMM_LIBCUDA: join(dir, 'no-such-libcuda.so.1'),
    CUDA_VISIBLE_DEVICES: '',
  })
}

const GPU_SEARCH = /libcuda|LIBRARY_NOT_FOUND|NO_DEVICE|CUDA device/

test('decode: bad model and arguments exit 1 naming the problem, before any GPU is looked for', async () => {
  const cases: [string[], RegExp][] = [
    [['--model', 'deepseek-v3'], /INVALID_ARGUMENT: llcomm decode runs dense GQA models.*DeepSeek-V3 has MoE/],
    [['--model', 'qwen3-235b-a22b'], /dense GQA models.*Qwen3-235B-A22B has MoE/],
    [['--model', 'gpt-9'], /unknown model "gpt-9"/],
    [['--batch', '0'], /--batch must be a whole number ≥ 1, got "0"/],
    [['--batch', '17'], /batch must be an integer in 1\.\.16, got 17/],
    [['--context', '0'], /--context must be a whole number ≥ 1/],
    [['--ranks', '3'], /32 query and 8 KV heads do not split over 3 ranks/],
    [['--ranks', '2', '--layers', '33'], /layers must be an integer in 1\.\.32, got 33/],
    [['--pdl', 'maybe'], /--pdl must be on or off/],
    [['--algorithms', 'none,auto'], /decode runs named algorithms, not auto/],
    [['--gpu', 'abacus'], /unknown gpu "abacus"/],
  ]
  for (const [args, message] of cases) {
    const r = await runDecode(args)
    assert.equal(r.code, 1, `decode ${args.join(' ')} exit code; stderr: ${r.stderr}`)
    assert.match(r.stderr, message, args.join(' '))
    assert.doesNotMatch(r.stderr, GPU_SEARCH, `decode ${args.join(' ')}: checked before looking for a GPU`)
    assert.doesNotMatch(r.stderr, /\n\s+at /, `decode ${args.join(' ')}: a user error should not print a stack`)
    assert.equal(r.stdout, '')
  }
})

test('decode without a GPU fails fast with NO_DEVICE and points at llcomm model --decode', async () => {
  const r = await runDecode(['--ranks', '2', '--layers', '1', '--no-progress'], 60_000)
  assert.equal(r.code, 1, r.stderr)
  assert.match(r.stderr, /NO_DEVICE/)
  assert.match(r.stderr, /llcomm model --decode/)
  assert.doesNotMatch(r.stderr, /\n\s+at /, 'no stack')
  assert.equal(r.stdout, '')
})

test('decode --from prints a saved document: every algorithm in the table', async () => {
  const plan = planDecodeStep(findModel(loadModelTable(), 'llama-3.1-70b'), {
    tp: 8,
    batch: 1,
    context: 2048,
    layers: 4,
    smCount: 132,
  })
  const measured: DecodeMeasurement[] = [
    { algorithm: 'none', stepUs: [400, 410, 390], ranksAgree: false, finite: true, maxRelDiffVsFirst: 0.2 },
    { algorithm: 'nccl', stepUs: [520, 530, 510], ranksAgree: true, finite: true, maxRelDiffVsFirst: 0 },
    { algorithm: 'oneshot-ll', stepUs: [450, 460, 440], ranksAgree: true, finite: true, maxRelDiffVsFirst: 0 },
  ]
  const rows = buildDecodeRows(plan, measured, { nccl: 12, 'oneshot-ll': 5 }, (a) => (a === 'nccl' ? 13 : 6))
  const doc = decodeDocumentFixture(plan, rows, measured, 400, {
    command: 'llcomm decode --model llama-3.1-70b --ranks 8 --layers 4 --context 2048',
    pdl: true,
  })

  const file = join(dir, 'decode.json')
  writeFileSync(file, JSON.stringify(doc))
  const r = await runDecode(['--from', file])
  assert.equal(r.code, 0, r.stderr)
  assert.match(r.stdout, /^llcomm decode: Llama-3\.1-70B, TP 8 \(devices 0,1,2,3,4,5,6,7\), batch 1, context 2048/)
  assert.match(r.stdout, /4 of 80 layers, PDL/)
  assert.match(r.stdout, /8 AllReduces of 16384 B bf16/)
  assert.match(r.stdout, /^\s*none\s+400\.0\b.*\bn\/a\s*$/m)
  assert.match(r.stdout, /^\s*nccl\s+520\.0\b.*\b15\.00\s+12\.00\s+13\.00\s+1\.000×\s+yes\s*$/m)
  assert.match(r.stdout, /^\s*oneshot-ll\s+450\.0\b.*\b6\.25\s+5\.00\s+6\.00\s+0\.865×\s+yes\s*$/m)

  // --json writes the document back out unchanged; a bench document is refused.
  const again = join(dir, 'again.json')
  const j = await runDecode(['--from', file, '--json', again])
  assert.equal(j.code, 0, j.stderr)
  assert.equal(j.stdout, r.stdout)
  assert.deepEqual(JSON.parse(readFileSync(again, 'utf8')), JSON.parse(JSON.stringify(doc)))
  const bench = join(dir, 'bench.json')
  writeFileSync(bench, JSON.stringify({ machine: doc.machine, commit: 'x', date: doc.date, command: 'c', rows: [] }))
  const bad = await runDecode(['--from', bench])
  assert.equal(bad.code, 1)
  assert.match(bad.stderr, /not an llcomm decode document/)
})
