import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { readBenchFile } from '../../src/model/bench-results.js'
import { calibratePlatform, calibrationRowsByPlatform } from '../../src/model/calibrate.js'
import { COUNTING_2026_11_29 } from '../../src/model/kernel-counts.js'
import { type FitParam, paramsFromPlatform, predictLatency } from '../../src/model/latency-model.js'
import {
  ADDED_CONSTANTS,
  getAlgorithm,
  loadAlgorithmTable,
  loadPlatformTable,
  type PlatformConstants,
} from '../../src/model/latency-tables.js'
import { repoPath, toolsPath } from '../support/paths.js'

// The 2-GPU validation of research/notes/model-calibration-log.md (bench/results/model-calibration-h200x2-2026-11-29{b,c}.txt,
// research/scripts/model/h200x2-validation.sh and h200x2-refit-c.sh): two H200s over NVLink, one rank per GPU, llcomm's six
// kernels. Three files: OLD_BENCH (a0bea25; the historic out-of-sample result, with the tables frozen in
// test/fixtures/model/), BENCH (cf18cd4; the entry fitted to it is frozen as B_FIT) and C_BENCH (1bac1a6, the kernels
// of 5e4a711; the committed h200 entry is fitted to it).
const repo = repoPath
const OLD_BENCH = 'bench/results/cuda-h200x2-bench-2gpu-2026-11-29.json'
const BENCH = 'bench/results/cuda-h200x2-bench-2gpu-2026-11-29b.json'
const C_BENCH = 'bench/results/cuda-h200x2-bench-2gpu-2026-11-29c.json'
// measured at d09257e (the kernels of e07e72a), after the committed h200 entry was fitted: out of sample
const K_BENCH = 'bench/results/cuda-h200x2-bench-2gpu-2026-11-29k.json'
const SOL = 'bench/results/cuda-h200x2-sol-2gpu-2026-11-29.json'
// the h200 entry as fitted to BENCH, frozen before the refit to C_BENCH
const B_FIT = 'platforms-h200x2-11-29b.json'
// B_FIT's transport constants with the others copied from h200-virtual's 11-29h fit (H_FIT): the table the c file
// was predicted with, and the starting point of its fit
const PRE_C = 'platforms-h200x2-pre-c.json'
const H_FIT = 'test/fixtures/model/platforms-h200-virtual-11-29h.json'
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
// the table constants behind TRANSPORT: the per-byte parameters are stored as rates (linkGBs, atomicGBs)
const STORED_AS: Partial<Record<FitParam, keyof PlatformConstants['constants']>> = {
  usPerWireByte: 'linkGBs',
  usPerAtomicByte: 'atomicGBs',
}
const TRANSPORT_CONSTANTS = TRANSPORT.map((p) => STORED_AS[p] ?? (p as keyof PlatformConstants['constants']))

const algorithms = loadAlgorithmTable()
function h200Rows(path: string) {
  // every 2-GPU file ran the 11-29 build (1 MiB buffer, the block targets before the sweep, 16-bit accumulation)
  const { groups } = calibrationRowsByPlatform(readBenchFile(repo(path)), algorithms, COUNTING_2026_11_29)
  const all = groups.get('h200') ?? []
  return { groups, rowsOf: (names: string[]) => all.filter((r) => names.includes(r.algorithm)) }
}
const old = h200Rows(OLD_BENCH)
const { groups, rowsOf } = h200Rows(BENCH)
const cFile = h200Rows(C_BENCH)
const kFile = h200Rows(K_BENCH)

/** Rows within ±15% and the rms relative error of a platform entry's predictions (nothing fitted). */
function predicted(
  platform: PlatformConstants,
  names: string[],
  of: (names: string[]) => ReturnType<typeof rowsOf> = rowsOf,
): { rows: number; within: number; rms: number } {
  const params = paramsFromPlatform(platform)
  const errors = of(names).map((r) => {
    const alg = getAlgorithm(algorithms, r.algorithm)
    const p = predictLatency(alg, platform, r.ranks, r.bytes, params, r.dtype, r.counting)
    return p.latencyUs / r.measuredUs - 1
  })
  return {
    rows: errors.length,
    within: errors.filter((e) => Math.abs(e) <= 0.15).length,
    rms: Math.sqrt(errors.reduce((s, e) => s + e * e, 0) / errors.length),
  }
}

const fixture = (name: string) => loadPlatformTable(toolsPath(`test/fixtures/model/${name}`)).platforms.h200

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

  it('the entry fitted to the cf18cd4 file (frozen) puts 255 of its 264 llcomm rows within ±15%', () => {
    const h200 = fixture(B_FIT)
    assert.equal(h200.structure, 'kernel')
    const r = predicted(h200, LLCOMM)
    assert.equal(r.within, 255)
    assert.equal((100 * r.rms).toFixed(1), '6.8')
    // every fitted constant names the cf18cd4 2-GPU file; every other one h200-virtual's 11-29f fit (or the sol file):
    // the kernels of the 2-GPU file (cf18cd4)
    for (const p of ['hopUs', 'pollRoundUs', 'storeRoundUs', 'ringStepUs', 'linkGBs', 'atomicGBs', 'libraryOverheadUs'])
      assert.match(
        h200.constants[p as keyof typeof h200.constants].source,
        /calibrated: fit to bench\/results\/cuda-h200x2-bench-2gpu-2026-11-29b\.json/,
      )
    const fFit = loadPlatformTable(toolsPath(F_FIT)).platforms['h200-virtual']
    const copied = Object.entries(h200.constants).filter(([, c]) => c.source.startsWith("h200-virtual's value"))
    assert.deepEqual(copied.map(([name]) => name).sort(), [...COPIED].sort())
    for (const [name, c] of copied) {
      assert.match(c.source, /^h200-virtual's value of its 11-29f fit, copied .*-2026-11-29f\.json/, name)
      assert.equal(c.value, fFit.constants[name as keyof typeof h200.constants].value, name)
    }
    // the term added with the 11-29g refit is 0 there: its predictions stay those of the 11-29f form
    assert.equal(h200.constants.blockAccessUs.value, 0)
  })

  it("refits the frozen cf18cd4 entry to its constants and gives the b report's held-out counts", () => {
    const h200 = fixture(B_FIT)
    const r = calibratePlatform('h200', h200, rowsOf(LLCOMM), algorithms, {
      fitOnly: TRANSPORT,
      overlapExponents: null,
    })
    assert.deepEqual([...r.fitted].sort(), [...TRANSPORT].sort())
    assert.ok(r.held.includes('kernelFloorUs') && r.held.includes('usPerMemoryByte'))
    const frozen = paramsFromPlatform(h200)
    for (const p of TRANSPORT) {
      const want = frozen[p] as number
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

  it("nccl-symmetric in the seed form: the cf18cd4 entry's library overhead gives the nccl report's 4 of 44", () => {
    // bench/results/model-nccl-h200x2-2026-11-29.txt, section 5 (nccl itself: test/model/nccl-model.test.ts)
    const h200 = fixture(B_FIT)
    assert.ok((h200.constants.libraryOverheadUs.value ?? 0) > 0)
    const r = predicted(h200, ['nccl-symmetric'])
    assert.equal(r.rows, 44)
    assert.equal(r.within, 4)
  })

  it('the c file (kernels of 5e4a711) out of sample: 240 of 264 with the cf18cd4 entry, 238 with h200-virtual 11-29h constants', () => {
    // bench/results/model-calibration-h200x2-2026-11-29c.txt, sections 1 and 2
    assert.equal(cFile.rowsOf(LLCOMM).length, 264)
    const b = predicted(fixture(B_FIT), LLCOMM, cFile.rowsOf)
    const pre = predicted(fixture(PRE_C), LLCOMM, cFile.rowsOf)
    assert.deepEqual(
      [b, pre].map((x) => [x.within, (100 * x.rms).toFixed(1)]),
      [
        [240, '8.2'],
        [238, '9.8'],
      ],
    )
    // PRE_C = B_FIT's transport constants + h200-virtual's 11-29h values for every copied constant
    const bFit = fixture(B_FIT).constants
    const preC = fixture(PRE_C).constants
    const hFit = loadPlatformTable(toolsPath(H_FIT)).platforms['h200-virtual'].constants
    for (const name of TRANSPORT_CONSTANTS) assert.equal(preC[name].value, bFit[name].value, name)
    for (const name of [...COPIED, 'blockAccessUs'] as (keyof typeof preC)[]) {
      assert.equal(preC[name].value, hFit[name].value, name)
      assert.match(preC[name].source, /^h200-virtual's value of its 11-29h fit, copied/, name)
    }
  })

  it('the committed h200 entry is the fit of PRE_C to the c file: 252 of 264 in sample, the c report held-out counts', () => {
    const committed = loadPlatformTable().platforms.h200
    const r = calibratePlatform('h200', fixture(PRE_C), cFile.rowsOf(LLCOMM), algorithms, {
      fitOnly: TRANSPORT,
      overlapExponents: null,
    })
    const want = paramsFromPlatform(committed)
    for (const p of TRANSPORT) {
      const w = want[p] as number
      assert.ok(Math.abs((r.params[p] as number) - w) <= 1e-6 * Math.max(w, 1e-12), `${p}: ${r.params[p]} vs ${w}`)
    }
    for (const name of [...COPIED, 'blockAccessUs'] as (keyof typeof committed.constants)[])
      assert.equal(committed.constants[name].value, fixture(PRE_C).constants[name].value, name)
    assert.equal(r.inSample.within15, 252)
    assert.equal(r.leaveOneOut?.within15, 252)
    assert.equal(r.leaveOneSizeDecadeOut?.all.within15, 192)
    assert.equal(r.leaveOneDtypeOut?.all.within15, 251)
    assert.equal(predicted(committed, LLCOMM, cFile.rowsOf).within, 252)
    // nccl-symmetric, seed form, its libraryOverheadUs fitted to the c file
    assert.equal(predicted(committed, ['nccl-symmetric'], cFile.rowsOf).within, 26)
  })

  it('the k file (d09257e, measured after every fit) out of sample: 252 of 264 llcomm rows, nccl 42 of 44', () => {
    // bench/results/model-validation-h200x2-2026-11-29k.txt; research/notes/model-calibration-log.md "Out of sample at d09257e"
    const committed = loadPlatformTable().platforms.h200
    const llcomm = predicted(committed, LLCOMM, kFile.rowsOf)
    assert.equal(llcomm.rows, 264)
    assert.equal(llcomm.within, 252)
    assert.ok(llcomm.rms < 0.075, `rms ${llcomm.rms}`)
    const nccl = predicted(committed, ['nccl'], kFile.rowsOf)
    assert.equal(nccl.rows, 44)
    assert.equal(nccl.within, 42)
  })
})
