import assert from 'node:assert/strict'
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { LlcommError } from 'llcomm/internal'
import {
  type BaselineDocument,
  formatSideBySide,
  readBaselineDocument,
  sideBySide,
  validateBaselineDocument,
} from '../../src/bench/baseline.js'
import { sideBySidePlotSpec, sideBySidePoints } from '../../src/bench/baseline-plot.js'
import type { BenchDocument, BenchRow } from '../../src/bench/document.js'
import { runCli } from '../cli/cli-helpers.js'
import { benchRow as sharedBenchRow } from '../support/bench-rows.js'

/** A row of a two-GPU cuda bench in bf16 (the shared helper's defaults are cpu, 4 ranks, f32). */
function benchRow(algorithm: string, bytes: number, medianUs: number, extra: Partial<BenchRow> = {}): BenchRow {
  return sharedBenchRow(algorithm as BenchRow['algorithm'], bytes, medianUs, {
    backend: 'cuda',
    ranks: 2,
    dtype: 'bf16',
    ...extra,
  })
}

function benchDoc(rows: BenchRow[], date = '2026-11-29T20:00:00.000Z'): BenchDocument {
  return {
    machine: { hostname: 'gpu', cpuModel: 'x', cores: 32, gpu: '2x NVIDIA H200' },
    commit: 'abc',
    date,
    command: 'llcomm bench --devices 0,1',
    rows,
  } as unknown as BenchDocument
}

function baselineDoc(rows: Record<string, unknown>[], extra: Record<string, unknown> = {}): BaselineDocument {
  return validateBaselineDocument({
    machine: { gpu: 'NVIDIA H200' },
    commit: 'abc',
    date: '2026-11-29T20:01:00+00:00',
    command: 'python3 scripts/baselines/torch-symm-mem.py --sizes 8,1M',
    sameAs: { 'torch-nccl': 'nccl' },
    rows,
    ...extra,
  })
}

const theirs = (algorithm: string, bytes: number, medianUs: number, extra: Record<string, unknown> = {}) => ({
  algorithm,
  dtype: 'bf16',
  bytes,
  ranks: 2,
  medianUs,
  wrong: 0,
  ranksAgree: true,
  ...extra,
})

describe('baseline documents', () => {
  it('refuses a malformed document, naming the field', () => {
    const bad: [Record<string, unknown>, RegExp][] = [
      [{ rows: [theirs('oneshot-ll', 8, 1)] }, /llcomm's own name/],
      [{ rows: [theirs('torch-x', 8, 1, { dtype: 'f64' })] }, /dtype "f64"/],
      [{ rows: [theirs('torch-x', 0, 1)] }, /bytes must be a whole number ≥ 1/],
      [{ rows: [theirs('torch-x', 8, -1)] }, /medianUs must be a number ≥ 0/],
      [{ rows: [theirs('torch-x', 8, 1, { ranksAgree: 'yes' })] }, /ranksAgree must be a boolean/],
      [{ sameAs: { 'torch-nccl': 'mpi' }, rows: [] }, /not an algorithm of llcomm bench/],
      [{ date: 'yesterday', rows: [] }, /is not a date/],
    ]
    for (const [patch, message] of bad) {
      assert.throws(
        () => baselineDoc([], patch),
        (e: unknown) => e instanceof LlcommError && e.code === 'INVALID_ARGUMENT' && message.test(e.message),
        String(message),
      )
    }
    const dir = mkdtempSync(join(tmpdir(), 'llcomm-baseline-'))
    writeFileSync(join(dir, 'x.json'), '{ not json')
    assert.throws(() => readBaselineDocument(join(dir, 'x.json')), /cannot read baseline/)
  })

  it("sets llcomm's fastest right row beside each baseline, and the harness check beside nccl", () => {
    const bench = benchDoc([
      benchRow('oneshot-ll', 8, 2.6),
      benchRow('oneshot-sentinel', 8, 2.2, { wrong: 3 }), // wrong: never llcomm's best
      benchRow('ring', 8, 2.0, { fallback: true }), // another algorithm ran: not ring's figure
      benchRow('nccl-symmetric', 8, 1.0), // NCCL, not llcomm
      benchRow('nccl', 8, 5.0),
      benchRow('twoshot-sentinel', 1 << 20, 14),
      benchRow('nccl', 1 << 20, 13),
    ])
    const base = baselineDoc([
      theirs('torch-symm-oneshot', 8, 6.5),
      theirs('torch-symm-twoshot', 8, 2.0, { ranksAgree: false }), // fast but ranks disagree: not the best other
      theirs('torch-nccl', 8, 5.5),
      theirs('torch-symm-oneshot', 1 << 20, 10),
      theirs('torch-nccl', 1 << 20, 13),
    ])
    const s = sideBySide(bench, base)
    assert.deepEqual(s.warnings, [])
    assert.equal(s.rows.length, 2)
    const [small, large] = s.rows
    assert.deepEqual(small.best, { algorithm: 'oneshot-ll', medianUs: 2.6 })
    assert.equal(small.nccl, 5.0)
    assert.equal(small.bestBaseline, 'torch-nccl')
    assert.ok(Math.abs((small.vsBestBaseline as number) - 2.6 / 5.5) < 1e-12)
    assert.ok(Math.abs((small.harness['torch-nccl'] as number) - 1.1) < 1e-12)
    assert.equal(small.baselines['torch-symm-twoshot']?.right, false)
    assert.equal(large.bestBaseline, 'torch-symm-oneshot')
    assert.ok(Math.abs((large.vsBestBaseline as number) - 1.4) < 1e-12)
    assert.equal(large.baselines['torch-symm-twoshot'], undefined)
    const text = formatSideBySide(s, bench, base)
    assert.match(text, /side by side: llcomm bench \(abc/)
    assert.match(text, /2\.000 WRONG/)
    assert.match(text, /0\.47x \(torch-nccl\)/)
    assert.match(text, /1\.40x \(torch-symm-oneshot\)/)
  })

  it('warns when the two were not measured in one run on one kind of GPU', () => {
    const bench = benchDoc([benchRow('oneshot-ll', 8, 2.6)], '2026-11-28T08:00:00.000Z')
    const base = baselineDoc([theirs('torch-x', 8, 6), theirs('torch-x', 64, 6)], { machine: { gpu: 'NVIDIA A100' } })
    const s = sideBySide(bench, base)
    assert.equal(s.warnings.length, 3)
    assert.match(s.warnings[0], /h apart/)
    assert.match(s.warnings[1], /different GPUs/)
    assert.match(s.warnings[2], /1 baseline rows have no bench case/)
    assert.match(formatSideBySide(s, bench, base), /# WARNING: measured/)
  })
})

describe('the side-by-side plot', () => {
  it('draws llcomm best, its nccl row and every right baseline, a column per dtype, ratios on baselines only', () => {
    const bench = benchDoc([
      benchRow('oneshot-ll', 8, 2.5),
      benchRow('nccl', 8, 5),
      benchRow('oneshot-ll', 8, 2.4, { dtype: 'f32' }),
    ])
    const base = baselineDoc([
      theirs('torch-symm-oneshot', 8, 5),
      theirs('torch-symm-twoshot', 8, 4, { wrong: 2 }),
      theirs('torch-symm-oneshot', 8, 4.8, { dtype: 'f32' }),
    ])
    const points = sideBySidePoints(sideBySide(bench, base))
    assert.deepEqual(
      points.map((p) => [p.panel, p.series, p.medianUs, p.ratio]),
      [
        ['bf16', 'llcomm best', 2.5, undefined],
        ['bf16', 'nccl (llcomm bench)', 5, undefined],
        ['bf16', 'torch-symm-oneshot', 5, 0.5],
        ['f32', 'llcomm best', 2.4, undefined],
        ['f32', 'torch-symm-oneshot', 4.8, 0.5],
      ],
    )
    const spec = sideBySidePlotSpec(sideBySide(bench, base), bench, base) as { vconcat: { facet: unknown }[] }
    assert.equal(spec.vconcat.length, 2)
    for (const panel of spec.vconcat)
      assert.deepEqual(panel.facet, { column: { field: 'panel', type: 'nominal', title: null } })
  })
})

describe('llcomm bench --baseline', () => {
  const dir = mkdtempSync(join(tmpdir(), 'llcomm-baseline-cli-'))
  it('prints the side-by-side table after the report of a saved run', async () => {
    writeFileSync(
      join(dir, 'ours.json'),
      JSON.stringify(benchDoc([benchRow('oneshot-ll', 8, 2.6), benchRow('nccl', 8, 5)])),
    )
    writeFileSync(join(dir, 'theirs.json'), JSON.stringify(baselineDoc([theirs('torch-nccl', 8, 5.2)])))
    const r = await runCli(['bench', '--from', join(dir, 'ours.json'), '--baseline', join(dir, 'theirs.json')])
    assert.equal(r.code, 0, r.stderr)
    assert.match(r.stdout, /median us per size/)
    assert.match(r.stdout, /side by side/)
    assert.match(r.stdout, /0\.50x \(torch-nccl\)\s+1\.04x/)
    const svg = join(dir, 'sbs.svg')
    const p = await runCli([
      'bench',
      '--from',
      join(dir, 'ours.json'),
      '--baseline',
      join(dir, 'theirs.json'),
      '--plot',
      svg,
    ])
    assert.equal(p.code, 0, p.stderr)
    assert.match(p.stderr, /side-by-side plot written/)
    assert.match(readFileSync(svg, 'utf8'), /^<svg[\s\S]*torch-nccl/)
  })

  it('refuses a bad baseline before measuring anything', async () => {
    writeFileSync(
      join(dir, 'bad.json'),
      JSON.stringify({ machine: {}, commit: 'a', date: 'x', command: 'c', rows: [] }),
    )
    const r = await runCli(['bench', '--backend', 'cpu', '--ranks', '2', '--baseline', join(dir, 'bad.json')])
    assert.equal(r.code, 1)
    assert.match(r.stderr, /baseline document .*bad\.json: date "x" is not a date/)
    assert.doesNotMatch(r.stdout, /median us/)
  })
})
