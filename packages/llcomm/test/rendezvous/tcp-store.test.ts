// The rendezvous store (src/rendezvous/tcp-store.ts), several ranks in this one process over loopback: values in
// rank order, a missing rank named on every joined rank, bad joins refused at once, a dropped connection reported
// as PEER_FAILED, nothing listening after the join or after close. Ports come from the OS (findFreePort).
import assert from 'node:assert/strict'
import { createConnection } from 'node:net'
import { test } from 'node:test'
import { isLlcommError, type LlcommError } from '../../src/errors.js'
import { parseRendezvousAddress, resolveRendezvousSettings } from '../../src/rendezvous/address.js'
import { findFreePort } from '../../src/rendezvous/free-port.js'
import { joinRendezvous, type Rendezvous } from '../../src/rendezvous/tcp-store.js'

async function address(): Promise<{ host: string; port: number }> {
  return { host: '127.0.0.1', port: await findFreePort() }
}

function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createConnection({ host: '127.0.0.1', port })
    s.once('connect', () => {
      s.destroy()
      resolve(true)
    })
    s.once('error', () => resolve(false))
  })
}

function joinAll(
  a: { host: string; port: number },
  ranks: number[],
  worldSize: number,
  timeoutMs: number,
  config: (r: number) => unknown = () => ({ x: 1 }),
) {
  return ranks.map((rank) => joinRendezvous({ address: a, rank, worldSize, timeoutMs, config: config(rank) }))
}

async function closeAll(rvs: Rendezvous[]): Promise<void> {
  await Promise.all(rvs.map((r) => r.close(2000)))
}

test('three ranks join, all-gather in rank order, barrier; nothing listens after the join nor after close', async () => {
  const a = await address()
  const rvs = await Promise.all(joinAll(a, [2, 0, 1], 3, 5000))
  try {
    assert.deepEqual(
      rvs.map((r) => r.rank),
      [2, 0, 1],
    )
    for (const r of rvs) assert.deepEqual(r.pids, [process.pid, process.pid, process.pid])
    assert.equal(await listening(a.port), false, 'the host stops listening once every rank has joined')
    const gathered = await Promise.all(rvs.map((r) => r.allGather('v', { from: r.rank }, 2000)))
    for (const g of gathered) assert.deepEqual(g, [{ from: 0 }, { from: 1 }, { from: 2 }])
    await Promise.all(rvs.map((r) => r.barrier('b', 2000)))
  } finally {
    await closeAll(rvs)
  }
  assert.equal(await listening(a.port), false)
})

test('a rank that never joins: TIMEOUT naming it on every rank that joined, within the deadline', async () => {
  const a = await address()
  const started = performance.now()
  const results = await Promise.allSettled(joinAll(a, [0, 1, 3], 4, 600))
  const elapsedMs = performance.now() - started
  for (const r of results) {
    assert.equal(r.status, 'rejected')
    const e = (r as PromiseRejectedResult).reason as LlcommError
    assert.ok(isLlcommError(e, 'TIMEOUT'), String(e))
    assert.deepEqual(e.details.missing, [2], e.message)
    assert.match(e.message, /rank\(s\) 2 never joined/)
  }
  assert.ok(elapsedMs < 600 + 1500, `took ${elapsedMs} ms`)
  assert.equal(await listening(a.port), false)
})

test('rank 0 never comes up: the others get TIMEOUT naming rank 0', async () => {
  const a = await address()
  const results = await Promise.allSettled(joinAll(a, [1], 2, 300))
  const e = (results[0] as PromiseRejectedResult).reason as LlcommError
  assert.ok(isLlcommError(e, 'TIMEOUT'), String(e))
  assert.deepEqual(e.details.missing, [0])
})

for (const [what, ranks, worldSizes, configs] of [
  ['a duplicate rank', [0, 1, 1], [3, 3, 3], [1, 1, 1]],
  ['a disagreeing worldSize', [0, 1, 2], [3, 4, 3], [1, 1, 1]],
  ['a rank outside the world (claimed by a process with a larger worldSize)', [0, 5], [2, 6], [1, 1]],
  ['disagreeing options', [0, 1], [2, 2], [1, 2]],
] as const) {
  test(`${what}: INVALID_ARGUMENT at once on every rank`, async () => {
    const a = await address()
    const started = performance.now()
    const host = joinRendezvous({
      address: a,
      rank: ranks[0],
      worldSize: worldSizes[0],
      timeoutMs: 20_000,
      config: configs[0],
    })
    // Let rank 0 listen first, so that the others join in order.
    await new Promise((r) => setTimeout(r, 50))
    const others = ranks
      .slice(1)
      .map((rank, i) =>
        joinRendezvous({ address: a, rank, worldSize: worldSizes[i + 1], timeoutMs: 20_000, config: configs[i + 1] }),
      )
    const results = await Promise.allSettled([host, ...others])
    for (const r of results) {
      assert.equal(r.status, 'rejected')
      const e = (r as PromiseRejectedResult).reason as LlcommError
      assert.ok(isLlcommError(e, 'INVALID_ARGUMENT'), String(e))
    }
    // Ranks still on their way get the same answer (the host refuses joins for a while after a bad one) ...
    const seen = new Set<number>(ranks.filter((r) => r < worldSizes[0]))
    const late = Array.from({ length: worldSizes[0] }, (_, r) => r).filter((r) => !seen.has(r))
    const lateResults = await Promise.allSettled(
      late.map((rank) =>
        joinRendezvous({ address: a, rank, worldSize: worldSizes[0], timeoutMs: 20_000, config: configs[0] }),
      ),
    )
    for (const r of lateResults) {
      assert.ok(isLlcommError((r as PromiseRejectedResult).reason, 'INVALID_ARGUMENT'), 'a latecomer is refused too')
    }
    assert.ok(performance.now() - started < 5000, 'not after the 20 s deadline')
    // ... and once every rank has been answered, nothing listens.
    await new Promise((r) => setTimeout(r, 50))
    assert.equal(await listening(a.port), false)
  })
}

test('a rank whose connection drops: PEER_FAILED naming it, for pending and later gathers', async () => {
  const a = await address()
  const rvs = await Promise.all(joinAll(a, [0, 1, 2], 3, 5000))
  try {
    const failures: number[] = []
    rvs[0].onPeerFailed((p) => failures.push(p))
    const pending = rvs[0].allGather('g', 0, 10_000)
    rvs[2].destroy()
    await assert.rejects(pending, (e) => isLlcommError(e, 'PEER_FAILED') && e.details.peer === 2)
    assert.deepEqual(failures, [2])
    await assert.rejects(rvs[1].allGather('h', 1, 10_000), (e) => isLlcommError(e, 'PEER_FAILED'))
    assert.equal(rvs[1].deadPeer, 2)
  } finally {
    await closeAll(rvs)
  }
})

test('a rank that closes (bye) is not a failure: the others see no dead peer', async () => {
  const a = await address()
  const rvs = await Promise.all(joinAll(a, [0, 1, 2], 3, 5000))
  const failures: number[] = []
  rvs[2].onPeerFailed((p) => failures.push(p))
  await rvs[1].close(2000)
  await new Promise((r) => setTimeout(r, 100))
  assert.deepEqual(failures, [])
  assert.equal(rvs[2].deadPeer, undefined)
  await Promise.all([rvs[0].close(2000), rvs[2].close(2000)])
})

test('a gather a rank never joins: TIMEOUT naming it', async () => {
  const a = await address()
  const rvs = await Promise.all(joinAll(a, [0, 1, 2], 3, 5000))
  try {
    const results = await Promise.allSettled([rvs[0].allGather('x', 0, 300), rvs[2].allGather('x', 2, 300)])
    for (const r of results) {
      const e = (r as PromiseRejectedResult).reason as LlcommError
      assert.ok(isLlcommError(e, 'TIMEOUT'), String(e))
      assert.deepEqual(e.details.missing, [1])
    }
  } finally {
    await closeAll(rvs)
  }
})

test('addresses and settings: tcp://HOST:PORT, env, bad values are INVALID_ARGUMENT', () => {
  assert.deepEqual(parseRendezvousAddress('tcp://10.0.0.2:29500'), { host: '10.0.0.2', port: 29500 })
  assert.deepEqual(parseRendezvousAddress('tcp://localhost:29500'), { host: '127.0.0.1', port: 29500 })
  assert.deepEqual(parseRendezvousAddress('tcp://[::1]:7'), { host: '::1', port: 7 })
  for (const bad of ['tcp://x', 'http://a:1', 'tcp://a:0', 'tcp://a:70000', 42, undefined]) {
    assert.throws(
      () => parseRendezvousAddress(bad),
      (e) => isLlcommError(e, 'INVALID_ARGUMENT'),
      String(bad),
    )
  }
  const env = { LLCOMM_RANK: '1', LLCOMM_WORLD_SIZE: '4', LLCOMM_RENDEZVOUS: 'tcp://127.0.0.1:1234' }
  assert.deepEqual(resolveRendezvousSettings({ rendezvous: 'env' }, env), {
    rank: 1,
    worldSize: 4,
    address: { host: '127.0.0.1', port: 1234 },
  })
  for (const bad of [
    [{ rendezvous: 'env' }, { ...env, LLCOMM_RANK: '4' }],
    [{ rendezvous: 'env' }, { ...env, LLCOMM_RANK: 'x' }],
    [{ rendezvous: 'env' }, { LLCOMM_RANK: '0', LLCOMM_WORLD_SIZE: '2' }],
    [{ rank: 2, worldSize: 2, rendezvous: 'tcp://127.0.0.1:1' }, {}],
    [{ rank: -1, worldSize: 2, rendezvous: 'tcp://127.0.0.1:1' }, {}],
    [{ rank: 0, rendezvous: 'tcp://127.0.0.1:1' }, {}],
  ] as const) {
    assert.throws(
      () => resolveRendezvousSettings(bad[0], bad[1]),
      (e) => isLlcommError(e, 'INVALID_ARGUMENT'),
    )
  }
})
