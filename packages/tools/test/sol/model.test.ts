import assert from 'node:assert/strict'
import { test } from 'node:test'
import { ALL_ALGORITHMS, isLlcommError } from 'llcomm/internal'
import type { BenchDocument } from '../../src/bench/document.js'
import { criticalPath, hopLatencyUs, remoteStoreFromPingPongUs, SOL_CONSTANTS, solBound } from '../../src/sol/model.js'
import { boundsFor, compareWithBench } from '../../src/sol/report.js'

const close = (a: number, b: number) => Math.abs(a - b) < 1e-9

test("seed 000's GB200 figures give L_SoL = 1.404 µs", () => {
  const gb200 = SOL_CONSTANTS['gb200-seed000'].primitives
  assert.ok(close(hopLatencyUs(gb200), 1.404))
})

test('remote store is half the ping-pong minus two L2 round trips, so L_SoL is half the ping-pong', () => {
  assert.ok(close(remoteStoreFromPingPongUs(2.808, 0.306), 0.792))
  const p = { l2RoundTripUs: 0.1, remoteStoreUs: remoteStoreFromPingPongUs(3, 0.1) }
  assert.ok(close(hopLatencyUs(p), 1.5))
})

test('critical paths: one-shot 1 hop, two-shot 2, barrier 1 + 2 barriers, ring 2(N−1), nccl unbounded', () => {
  assert.equal(criticalPath('oneshot-ll', 4, 8)?.hops, 1)
  assert.equal(criticalPath('oneshot-ll', 4, 8)?.payloadEfficiency, 0.5)
  assert.equal(criticalPath('twoshot-sentinel', 4, 8)?.hops, 2)
  assert.equal(criticalPath('twoshot-atomic', 8, 8)?.hops, 2)
  assert.deepEqual(
    [criticalPath('oneshot-barrier', 4, 8)?.hops, criticalPath('oneshot-barrier', 4, 8)?.barriers],
    [3, 2],
  )
  assert.equal(criticalPath('ring', 8, 8)?.hops, 14)
  assert.equal(criticalPath('nccl', 8, 8), undefined)
  assert.throws(
    () => criticalPath('ring', 1, 8),
    (e) => isLlcommError(e, 'INVALID_ARGUMENT'),
  )
})

test('bound = kernel floor + hops·L_SoL + max(sent/efficiency, read)/copyBW', () => {
  const p = { l2RoundTripUs: 0.306, remoteStoreUs: 0.792, kernelFloorUs: 2, copyBandwidthGBs: 100 }
  // oneshot-ll at 4 ranks, 1 MB: sent 3 MB / 0.5 = 6 MB vs read 4 MB → 6·2^20 B / 100 GB/s = 62.91456 µs.
  const b = solBound(p, 'oneshot-ll', 4, 1 << 20)
  assert.ok(b)
  assert.ok(close(b.bandwidthUs as number, (6 * 2 ** 20) / 1e5))
  assert.ok(close(b.boundUs, 2 + 1.404 + (6 * 2 ** 20) / 1e5))
  // Without a kernel floor or bandwidth, the bound is the hops alone and says so.
  const hopsOnly = solBound({ l2RoundTripUs: 0.306, remoteStoreUs: 0.792 }, 'oneshot-barrier', 4, 8)
  assert.ok(
    hopsOnly && close(hopsOnly.boundUs, 3 * 1.404) && hopsOnly.bandwidthUs === null && hopsOnly.kernelFloorUs === null,
  )
})

test('every algorithm but NCCL gets bounds; bench rows get measured/bound ratios', () => {
  const p = { l2RoundTripUs: 0.5, remoteStoreUs: 1 }
  const bounds = boundsFor(p, [2, 4], [8, 4096])
  assert.equal(bounds.length, (ALL_ALGORITHMS.length - 2) * 2 * 2)
  const bench: BenchDocument = {
    machine: { hostname: 'h', cpuModel: 'c', cores: 2 },
    commit: 'x',
    date: '2026-01-01T00:00:00Z',
    command: 'c',
    rows: [
      {
        backend: 'cpu',
        ranks: 4,
        algorithm: 'oneshot-ll',
        requestedAlgorithm: 'oneshot-ll',
        fallback: false,
        dtype: 'f32',
        bytes: 8,
        medianUs: 8,
        p99Us: 9,
        algbwGBs: 0,
        busbwGBs: 0,
        wrong: 0,
        iters: 1,
        warmup: 0,
      },
      {
        backend: 'cpu',
        ranks: 4,
        algorithm: 'ring',
        requestedAlgorithm: 'twoshot-atomic',
        fallback: true,
        dtype: 'f32',
        bytes: 8,
        medianUs: 8,
        p99Us: 9,
        algbwGBs: 0,
        busbwGBs: 0,
        wrong: 0,
        iters: 1,
        warmup: 0,
      },
    ],
  }
  const comparisons = compareWithBench(p, bench)
  assert.equal(comparisons.length, 1) // the fallback row is not compared
  assert.ok(close(comparisons[0].ratio, 8 / 2))
})
