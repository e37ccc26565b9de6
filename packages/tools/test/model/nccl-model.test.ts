import assert from 'node:assert/strict'
import { rmSync, writeFileSync } from 'node:fs'
import { describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { LlcommError } from 'llcomm/internal'
import { readBenchFile } from '../../src/model/bench-results.js'
import { calibratePlatform, calibrationRowsByPlatform } from '../../src/model/calibrate.js'
import { predictLatency } from '../../src/model/latency-model.js'
import { getAlgorithm, getPlatform, loadAlgorithmTable, loadPlatformTable } from '../../src/model/latency-tables.js'
import { fitNccl, NCCL_FITTABLE, type NcclRow } from '../../src/model/nccl-calibrate.js'
import {
  candidateLabel,
  NCCL_PUBLISHED_NVLINK,
  type NcclConstants,
  ncclConstantsFrom,
  ncclSteps,
  ncclWireBytes,
  predictNccl,
} from '../../src/model/nccl-model.js'
import { simulateScaling } from '../../src/model/scale.js'
import { repoPath, toolsPath } from '../support/paths.js'

// NCCL's cost form (src/model/nccl-model.ts) and its fit to two H200s: bench/results/model-nccl-h200x2-2026-11-29.txt
// (research/scripts/model/nccl-h200x2.sh).
const repo = repoPath
const BENCH = 'bench/results/cuda-h200x2-bench-2gpu-2026-11-29b.json'
const OLD_BENCH = 'bench/results/cuda-h200x2-bench-2gpu-2026-11-29.json'
const algorithms = loadAlgorithmTable()
const platforms = loadPlatformTable()
const h200 = getPlatform(platforms, 'h200')
const committed = ncclConstantsFrom(h200.nccl) as NcclConstants

function ncclRows(path: string) {
  const { groups } = calibrationRowsByPlatform(readBenchFile(repo(path)), algorithms)
  return (groups.get('h200') ?? []).filter((r) => r.algorithm === 'nccl')
}

const SIZES = Array.from({ length: 24 }, (_, i) => 8 * 2 ** i) // 8 B … 64 MB

describe("NCCL's cost form", () => {
  it('prices ring and tree by their steps and bytes: 2(N−1) steps; ring 2(N−1)/N · M, tree 2 · M per GPU', () => {
    assert.equal(ncclSteps('ring', 8), 14)
    assert.equal(ncclSteps('tree', 8), 14)
    assert.equal(ncclWireBytes('ring', 4, 1000), 1500)
    assert.equal(ncclWireBytes('tree', 4, 1000), 2000)
    const p = predictNccl(committed, 4, 1 << 20)
    const ringLL = p.candidates.find((c) => c.algorithm === 'ring' && c.protocol === 'LL')
    assert.ok(ringLL)
    const expected =
      committed.ringLLBaseUs + 6 * committed.ringLLStepUs + (1.5 * 2 ** 20) / (committed.busGBs * 0.5 * 1e3)
    assert.ok(Math.abs(ringLL.latencyUs - expected) < 1e-9)
    assert.equal(p.latencyUs, Math.min(...p.candidates.map((c) => c.latencyUs)))
  })

  it('picks LL at 8 B and Simple or LL128 at 16 MB (h200 at 2–8 GPUs, gb200 at 2–32)', () => {
    for (const [name, gpus] of [
      ['h200', [2, 4, 8]],
      ['gb200', [2, 4, 8, 16, 32]],
    ] as const) {
      const k = ncclConstantsFrom(getPlatform(platforms, name).nccl) as NcclConstants
      for (const n of gpus) {
        assert.equal(predictNccl(k, n, 8).chosen.protocol, 'LL', `${name} ${n} GPUs 8 B`)
        assert.notEqual(predictNccl(k, n, 16 * 2 ** 20).chosen.protocol, 'LL', `${name} ${n} GPUs 16 MB`)
      }
    }
    // two GPUs: the ring, LL to 2 MB, Simple from 4 MB (the report's choice column)
    assert.deepEqual(
      [8, 2 ** 21, 2 ** 22, 2 ** 24].map((b) => candidateLabel(predictNccl(committed, 2, b).chosen)),
      ['ring/LL', 'ring/LL', 'ring/Simple', 'ring/Simple'],
    )
  })

  it('recovers known constants from rows made with them (the minimum over candidates included)', () => {
    // bases chosen so that all three ring protocols are the least somewhere at 2 ranks
    const truth: NcclConstants = {
      ...committed,
      ringLLBaseUs: 4,
      ringLL128BaseUs: 2,
      ringSimpleBaseUs: 1,
      busGBs: 300,
    }
    const rows: NcclRow[] = SIZES.map((bytes) => ({
      ranks: 2,
      bytes,
      measuredUs: predictNccl(truth, 2, bytes).latencyUs,
    }))
    const used = new Set(SIZES.map((b) => predictNccl(truth, 2, b).chosen.protocol))
    assert.deepEqual([...used].sort(), ['LL', 'LL128', 'Simple'])
    const prior = { ...committed, ...NCCL_PUBLISHED_NVLINK, busGBs: 450 }
    const fit = fitNccl(rows, prior)
    assert.deepEqual(fit.fitted, [...NCCL_FITTABLE])
    for (const n of NCCL_FITTABLE)
      assert.ok(Math.abs(fit.constants[n] / truth[n] - 1) < 1e-6, `${n}: ${fit.constants[n]} vs ${truth[n]}`)
    // every prior untouched
    for (const n of Object.keys(prior) as (keyof NcclConstants)[])
      if (!NCCL_FITTABLE.includes(n)) assert.equal(fit.constants[n], prior[n], n)
    // ±3% noise: the LL base and the bus bandwidth within 10% (the LL128 and Simple bases are a few µs under
    // 30–230 µs of bytes at the sizes where they are the least: noise of 3% hides them)
    let seed = 7
    const rand = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31
      return seed / 2 ** 31
    }
    const noisy = rows.map((r) => ({ ...r, measuredUs: r.measuredUs * (1 + 0.03 * (2 * rand() - 1)) }))
    const nf = fitNccl(noisy, prior)
    for (const n of ['ringLLBaseUs', 'busGBs'] as const)
      assert.ok(Math.abs(nf.constants[n] / truth[n] - 1) < 0.1, `${n}: ${nf.constants[n]} vs ${truth[n]}`)
  })

  it('leaves a base no row is assigned to at its prior (not identified)', () => {
    // 8 B – 1 MB: all ring/LL; the bytes tell LL from LL128 (their efficiencies differ), nothing tells Simple
    const rows = SIZES.slice(0, 18).map((bytes) => ({
      ranks: 2,
      bytes,
      measuredUs: predictNccl(committed, 2, bytes).latencyUs,
    }))
    const prior = { ...committed, ...NCCL_PUBLISHED_NVLINK, busGBs: 450 }
    const fit = fitNccl(rows, prior)
    assert.deepEqual(fit.notIdentified, ['ringLL128BaseUs', 'ringSimpleBaseUs'])
    assert.equal(fit.constants.ringSimpleBaseUs, NCCL_PUBLISHED_NVLINK.ringSimpleBaseUs)
    for (const n of ['ringLLBaseUs', 'busGBs'] as const)
      assert.ok(Math.abs(fit.constants[n] / committed[n] - 1) < 1e-6, `${n}: ${fit.constants[n]} vs ${committed[n]}`)
  })

  it('rejects an incomplete nccl block with a typed error, and falls back to the seed form without one', () => {
    const bad = { ...h200, nccl: { ...h200.nccl, busGBs: undefined } }
    const path = toolsPath('dist/test-nccl-bad-platforms.json')
    writeFileSync(path, JSON.stringify({ platforms: { h200: bad } }))
    try {
      assert.throws(
        () => loadPlatformTable(path),
        (e: unknown) => e instanceof LlcommError && /busGBs/.test(e.message),
      )
    } finally {
      rmSync(path)
    }
    const nccl = getAlgorithm(algorithms, 'nccl')
    const { nccl: _, ...seedOnly } = h200
    const seed = predictLatency(nccl, seedOnly, 2, 8)
    assert.equal(seed.ncclChoice, undefined)
    assert.ok(seed.terms.libraryUs > 0)
    const tuner = predictLatency(nccl, h200, 2, 8)
    assert.equal(tuner.ncclChoice, 'ring/LL')
    assert.equal(tuner.latencyUs, predictNccl(committed, 2, 8).latencyUs)
  })

  it('shows the choice in the scale simulation', () => {
    const rows = simulateScaling(getPlatform(platforms, 'gb200'), algorithms, ['nccl', 'oneshot-ll'], [2, 72], [8])
    assert.deepEqual(
      rows.map((r) => r.ncclChoice),
      ['ring/LL', 'ring/LL', undefined, undefined],
    )
  })
})

describe('nccl on two H200s (committed 2-GPU bench files)', () => {
  it("refits to the committed constants and gives the report's counts: 43/44 in-sample, held out 42, 34, 42", () => {
    const r = calibratePlatform('h200', h200, ncclRows(BENCH), algorithms)
    assert.ok(r.nccl)
    assert.deepEqual(r.nccl.fitted, ['ringLLBaseUs', 'ringSimpleBaseUs', 'busGBs'])
    assert.deepEqual(r.nccl.notIdentified, ['ringLL128BaseUs'])
    for (const n of r.nccl.fitted)
      assert.ok(
        Math.abs(r.nccl.constants[n] / committed[n] - 1) < 1e-9,
        `${n}: ${r.nccl.constants[n]} vs ${committed[n]}`,
      )
    assert.equal(r.inSample.rows, 44)
    assert.equal(r.inSample.within15, 43)
    assert.equal((100 * r.inSample.rmsRelError).toFixed(1), '6.3')
    assert.equal(r.leaveOneOut?.within15, 42)
    assert.equal(r.leaveOneSizeDecadeOut?.all.within15, 34)
    assert.equal(r.leaveOneDtypeOut?.all.within15, 42)
    assert.deepEqual([...new Set(r.residuals.map((x) => x.choice))], ['ring/LL', 'ring/Simple'])
  })

  it('out-of-sample: the committed constants put 42 of 44 nccl rows of the earlier file within ±15%', () => {
    const errors = ncclRows(OLD_BENCH).map((r) => {
      const p = predictLatency(getAlgorithm(algorithms, 'nccl'), h200, r.ranks, r.bytes)
      return p.latencyUs / r.measuredUs - 1
    })
    assert.equal(errors.length, 44)
    assert.equal(errors.filter((e) => Math.abs(e) <= 0.15).length, 42)
    assert.equal((100 * Math.sqrt(errors.reduce((s, e) => s + e * e, 0) / errors.length)).toFixed(1), '6.3')
  })
})
