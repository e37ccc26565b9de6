import assert from 'node:assert/strict'
import { test } from 'node:test'
import { isLlcommError } from 'llcomm/internal'
import { measureBench } from '../../src/bench/bench-run.js'
import { allReduceCollective } from '../../src/bench/collective.js'
import { validateBenchDocument } from '../../src/bench/document.js'
import { algorithmsFor, parseAlgorithms, parsePdl } from '../../src/bench/options.js'
import { planSweep, runSweep, type SweepSettings } from '../../src/bench/sweep.js'
import { fakeCommunicator } from './fake-communicator.js'

const settings: SweepSettings = {
  dtypes: ['f32'],
  sizesBytes: [64, 4096],
  algorithms: ['oneshot-ll', 'oneshot-barrier'],
  pdlSettings: [undefined],
  iters: 20,
  warmup: 3,
  skewUs: 0,
}

test('planSweep orders dtype, size, pdl, algorithm and converts bytes to elements', () => {
  const cases = planSweep({ ...settings, dtypes: ['f32', 'bf16'], pdlSettings: [false, true] })
  assert.equal(cases.length, 2 * 2 * 2 * 2)
  assert.deepEqual(cases[0], { dtype: 'f32', bytes: 64, count: 16, algorithm: 'oneshot-ll', pdl: false })
  assert.deepEqual(cases[3], { dtype: 'f32', bytes: 64, count: 16, algorithm: 'oneshot-barrier', pdl: true })
  assert.equal(cases[8].dtype, 'bf16')
  assert.equal(cases[8].count, 32)
  assert.throws(
    () => planSweep({ ...settings, iters: 0 }),
    (e) => isLlcommError(e, 'INVALID_ARGUMENT'),
  )
  assert.throws(
    () => planSweep({ ...settings, algorithms: [] }),
    (e) => isLlcommError(e, 'INVALID_ARGUMENT'),
  )
})

test('runSweep turns in-rank times into rows with median, p99, algbw, busbw', async () => {
  const comm = fakeCommunicator({ size: 4, latencyUs: { 'oneshot-ll': 2, 'oneshot-barrier': 5 } })
  const { rows, skipped } = await runSweep(comm, allReduceCollective, settings, planSweep(settings))
  assert.equal(skipped.length, 0)
  assert.equal(rows.length, 4)
  const r = rows.find((x) => x.algorithm === 'oneshot-ll' && x.bytes === 4096)
  assert.ok(r)
  // times: 2 + 4096/1000 + i·0.01 for i in 0..19 → median at i = 9.5, p99 at i = 19.
  assert.ok(Math.abs(r.medianUs - (6.096 + 0.095)) < 1e-9)
  assert.ok(Math.abs(r.p99Us - (6.096 + 0.19)) < 1e-9)
  assert.ok(Math.abs(r.algbwGBs - 4096 / r.medianUs / 1e3) < 1e-12)
  assert.ok(Math.abs(r.busbwGBs - r.algbwGBs * 1.5) < 1e-12)
  assert.equal(r.fallback, false)
  assert.equal(r.skewWaitUs, undefined)
  assert.deepEqual(comm.requests[0], { algorithm: 'oneshot-ll', dtype: 'f32', count: 16, iters: 20, warmup: 3 })
})

test('fallbacks are marked, auto is not a fallback, refusals are skipped, skew is reported apart', async () => {
  const comm = fakeCommunicator({
    size: 2,
    latencyUs: { 'twoshot-atomic': 3, ring: 4, 'oneshot-ll': 1 },
    fallbacks: { 'twoshot-atomic': 'ring' },
    refuse: ['oneshot-ll'],
    autoPick: 'ring',
  })
  const s: SweepSettings = {
    ...settings,
    sizesBytes: [64],
    algorithms: ['twoshot-atomic', 'auto', 'oneshot-ll'],
    skewUs: 10,
  }
  const { rows, skipped } = await runSweep(comm, allReduceCollective, s, planSweep(s))
  assert.equal(rows[0].algorithm, 'ring')
  assert.equal(rows[0].requestedAlgorithm, 'twoshot-atomic')
  assert.equal(rows[0].fallback, true)
  assert.equal(rows[1].requestedAlgorithm, 'auto')
  assert.equal(rows[1].fallback, false)
  assert.equal(rows[0].skewUs, 10)
  assert.equal(rows[0].skewWaitUs, 5)
  assert.equal(skipped.length, 1)
  assert.match(skipped[0].reason, /UNSUPPORTED_ALGORITHM/)
})

test('a timeout stops the sweep instead of being skipped', async () => {
  const comm = fakeCommunicator({ latencyUs: { ring: 1 } })
  comm.benchmark = async () => {
    throw new (await import('llcomm/internal')).LlcommError('TIMEOUT', 'rank 1 timed out')
  }
  await assert.rejects(
    runSweep(
      comm,
      allReduceCollective,
      { ...settings, algorithms: ['ring'] },
      planSweep({ ...settings, algorithms: ['ring'] }),
    ),
    (e) => isLlcommError(e, 'TIMEOUT'),
  )
})

test('measureBench produces a docs/design.md §6 document that validates', async () => {
  const comm = fakeCommunicator({ size: 4, latencyUs: { 'oneshot-ll': 2, 'oneshot-barrier': 5 } })
  const doc = await measureBench(comm, settings, { showProgress: false, command: 'llcomm bench --test' })
  validateBenchDocument(JSON.parse(JSON.stringify(doc)))
  assert.deepEqual(Object.keys(doc).sort(), ['command', 'commit', 'date', 'machine', 'rows'])
  assert.ok(doc.machine.cores >= 1)
  assert.ok(!Number.isNaN(Date.parse(doc.date)))
  for (const key of [
    'backend',
    'ranks',
    'algorithm',
    'dtype',
    'bytes',
    'medianUs',
    'p99Us',
    'algbwGBs',
    'busbwGBs',
    'wrong',
  ]) {
    assert.ok(key in doc.rows[0], key)
  }
  const broken = JSON.parse(JSON.stringify(doc))
  broken.rows[1].medianUs = 'fast'
  assert.throws(() => validateBenchDocument(broken), /rows\[1\].*medianUs/)
  const unknownAlgorithm = JSON.parse(JSON.stringify(doc))
  unknownAlgorithm.rows[0].algorithm = 'warp-drive'
  assert.throws(() => validateBenchDocument(unknownAlgorithm), /algorithm/)
})

test('algorithm selection: default drops auto, all keeps it, unknown and unavailable names fail', () => {
  const comm = fakeCommunicator({ latencyUs: { 'oneshot-ll': 1, ring: 2 } })
  assert.deepEqual(algorithmsFor(comm, undefined), ['oneshot-ll', 'ring'])
  assert.deepEqual(algorithmsFor(comm, parseAlgorithms('all')), ['oneshot-ll', 'ring', 'auto'])
  assert.deepEqual(algorithmsFor(comm, parseAlgorithms('ring')), ['ring'])
  assert.throws(
    () => parseAlgorithms('ring,warp'),
    (e) => isLlcommError(e, 'UNSUPPORTED_ALGORITHM'),
  )
  assert.throws(
    () => algorithmsFor(comm, parseAlgorithms('nccl')),
    (e) => isLlcommError(e, 'UNSUPPORTED_ALGORITHM') && /available: oneshot-ll, ring, auto/.test(e.message),
  )
  assert.deepEqual(parsePdl('both'), [false, true])
  assert.throws(
    () => parsePdl('maybe'),
    (e) => isLlcommError(e, 'INVALID_ARGUMENT'),
  )
})

test('repeats: rounds interleave every case, a row takes the median of its round medians, refusals are asked once', async () => {
  // Round r of every case runs before round r+1 of any; the scripted latency grows with each request, so the
  // round medians of a case differ and their median is the middle round's.
  let calls = 0
  const inner = fakeCommunicator({ size: 2, latencyUs: { 'oneshot-ll': 2, 'oneshot-barrier': 5 }, refuse: ['ring'] })
  const comm = {
    ...inner,
    algorithms: [...inner.algorithms, 'ring' as const],
    benchmark: async (req: Parameters<typeof inner.benchmark>[0]) => {
      const r = await inner.benchmark(req)
      calls++
      return { ...r, timesUs: r.timesUs.map((t) => t + 100 * calls) }
    },
  }
  const s = {
    ...settings,
    sizesBytes: [64],
    algorithms: ['oneshot-ll', 'oneshot-barrier', 'ring'] as const,
    repeats: 3,
  }
  const order: string[] = []
  const { rows, skipped } = await runSweep(
    comm,
    allReduceCollective,
    { ...s, algorithms: [...s.algorithms] },
    planSweep({ ...s, algorithms: [...s.algorithms] }),
    (c) => order.push(c.algorithm),
  )
  assert.deepEqual(order, [
    'oneshot-ll',
    'oneshot-barrier',
    'ring',
    'oneshot-ll',
    'oneshot-barrier',
    'ring',
    'oneshot-ll',
    'oneshot-barrier',
    'ring',
  ])
  assert.equal(skipped.length, 1, 'a refused case is recorded once')
  assert.equal(calls, 6, 'and not asked again in later rounds')
  const ll = rows.find((r) => r.algorithm === 'oneshot-ll')
  assert.ok(ll?.roundMediansUs)
  assert.equal(ll.repeats, 3)
  assert.equal(ll.roundMediansUs.length, 3)
  assert.equal(ll.medianUs, [...ll.roundMediansUs].sort((a, b) => a - b)[1])
  assert.ok(ll.roundMediansUs[2] - ll.roundMediansUs[0] > 300, 'round 3 ran after every case of round 1')
  assert.throws(
    () => planSweep({ ...settings, repeats: 0 }),
    (e) => isLlcommError(e, 'INVALID_ARGUMENT'),
  )
})

test('--compute-us reaches every request, and rows carry it with the delay measured apart', async () => {
  const comm = fakeCommunicator({ size: 2, latencyUs: { 'oneshot-ll': 1 } })
  const s: SweepSettings = { ...settings, sizesBytes: [64], algorithms: ['oneshot-ll'], computeUs: 20 }
  const { rows } = await runSweep(comm, allReduceCollective, s, planSweep(s))
  assert.equal(comm.requests[0].computeUs, 20)
  assert.equal(rows[0].computeUs, 20)
  assert.equal(rows[0].skewUs, undefined)
  assert.equal(rows[0].skewWaitUs, 20)
  assert.throws(() => planSweep({ ...s, computeUs: -1 }), /--compute-us must be ≥ 0/)
  const none = await runSweep(comm, allReduceCollective, settings, planSweep(settings))
  assert.equal(none.rows[0].computeUs, undefined)
  assert.equal(none.rows[0].skewWaitUs, undefined)
})
