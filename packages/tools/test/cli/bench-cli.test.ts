import assert from 'node:assert/strict'
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import { validateBenchDocument } from '../../src/bench/document.js'
import { readBenchFile, usableForCalibration } from '../../src/model/bench-results.js'
import { runCli } from './cli-helpers.js'

const dir = mkdtempSync(join(tmpdir(), 'llcomm-bench-cli-'))

test('bad input exits 1 with a clear message, before any communicator opens', async () => {
  const cases: [string[], RegExp][] = [
    [['bench', '--backend', 'cpu', '--sizes', '4Q'], /bad size "4Q"/],
    [['bench', '--backend', 'cpu', '--ranks', '1'], /--ranks must be a whole number ≥ 2/],
    [
      ['bench', '--backend', 'cpu', '--algorithms', 'ring,warp-drive'],
      /UNSUPPORTED_ALGORITHM: unknown algorithm "warp-drive"/,
    ],
    [['bench', '--backend', 'cpu', '--dtype', 'f64'], /unknown dtype "f64"/],
    [['bench', '--backend', 'tpu'], /--backend must be cpu or cuda/],
    [['bench', '--backend', 'cpu', '--pdl', 'on'], /--pdl is a cuda option/],
    [['bench', '--backend', 'cpu', '--min', '64', '--max', '8'], /larger than --max/],
    [['bench', '--backend', 'cpu', '--sizes', '6', '--dtype', 'f32'], /not a whole number of f32 elements/],
    [['bench', '--backend', 'cpu', '--iters', '0'], /--iters must be a whole number ≥ 1/],
    [['bench', '--from', join(dir, 'missing.json')], /cannot read/],
    [['bench', '--backend', 'cpu', '--buffer-bytes', '4Q'], /bad size "4Q"/],
    [['tune', '--backend', 'cpu', '--ranks', '2,1'], /--ranks must be a whole number ≥ 2/],
    [['sol', '--constants', 'nope'], /unknown --constants "nope"/],
  ]
  for (const [args, message] of cases) {
    const r = await runCli(args)
    assert.equal(r.code, 1, `${args.join(' ')} exit code; stderr: ${r.stderr}`)
    assert.match(r.stderr, message, args.join(' '))
    assert.doesNotMatch(r.stderr, /\n\s+at /, `${args.join(' ')}: a user error should not print a stack`)
  }
})

test('--from redraws a saved document: table on stdout and an SVG plot', async () => {
  const row = (algorithm: string, bytes: number, medianUs: number) => ({
    backend: 'cuda',
    ranks: 4,
    algorithm,
    requestedAlgorithm: algorithm,
    fallback: false,
    dtype: 'bf16',
    bytes,
    medianUs,
    p99Us: medianUs * 1.2,
    algbwGBs: bytes / medianUs / 1e3,
    busbwGBs: (1.5 * bytes) / medianUs / 1e3,
    wrong: 0,
    iters: 20,
    warmup: 5,
  })
  const saved = {
    machine: { hostname: 'gpu-box', cpuModel: 'x', cores: 16, gpu: 'NVIDIA H200' },
    commit: 'abc',
    date: '2026-11-29T09:00:00.000Z',
    command: 'llcomm bench --devices 0,0,0,0',
    rows: [row('nccl', 8192, 12), row('nccl-symmetric', 8192, 8), row('oneshot-ll', 8192, 4)],
  }
  const file = join(dir, 'saved.json')
  writeFileSync(file, JSON.stringify(saved))
  const svg = join(dir, 'saved.svg')
  const r = await runCli(['bench', '--from', file, '--plot', svg])
  assert.equal(r.code, 0, r.stderr)
  assert.match(r.stdout, /8K\s+bf16\s+oneshot-ll\s+4\.000\s+4\.800.*0\.50x/)
  assert.match(r.stdout, /nccl-symmetric 8\.000us/)
  assert.match(readFileSync(svg, 'utf8'), /^<svg[\s\S]*speedup over nccl-symmetric/)
})

test('sol with the seed 000 constants prints L_SoL = 1.404 µs and writes its JSON', async () => {
  const r = await runCli(['sol', '--constants', 'gb200-seed000', '--ranks', '4', '--sizes', '8', '--json'])
  assert.equal(r.code, 0, r.stderr)
  const doc = JSON.parse(r.stdout)
  assert.ok(Math.abs(doc.primitives.hopLatencyUs - 1.404) < 1e-9)
  assert.deepEqual(Object.keys(doc).sort(), ['bounds', 'command', 'commit', 'date', 'machine', 'primitives', 'source'])
  assert.match(r.stderr, /L_SoL = 2 L2 \+ store\s+1\.404 us/)
  const barrier = doc.bounds.find((b: { algorithm: string }) => b.algorithm === 'oneshot-barrier')
  assert.ok(Math.abs(barrier.boundUs - 3 * 1.404) < 1e-9)
})

test('sol --from reuses saved primitives and compares a bench document', async () => {
  const solFile = join(dir, 'sol.json')
  assert.equal((await runCli(['sol', '--constants', 'gb200-seed000', '--json', solFile])).code, 0)
  const row = {
    backend: 'cuda',
    ranks: 4,
    algorithm: 'oneshot-ll',
    requestedAlgorithm: 'oneshot-ll',
    fallback: false,
    dtype: 'bf16',
    bytes: 8,
    medianUs: 2.808,
    p99Us: 3,
    algbwGBs: 0,
    busbwGBs: 0,
    wrong: 0,
    iters: 1,
    warmup: 0,
  }
  const benchFile = join(dir, 'bench-for-sol.json')
  writeFileSync(
    benchFile,
    JSON.stringify({
      machine: { hostname: 'h', cpuModel: 'c', cores: 1 },
      commit: 'x',
      date: '2026-11-29T09:00:00Z',
      command: 'c',
      rows: [row],
    }),
  )
  const r = await runCli(['sol', '--from', solFile, '--ranks', '4', '--sizes', '8', '--bench', benchFile])
  assert.equal(r.code, 0, r.stderr)
  assert.match(r.stdout, /constants 'gb200-seed000'/)
  assert.match(r.stdout, /oneshot-ll\s+4\s+8\s+bf16\s+2\.808\s+1\.404\s+2\.00x/)
})

test('sol --backend cpu measures the worker-thread primitives', async () => {
  const r = await runCli(['sol', '--backend', 'cpu', '--ranks', '2,4', '--sizes', '8,64K'])
  assert.equal(r.code, 0, r.stderr)
  assert.match(r.stdout, /primitives measured on cpu/)
  assert.match(r.stdout, /oneshot-ll\s+8\s+\d+\.\d+ \(1h\)\s+\d+\.\d+ \(1h\)/)
  assert.match(r.stdout, /ring\s+64K\s+\S+ \(2h\)\s+\S+ \(6h\)/)
})

test('bench --backend cpu --ranks 2 end to end: table, JSON document, exit 0', async () => {
  const json = join(dir, 'cpu.json')
  const r = await runCli(
    ['bench', '--backend', 'cpu', '--ranks', '2', '--sizes', '64,4K', '--iters', '20', '--json', json, '--no-progress'],
    300_000,
  )
  assert.equal(r.code, 0, r.stderr)
  const doc = validateBenchDocument(JSON.parse(readFileSync(json, 'utf8')))
  assert.equal(doc.commit, 'test-commit')
  assert.match(doc.command, /^llcomm bench --backend cpu --ranks 2 --sizes 64,4K/)
  assert.ok(doc.rows.length >= 2 * 2, `rows: ${doc.rows.length}`)
  for (const row of doc.rows) {
    assert.equal(row.backend, 'cpu')
    assert.equal(row.ranks, 2)
    assert.equal(row.wrong, 0, `${row.algorithm} ${row.bytes}: wrong elements`)
    assert.ok(row.medianUs > 0 && row.p99Us >= row.medianUs)
  }
  assert.deepEqual([...new Set(doc.rows.map((x) => x.bytes))], [64, 4096])
  assert.match(r.stdout, /oneshot-barrier/)
  assert.match(r.stdout, /median us per size/)
})

test('bench --buffer-bytes: the run uses that buffer and the document records it; the model leaves it out', async () => {
  const json = join(dir, 'cpu-buffer.json')
  const r = await runCli(
    [
      'bench',
      '--backend',
      'cpu',
      '--ranks',
      '2',
      '--sizes',
      '64',
      '--iters',
      '5',
      '--warmup',
      '1',
      '--algorithms',
    ].concat(['oneshot-ll', '--buffer-bytes', '64K', '--json', json, '--no-progress']),
    120_000,
  )
  assert.equal(r.code, 0, r.stderr)
  const doc = validateBenchDocument(JSON.parse(readFileSync(json, 'utf8')))
  assert.equal(doc.bufferBytes, 65536)
  const file = readBenchFile(json)
  assert.ok(file.rows.length > 0)
  for (const row of file.rows) {
    assert.equal(row.bufferBytes, 65536)
    assert.equal(usableForCalibration(row), false)
    assert.equal(usableForCalibration({ ...row, bufferBytes: undefined }), true)
    // a document written with the default buffer records it too (since 2026-12-02): the cpu default stays usable
    assert.equal(usableForCalibration({ ...row, bufferBytes: 256 * 1024 }), true)
  }
  assert.throws(() => validateBenchDocument({ ...doc, bufferBytes: 0 }), /bufferBytes must be a whole number ≥ 1/)
})
