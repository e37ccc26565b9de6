import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { platformForCalibration } from '../../src/model/calibrate.js'
import {
  barrierUs,
  modelFeatures,
  paramsFromPlatform,
  predictLatency,
  wireBytesPerGpu,
} from '../../src/model/latency-model.js'
import { getAlgorithm, getPlatform, loadAlgorithmTable, loadPlatformTable } from '../../src/model/latency-tables.js'
import { parseGpuCounts, parseSizes, simulateScaling } from '../../src/model/scale.js'

const algorithms = loadAlgorithmTable()
const platforms = loadPlatformTable()

describe('latency model', () => {
  it("moves the bytes of seed 000's table per GPU", () => {
    const n = 4
    const m = 1000
    const wire = (name: string) => wireBytesPerGpu(getAlgorithm(algorithms, name), n, m)
    assert.equal(wire('oneshot-ll'), 2 * (n - 1) * m)
    assert.equal(wire('oneshot-sentinel'), (n - 1) * m)
    assert.equal(wire('twoshot-ll'), (4 * (n - 1) * m) / n)
    assert.equal(wire('twoshot-sentinel'), (2 * (n - 1) * m) / n)
    const atomic = wire('twoshot-atomic')
    assert.ok(
      Math.abs(atomic / ((2 * (n - 1) * m) / n) - 128 / 124) < 1e-3,
      `LL128 ≈ 2(N−1)M/N × 128/124, got ${atomic}`,
    )
  })

  it('puts a one-shot LL call of 0 bytes on GB200 at kernel floor + one SoL hop (2 × 0.306 + 0.792)', () => {
    const p = predictLatency(getAlgorithm(algorithms, 'oneshot-ll'), getPlatform(platforms, 'gb200'), 4, 0)
    assert.ok(Math.abs(p.latencyUs - (0.796 + 2 * 0.306 + 0.792)) < 1e-9, String(p.latencyUs))
    assert.deepEqual(p.missingTerms, [])
  })

  it('charges barrier algorithms a super-linear barrier and leaves barrier-free ones flat in it', () => {
    const params = paramsFromPlatform(getPlatform(platforms, 'gb200'))
    const b = (n: number) => barrierUs(params, n) as number
    // super-linear: each added GPU costs more than the one before
    for (let n = 2; n < 72; n++) assert.ok(b(n + 2) - b(n + 1) > b(n + 1) - b(n), `marginal barrier cost grows at ${n}`)
    const platform = getPlatform(platforms, 'gb200')
    const barrier = predictLatency(getAlgorithm(algorithms, 'oneshot-barrier'), platform, 64, 0)
    const free = predictLatency(getAlgorithm(algorithms, 'oneshot-sentinel'), platform, 64, 0)
    assert.ok(Math.abs(barrier.latencyUs - free.latencyUs - 2 * b(64)) < 1e-9)
  })

  it('charges remote atomics only to the LL128 atomic algorithm', () => {
    for (const name of Object.keys(algorithms.algorithms)) {
      const f = modelFeatures(getAlgorithm(algorithms, name), 4, 1024, 'nvswitch')
      assert.equal(f.usPerAtomicByte > 0, name === 'twoshot-atomic', name)
    }
    // virtual ranks share one GPU: every byte term counts all N ranks' traffic
    const v = modelFeatures(getAlgorithm(algorithms, 'twoshot-atomic'), 4, 1024, 'virtual')
    const s = modelFeatures(getAlgorithm(algorithms, 'twoshot-atomic'), 4, 1024, 'nvswitch')
    assert.equal(v.usPerAtomicByte, 4 * s.usPerAtomicByte)
    assert.equal(v.usPerWireByte, 4 * s.usPerWireByte)
  })

  it('names absent constants instead of inventing them', () => {
    // nccl without an `nccl` block falls back to the seed form, whose library overhead is absent on gb200
    const { nccl: _, ...seedOnly } = getPlatform(platforms, 'gb200')
    const p = predictLatency(getAlgorithm(algorithms, 'nccl'), seedOnly, 4, 8192)
    assert.deepEqual(p.missingTerms, ['libraryOverheadUs'])
    assert.equal(p.ncclChoice, undefined)
    // a platform the table lacks: every constant absent
    const empty = platformForCalibration(platforms, 'not-in-the-table', 'virtual')
    const v = predictLatency(getAlgorithm(algorithms, 'oneshot-ll'), empty, 4, 8192)
    assert.ok(v.missingTerms.includes('kernelFloorUs') && v.latencyUs === 0)
  })

  it('simulates 2–72 GPUs and flags counts beyond the NVLink domain', () => {
    const gpus = parseGpuCounts('2..72')
    assert.deepEqual(gpus, [2, 4, 8, 16, 32, 64, 72])
    assert.deepEqual(parseSizes('8,16K,1M'), [8, 16384, 1048576])
    const rows = simulateScaling(
      getPlatform(platforms, 'h200'),
      algorithms,
      ['oneshot-ll', 'nvls-oneshot'],
      gpus,
      [8192],
    )
    assert.equal(rows.length, 14)
    assert.ok(rows.filter((r) => r.beyondDomain).every((r) => r.gpus > 8))
    assert.ok(
      rows
        .filter((r) => r.algorithm === 'nvls-oneshot')
        .every((r) => r.modelOnly && r.missingTerms.includes('nvlsSwitchReduceUs')),
    )
  })
})
