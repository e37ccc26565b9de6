import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { launchShape, selectKernel } from '../../src/backends/cuda/kernel-table.js'
import { type CalibrationRow, calibratePlatform, platformForCalibration } from '../../src/model/calibrate.js'
import { kernelCounts, RECV_BATCH } from '../../src/model/kernel-counts.js'
import { modelFeatures, type ParamValues, predictFromParams } from '../../src/model/latency-model.js'
import { getAlgorithm, loadAlgorithmTable, loadPlatformTable } from '../../src/model/latency-tables.js'

const algorithms = loadAlgorithmTable()
const platforms = loadPlatformTable()
const KERNEL_ALGORITHMS = [
  'oneshot-ll',
  'oneshot-sentinel',
  'twoshot-sentinel',
  'twoshot-atomic',
  'oneshot-barrier',
  'ring',
]

// Made-up constants for the synthetic round trip only (none of them is a claim about hardware).
const KNOWN: ParamValues = {
  kernelFloorUs: 1.4,
  hopUs: 0.3,
  barrierFixedUs: 0.5,
  barrierPerPeerUs: 0.04,
  barrierQuadUs: 0.001,
  usPerWireByte: 1 / 1500e3,
  usPerAtomicByte: 1 / 200e3,
  libraryOverheadUs: null,
  nvlsSwitchReduceUs: null,
  pollRoundUs: 1.1,
  storeRoundUs: 0.15,
  ringStepUs: 1.5,
  serialRecvUs: 0.4,
  rearmUs: 0.07,
  atomicLineUs: 0.6,
  usPerRearmByte: 1 / 2000e3,
}

function kernelPlatform() {
  return { ...platformForCalibration(platforms, 'synthetic-kernel', 'virtual'), structure: 'kernel' as const }
}

function syntheticRows(noise: number): CalibrationRow[] {
  const rows: CalibrationRow[] = []
  let seed = 4242
  const rand = () => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31
    return seed / 2 ** 31
  }
  for (const name of KERNEL_ALGORITHMS)
    for (const ranks of [2, 4, 8, 16, 32, 64])
      for (const bytes of [8, 512, 4096, 32768, 262144, 1048576]) {
        const f = modelFeatures(getAlgorithm(algorithms, name), ranks, bytes, 'virtual', { structure: 'kernel' })
        const us = predictFromParams(f, KNOWN).latencyUs
        rows.push({ algorithm: name, ranks, bytes, dtype: 'bf16', measuredUs: us * (1 + noise * (2 * rand() - 1)) })
      }
  return rows
}

describe('kernel structure of the latency model', () => {
  it('counts one-shot poll rounds as ceil((N−1)/8) batches per round of slots, per launch', () => {
    for (const ranks of [2, 8, 9, 16, 64]) {
      const k = kernelCounts('oneshot-ll', 'oneshot', ranks, 8)
      assert.equal(k.launches, 1)
      assert.equal(k.pollRounds, Math.ceil((ranks - 1) / RECV_BATCH), `N=${ranks}`)
      assert.equal(k.storeRounds, ranks - 1)
      assert.equal(k.rearms, 0, 'LL packets carry their flag: no re-arm')
    }
    // 64 ranks, 64 KB of bf16: the launch shape caps one launch at maxCountPerCall elements, so the host chunks
    const v = selectKernel('oneshot-ll', 'bf16', 'sum')
    const maxCount = launchShape(v, 64, 1).maxCountPerCall
    const k = kernelCounts('oneshot-ll', 'oneshot', 64, 65536)
    assert.equal(k.launches, Math.ceil(32768 / maxCount))
    assert.ok(k.launches > 1)
    const perLaunch = launchShape(v, 64, maxCount)
    const slotsPerBlock = Math.ceil((maxCount * 2) / perLaunch.blocksPerRank / 4) // LL8: 4 payload bytes per slot
    assert.equal(
      k.pollRounds,
      k.launches * Math.ceil(slotsPerBlock / perLaunch.threadsPerBlock) * Math.ceil(63 / RECV_BATCH),
    )
    // the sentinel protocol re-arms every slot it read
    assert.ok(kernelCounts('oneshot-sentinel', 'oneshot', 4, 4096).rearms > 0)
    // ring: 2(N−1) dependent steps; barrier kernel: two barriers per launch
    assert.equal(kernelCounts('ring', 'ring', 16, 8).ringSteps, 30)
    assert.equal(kernelCounts('oneshot-barrier', 'barrier', 16, 8).barriers, 2)
  })

  it('recovers known constants of every structural term from noiseless synthetic rows', () => {
    const r = calibratePlatform('synthetic-kernel', kernelPlatform(), syntheticRows(0), algorithms, {
      leaveOneOut: false,
    })
    assert.deepEqual(r.notIdentified, [])
    for (const [k, v] of Object.entries(KNOWN)) {
      if (v === null) continue
      const got = r.params[k as keyof ParamValues] as number
      assert.ok(Math.abs(got - v) / v < 1e-6, `${k}: fitted ${got}, true ${v}`)
    }
    assert.ok(r.inSample.maxAbsRelError < 1e-9)
    // leaving a rank count out changes nothing when the model is exact
    assert.ok(r.leaveOneRankCountOut && r.leaveOneRankCountOut.all.maxAbsRelError < 1e-6)
    assert.equal(r.leaveOneRankCountOut.byRanks.length, 6)
  })

  it('recovers the per-event constants within 10% under ±3% noise', () => {
    const r = calibratePlatform('synthetic-kernel', kernelPlatform(), syntheticRows(0.03), algorithms, {
      leaveOneOut: false,
    })
    for (const k of [
      'kernelFloorUs',
      'pollRoundUs',
      'storeRoundUs',
      'ringStepUs',
      'serialRecvUs',
      'atomicLineUs',
      'usPerWireByte',
    ] as const) {
      const got = r.params[k] as number
      const want = KNOWN[k] as number
      assert.ok(Math.abs(got - want) / want < 0.1, `${k}: fitted ${got}, true ${want}`)
    }
    assert.equal(r.inSample.within15, r.inSample.rows)
  })

  it('keeps the seed form on platforms without structure "kernel" and beyond 64 ranks', () => {
    const alg = getAlgorithm(algorithms, 'oneshot-ll')
    const seed = modelFeatures(alg, 8, 65536, 'nvswitch')
    assert.equal(seed.pollRoundUs, 0)
    assert.equal(seed.kernelFloorUs, 1)
    const beyond = modelFeatures(alg, 72, 65536, 'virtual', { structure: 'kernel' })
    assert.equal(beyond.pollRoundUs, 0)
    assert.equal(beyond.hopUs, 1)
  })
})
