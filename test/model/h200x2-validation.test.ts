import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { readBenchFile } from '../../src/model/bench-results.js'
import { calibratePlatform, calibrationRowsByPlatform } from '../../src/model/calibrate.js'
import { type FitParam, paramsFromPlatform, predictLatency } from '../../src/model/latency-model.js'
import {
  ADDED_CONSTANTS,
  getAlgorithm,
  loadAlgorithmTable,
  loadPlatformTable,
  type PlatformConstants,
} from '../../src/model/latency-tables.js'

// The 2-GPU validation of docs/model.md §5 (bench/results/model-calibration-h200x2-2026-11-29b.txt,
// scripts/model/h200x2-validation.sh): two H200s over NVLink, one rank per GPU, llcomm's six kernels. The
// out-of-sample predictions stay on the file measured at a0bea25 (OLD_BENCH; the historic result, with the tables
// frozen in test/fixtures/model/); the calibrated h200 entry is fitted to the file measured at cf18cd4 (BENCH).
const repo = (path: string) => fileURLToPath(new URL(`../../../${path}`, import.meta.url))
const OLD_BENCH = 'bench/results/cuda-h200x2-bench-2gpu-2026-11-29.json'
const BENCH = 'bench/results/cuda-h200x2-bench-2gpu-2026-11-29b.json'
const SOL = 'bench/results/cuda-h200x2-sol-2gpu-2026-11-29.json'
// h200-virtual's constants as fitted to the 11-29f files (kernels at cf18cd4, those of BENCH), frozen before its refit
// to the 11-29g files (kernels at 51236c3): h200 keeps these values for every constant it does not fit
const F_FIT = 'test/fixtures/model/platforms-h200-virtual-11-29f.json'
const COPIED = [
  'kernelFloorUs',
  'barrierPerPeerUs',
  'barrierQuadUs',
  'rearmUs',
  'rearmGBs',
  'spreadWindowUs',
  'stagedReduceUs',
  'halfWordSentinelUs',
  'blockGBs',
  'memoryGBs',
  'overlapExponent',
]
const LLCOMM = ['oneshot-ll', 'oneshot-sentinel', 'twoshot-sentinel', 'twoshot-atomic', 'oneshot-barrier', 'ring']
const NCCL = ['nccl', 'nccl-symmetric']
// the constants whose event crosses NVLink (the script's TRANSPORT): fitted; every other one is h200-virtual's
const TRANSPORT: FitParam[] = [
  'hopUs',
  'pollRoundUs',
  'storeRoundUs',
  'serialRecvUs',
  'ringStepUs',
  'atomicLineUs',
  'barrierFixedUs',
  'usPerWireByte',
  'usPerAtomicByte',
]

const algorithms = loadAlgorithmTable()
function h200Rows(path: string) {
  const { groups } = calibrationRowsByPlatform(readBenchFile(repo(path)), algorithms)
  const all = groups.get('h200') ?? []
  return { groups, rowsOf: (names: string[]) => all.filter((r) => names.includes(r.algorithm)) }
}
const old = h200Rows(OLD_BENCH)
const { groups, rowsOf } = h200Rows(BENCH)

/** Rows within ±15% and the rms relative error of a platform entry's predictions (nothing fitted). */
function predicted(
  platform: PlatformConstants,
  names: string[],
  of: (names: string[]) => ReturnType<typeof rowsOf> = rowsOf,
): { rows: number; within: number; rms: number } {
  const params = paramsFromPlatform(platform)
  const errors = of(names).map((r) => {
    const p = predictLatency(getAlgorithm(algorithms, r.algorithm), platform, r.ranks, r.bytes, params, r.dtype)
    return p.latencyUs / r.measuredUs - 1
  })
  return {
    rows: errors.length,
    within: errors.filter((e) => Math.abs(e) <= 0.15).length,
    rms: Math.sqrt(errors.reduce((s, e) => s + e * e, 0) / errors.length),
  }
}

const fixture = (name: string) => loadPlatformTable(repo(`test/fixtures/model/${name}`)).platforms.h200

describe('h200 on two GPUs over NVLink (committed 2-GPU bench files)', () => {
  it('groups the 2-GPU rows of both files as platform h200: 264 llcomm rows and 88 nccl rows each', () => {
    for (const f of [old, { groups, rowsOf }]) {
      assert.equal(f.groups.size, 1)
      assert.equal(f.rowsOf(LLCOMM).length, 264)
      assert.equal(f.rowsOf(NCCL).length, 88)
    }
  })

  it("out-of-sample: the tables fixed before the 2-GPU data give the report's counts", () => {
    // 1a: the h200 entry as shipped (seed form); 1b: h200-virtual + measured NVLink hop and link rate;
    // 1c: h200-virtual's hop + what NVLink adds to the measured hop
    const shipped = predicted(fixture('platforms-h200-shipped-36eb30f.json'), LLCOMM, old.rowsOf)
    const solHop = predicted(fixture('platforms-h200x2-virtual-sol-hop.json'), LLCOMM, old.rowsOf)
    const solDelta = predicted(fixture('platforms-h200x2-virtual-sol-delta.json'), LLCOMM, old.rowsOf)
    assert.deepEqual(
      [shipped, solHop, solDelta].map((x) => [x.within, (100 * x.rms).toFixed(1)]),
      [
        [12, '53.7'],
        [86, '24.8'],
        [155, '20.9'],
      ],
    )
  })

  it('builds the out-of-sample tables from the measured primitives, with nothing fitted', () => {
    const sol = JSON.parse(readFileSync(repo(SOL), 'utf8')).primitives
    const solV = JSON.parse(readFileSync(repo('bench/results/cuda-h200-sol-v2-64-2026-11-29c.json'), 'utf8')).primitives
    const hop = fixture('platforms-h200x2-virtual-sol-hop.json').constants
    const delta = fixture('platforms-h200x2-virtual-sol-delta.json').constants
    assert.equal(hop.hopUs.value, 2 * sol.l2RoundTripUs + sol.remoteStoreUs)
    assert.equal(hop.linkGBs.value, sol.raw.peerCopyBandwidthGBs)
    assert.equal(delta.linkGBs.value, sol.raw.peerCopyBandwidthGBs)
    // the delta table's hop = h200-virtual's fitted hop of the 11-29e fit (0.2240354013225047 µs) + NVLink hop −
    // one-GPU hop (remote store 1.080 µs over NVLink, 0.540 µs through L2)
    const added = sol.hopLatencyUs - solV.hopLatencyUs
    assert.ok(Math.abs((delta.hopUs.value as number) - (0.2240354013225047 + added)) < 1e-12)
    for (const c of [hop, delta]) {
      for (const [name, v] of Object.entries(c)) {
        // a constant added after the fixture was frozen reads as absent (latency-tables.ts ADDED_CONSTANTS)
        if ((ADDED_CONSTANTS as readonly string[]).includes(name)) assert.equal(v.value, null, name)
        else if (name !== 'hopUs' && name !== 'linkGBs') assert.match(v.source, /^h200-virtual's value/, name)
      }
    }
  })

  it('the committed h200 entry (kernel structure) puts 255 of 264 llcomm rows of the cf18cd4 file within ±15%', () => {
    const h200 = loadPlatformTable().platforms.h200
    assert.equal(h200.structure, 'kernel')
    const r = predicted(h200, LLCOMM)
    assert.equal(r.within, 255)
    assert.equal((100 * r.rms).toFixed(1), '6.8')
    // every fitted constant names the cf18cd4 2-GPU file; every other one h200-virtual's 11-29f fit (or the sol file):
    // the kernels of the 2-GPU file (cf18cd4), not h200-virtual's current fit to the 11-29g files (51236c3)
    for (const p of ['hopUs', 'pollRoundUs', 'storeRoundUs', 'ringStepUs', 'linkGBs', 'atomicGBs', 'libraryOverheadUs'])
      assert.match(
        h200.constants[p as keyof typeof h200.constants].source,
        /calibrated: fit to bench\/results\/cuda-h200x2-bench-2gpu-2026-11-29b\.json/,
      )
    const fFit = loadPlatformTable(repo(F_FIT)).platforms['h200-virtual']
    const copied = Object.entries(h200.constants).filter(([, c]) => c.source.startsWith("h200-virtual's value"))
    assert.deepEqual(copied.map(([name]) => name).sort(), [...COPIED].sort())
    for (const [name, c] of copied) {
      assert.match(c.source, /^h200-virtual's value of its 11-29f fit, copied .*-2026-11-29f\.json/, name)
      assert.equal(c.value, fFit.constants[name as keyof typeof h200.constants].value, name)
    }
    // the term added with the 11-29g refit is 0 on h200: its predictions stay those of the 11-29f form
    assert.equal(h200.constants.blockAccessUs.value, 0)
  })

  it("refits to the committed constants and gives the report's held-out counts", () => {
    const h200 = loadPlatformTable().platforms.h200
    const r = calibratePlatform('h200', h200, rowsOf(LLCOMM), algorithms, {
      fitOnly: TRANSPORT,
      overlapExponents: null,
    })
    assert.deepEqual([...r.fitted].sort(), [...TRANSPORT].sort())
    assert.ok(r.held.includes('kernelFloorUs') && r.held.includes('usPerMemoryByte'))
    const committed = paramsFromPlatform(h200)
    for (const p of TRANSPORT) {
      const want = committed[p] as number
      assert.ok(Math.abs((r.params[p] as number) - want) <= 1e-6 * want, `${p}: ${r.params[p]} vs ${want}`)
    }
    assert.equal(r.inSample.within15, 255)
    assert.equal(r.leaveOneOut?.within15, 255)
    assert.equal(r.leaveOneSizeDecadeOut?.all.within15, 209)
    assert.deepEqual(
      r.leaveOneSizeDecadeOut?.byDecade.map((d) => [d.decade, d.summary.within15, d.summary.rows]),
      [
        ['<1 KB', 77, 84],
        ['1–16 KB', 44, 48],
        ['16–256 KB', 46, 48],
        ['≥256 KB', 42, 84],
      ],
    )
    assert.equal(r.leaveOneDtypeOut?.all.within15, 245)
    assert.equal(r.leaveOneRankCountOut, undefined) // one rank count: N is not identified
  })

  it("nccl-symmetric keeps the seed form: the fitted library overhead gives the nccl report's 4 of 44", () => {
    // bench/results/model-nccl-h200x2-2026-11-29.txt, section 5 (nccl itself: test/model/nccl-model.test.ts)
    const h200 = loadPlatformTable().platforms.h200
    assert.ok((h200.constants.libraryOverheadUs.value ?? 0) > 0)
    const r = predicted(h200, ['nccl-symmetric'])
    assert.equal(r.rows, 44)
    assert.equal(r.within, 4)
  })
})
