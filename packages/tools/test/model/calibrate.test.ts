import assert from 'node:assert/strict'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { readBenchFile, rowPlatform } from '../../src/model/bench-results.js'
import {
  applyCalibration,
  type CalibrationRow,
  calibratePlatform,
  calibrationRowsByPlatform,
  platformForCalibration,
} from '../../src/model/calibrate.js'
import {
  modelFeatures,
  type ParamValues,
  paramsFromPlatform,
  predictFromParams,
  predictLatency,
} from '../../src/model/latency-model.js'
import { getAlgorithm, loadAlgorithmTable, loadPlatformTable } from '../../src/model/latency-tables.js'
import { nonNegativeLeastSquares } from '../../src/model/nnls.js'

const algorithms = loadAlgorithmTable()
const platforms = loadPlatformTable()

const KNOWN: ParamValues = {
  kernelFloorUs: 3.1,
  hopUs: 0.9,
  barrierFixedUs: 0.7,
  barrierPerPeerUs: 0.05,
  barrierQuadUs: 0.002,
  usPerWireByte: 1 / 400e3,
  usPerAtomicByte: 1 / 90e3,
  libraryOverheadUs: 4.2,
  nvlsSwitchReduceUs: null,
  pollRoundUs: null,
  storeRoundUs: null,
  ringStepUs: null,
  serialRecvUs: null,
  rearmUs: null,
  atomicLineUs: null,
  usPerRearmByte: null,
}

function syntheticRows(params: ParamValues, topology: 'nvswitch' | 'virtual', noise = 0): CalibrationRow[] {
  const rows: CalibrationRow[] = []
  let seed = 12345
  const rand = () => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31
    return seed / 2 ** 31
  }
  for (const name of [
    'oneshot-ll',
    'oneshot-sentinel',
    'twoshot-sentinel',
    'twoshot-atomic',
    'oneshot-barrier',
    'ring',
    'nccl',
  ]) {
    for (const ranks of [2, 4, 8, 16]) {
      for (const bytes of [1024, 8192, 65536, 524288, 1048576]) {
        const us = predictFromParams(
          modelFeatures(getAlgorithm(algorithms, name), ranks, bytes, topology),
          params,
        ).latencyUs
        rows.push({ algorithm: name, ranks, bytes, measuredUs: us * (1 + noise * (2 * rand() - 1)) })
      }
    }
  }
  return rows
}

describe('calibration', () => {
  it('non-negative least squares clips a negative component to zero', () => {
    // y = 2·x0 − 1·x1 exactly; with x ≥ 0 the best fit sets x1 = 0
    const a = [
      [1, 1],
      [2, 1],
      [3, 1],
      [4, 1],
    ]
    const b = [1, 3, 5, 7]
    const x = nonNegativeLeastSquares(a, b)
    assert.ok(x[1] === 0 && x[0] > 0, JSON.stringify(x))
    const exact = nonNegativeLeastSquares(
      [
        [1, 0],
        [0, 1],
        [1, 1],
      ],
      [2, 3, 5],
    )
    assert.ok(Math.abs(exact[0] - 2) < 1e-9 && Math.abs(exact[1] - 3) < 1e-9)
  })

  it('recovers known constants from noiseless synthetic measurements', () => {
    const platform = platformForCalibration(platforms, 'synthetic', 'nvswitch')
    const r = calibratePlatform('synthetic', platform, syntheticRows(KNOWN, 'nvswitch'), algorithms)
    for (const [k, v] of Object.entries(KNOWN)) {
      if (v === null) continue
      const got = r.params[k as keyof ParamValues] as number
      assert.ok(Math.abs(got - v) / v < 1e-6, `${k}: fitted ${got}, true ${v}`)
    }
    assert.ok(r.inSample.maxAbsRelError < 1e-9)
    assert.ok(r.leaveOneOut && r.leaveOneOut.maxAbsRelError < 1e-6)
    assert.deepEqual(r.notIdentified, [])
  })

  it('recovers them within a few percent from ±3% noise and reports residuals within ±15%', () => {
    const platform = platformForCalibration(platforms, 'synthetic', 'virtual')
    const r = calibratePlatform('synthetic', platform, syntheticRows(KNOWN, 'virtual', 0.03), algorithms)
    for (const k of ['kernelFloorUs', 'hopUs', 'usPerWireByte', 'usPerAtomicByte', 'libraryOverheadUs'] as const) {
      const got = r.params[k] as number
      const want = KNOWN[k] as number
      assert.ok(Math.abs(got - want) / want < 0.1, `${k}: fitted ${got}, true ${want}`)
    }
    assert.equal(r.inSample.within15, r.inSample.rows)
    assert.ok(r.inSample.rmsRelError < 0.03)
  })

  it('says which constants the rows cannot determine', () => {
    const rows = syntheticRows(KNOWN, 'nvswitch').filter(
      (x) => x.algorithm.startsWith('oneshot-') && x.algorithm !== 'oneshot-barrier' && x.ranks === 4,
    )
    const r = calibratePlatform(
      'synthetic',
      platformForCalibration(platforms, 'synthetic', 'nvswitch'),
      rows,
      algorithms,
    )
    // one rank count and only one-shot algorithms: floor and hop are confounded, no barrier or library term used
    assert.deepEqual(r.fitted, ['kernelFloorUs', 'usPerWireByte'])
    assert.deepEqual(r.notIdentified, ['hopUs'])
  })

  it('reads a bench results file and files its rows under the right platform', () => {
    const dir = mkdtempSync(join(tmpdir(), 'llcomm-cal-'))
    const path = join(dir, 'virtual.json')
    const rows = syntheticRows(KNOWN, 'virtual').map((x) => ({
      backend: 'cuda',
      ranks: x.ranks,
      algorithm: x.algorithm,
      dtype: 'f32',
      bytes: x.bytes,
      medianUs: x.measuredUs,
      p99Us: x.measuredUs,
      algbwGBs: 0,
      busbwGBs: 0,
      wrong: 0,
    }))
    rows.push({ ...rows[0], wrong: 3 })
    writeFileSync(
      path,
      JSON.stringify({
        machine: { hostname: 'h', cpuModel: 'c', cores: 16, gpu: 'NVIDIA H200' },
        commit: 'x',
        date: 'd',
        command: 'llcomm bench --backend cuda --devices 0,0,0,0',
        rows,
      }),
    )
    const file = readBenchFile(path)
    assert.equal(rowPlatform(file, file.rows[0]), 'h200-virtual')
    const { groups, skipped } = calibrationRowsByPlatform(file, algorithms)
    assert.equal(skipped.length, 1)
    // the synthetic rows follow the seed form: calibrate the platform entry in that form
    const cal = calibratePlatform(
      'h200-virtual',
      { ...platforms.platforms['h200-virtual'], structure: 'seed' },
      groups.get('h200-virtual') as CalibrationRow[],
      algorithms,
    )
    assert.ok(Math.abs((cal.params.hopUs as number) - 0.9) < 1e-6)
  })

  it('stores a rate fitted to 0 µs per byte as unbounded (costs nothing), not as absent', () => {
    // rows with no wire-byte cost at all: the wire rate fits to 0
    const zeroWire: ParamValues = { ...KNOWN, usPerWireByte: 0 }
    const rows = syntheticRows(zeroWire, 'nvswitch')
    const platform = structuredClone(platformForCalibration(platforms, 'synthetic', 'nvswitch'))
    const r = calibratePlatform('synthetic', platform, rows, algorithms, {
      leaveOneOut: false,
      leaveOneRankCountOut: false,
      leaveOneSizeDecadeOut: false,
    })
    assert.ok(r.fitted.includes('usPerWireByte'))
    assert.ok((r.params.usPerWireByte as number) < 1e-12)
    r.params.usPerWireByte = 0
    applyCalibration(platform, r, 'synthetic.json')
    assert.equal(platform.constants.linkGBs.value, null)
    assert.equal(platform.constants.linkGBs.unbounded, true)
    const params = paramsFromPlatform(platform)
    assert.equal(params.usPerWireByte, 0)
    const p = predictLatency(getAlgorithm(algorithms, 'oneshot-sentinel'), platform, 4, 65536, params)
    assert.ok(!p.missingTerms.includes('usPerWireByte'))
    assert.equal(p.terms.bandwidthUs, 0)
  })
})
