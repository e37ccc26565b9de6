// One process per rank on the cpu backend (issue 20): real Node processes, one /dev/shm channel, the rendezvous
// over loopback. The correctness matrix at 2, 4 and 8 processes (outputs against the float64 reference and
// bitwise identical across ranks), 10,000 back-to-back checked calls, a rank killed with SIGKILL (the host too),
// a rank that never calls, a rank that never joins, duplicate ranks and a disagreeing worldSize, bad arguments.
// Every run also checks that no process outlives it and that nothing is left in /dev/shm.
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { test } from 'node:test'
import { createCommunicator } from '../../src/create.js'
import { isLlcommError } from '../../src/errors.js'
import { listSegments, removeStaleSegments, SharedMemorySegment } from '../../src/ffi/shared-memory.js'
import { findFreePort } from '../../src/rendezvous/free-port.js'
import { processAlive } from '../../src/rendezvous/process-liveness.js'
import { CHAOS_EVENTS, type ChaosResult, checkChaos } from './chaos.js'
import { type RankRun, runRanks } from './spawn-ranks.js'

/** No child alive, no segment named after any child (the creator's pid is in the name). */
function assertNothingLeft(runs: RankRun[]): void {
  for (const r of runs) assert.equal(processAlive(r.pid), false, `rank ${r.rank} (pid ${r.pid}) still runs`)
  const pids = new Set(runs.map((r) => String(r.pid)))
  const left = listSegments().filter((n) => pids.has(n.split('-')[1]))
  assert.deepEqual(left, [], 'shared-memory segments left behind')
}

function resultOf(run: RankRun): Record<string, unknown> {
  assert.ok(run.result, `rank ${run.rank} printed no result (code ${run.code}, signal ${run.signal}): ${run.stderr}`)
  return run.result
}

// The full matrix at 2 processes; sampled lengths (and dtypes) at 4 and 8, to stay within the CI budget on 2 cores.
const MATRIX_SAMPLES = [
  { worldSize: 2, lengths: [1, 7, 1000, 4097, 65537], dtypes: ['f32', 'f16', 'bf16'] },
  { worldSize: 4, lengths: [7, 4097], dtypes: ['f32', 'bf16'] },
  { worldSize: 8, lengths: [1000], dtypes: ['f16'] },
]
for (const { worldSize, lengths, dtypes } of MATRIX_SAMPLES) {
  test(`matrix at ${worldSize} processes: every algorithm x ${dtypes.join('/')} x ${lengths.join('/')} elements, reference and bitwise identical`, async () => {
    const runs = await runRanks({
      worldSize,
      scenario: 'matrix',
      env: { LLCOMM_TEST_LENGTHS: lengths.join(','), LLCOMM_TEST_DTYPES: dtypes.join(',') },
      deadlineMs: 60_000,
    })
    const digests = runs.map((r) => resultOf(r).digests as Record<string, string>)
    for (const r of runs) {
      assert.equal(r.code, 0, r.stderr)
      assert.deepEqual(resultOf(r).problems, [], `rank ${r.rank}`)
      assert.equal(resultOf(r).calls, 7 * dtypes.length * lengths.length)
    }
    for (let r = 1; r < worldSize; r++) assert.deepEqual(digests[r], digests[0], `rank ${r} differs from rank 0`)
    assertNothingLeft(runs)
  })
}

test('deterministic: true on a per-process communicator: every algorithm gives oneshot-barrier bits, replacements reported', async () => {
  const runs = await runRanks({
    worldSize: 3,
    scenario: 'deterministic',
    env: { LLCOMM_TEST_DETERMINISTIC: '1' },
    deadlineMs: 60_000,
  })
  for (const r of runs) {
    assert.equal(r.code, 0, r.stderr)
    const { ran, digests } = resultOf(r) as {
      ran: Record<string, { algorithm: string; fallbackReason?: string }>
      digests: Record<string, string>
    }
    for (const [key, info] of Object.entries(ran)) {
      const [algorithm, dtype] = key.split('/')
      assert.equal(digests[key], digests[`oneshot-barrier/${dtype}`], `rank ${r.rank}: ${key} bits`)
      if (algorithm === 'ring' || algorithm === 'twoshot-atomic') {
        assert.equal(info.algorithm, 'oneshot-barrier', `rank ${r.rank}: ${key} ran ${info.algorithm}`)
        assert.match(info.fallbackReason ?? '', /deterministic/, `rank ${r.rank}: ${key}`)
      }
    }
    assert.deepEqual(digests, resultOf(runs[0]).digests, `rank ${r.rank} differs from rank 0`)
  }
  assertNothingLeft(runs)
})

test('10,000 back-to-back checked calls at 2 processes, 300 at 6 (every 5th empty on every rank)', async () => {
  for (const [worldSize, calls] of [
    [2, 10_000],
    [6, 300],
  ]) {
    const runs = await runRanks({
      worldSize,
      scenario: 'stress',
      env: { LLCOMM_TEST_CALLS: String(calls) },
      deadlineMs: 60_000,
    })
    for (const r of runs) {
      assert.equal(r.code, 0, r.stderr)
      assert.equal(resultOf(r).calls, calls)
      assert.equal(resultOf(r).wrong, 0, `rank ${r.rank} of ${worldSize}`)
      assert.equal(resultOf(r).empty, calls / 5)
    }
    assertNothingLeft(runs)
  }
})

test("waits that block at once (spinIterations 0) are woken by the writer's futex wake, not by the 100 ms liveness slice", async () => {
  const runs = await runRanks({
    worldSize: 2,
    scenario: 'stress',
    env: { LLCOMM_TEST_CALLS: '300', LLCOMM_TEST_SPIN: '0' },
    deadlineMs: 60_000,
  })
  for (const r of runs) {
    assert.equal(r.code, 0, r.stderr)
    assert.equal(resultOf(r).wrong, 0)
    // Without the wake every call would sleep out a liveness slice (LIVENESS_CHECK_MS = 100 ms).
    assert.ok((resultOf(r).perCallUs as number) < 50_000, `${resultOf(r).perCallUs} us per call`)
  }
  assertNothingLeft(runs)
})

for (const victim of [2, 0]) {
  test(`a rank killed mid-run (rank ${victim}${victim === 0 ? ', the rendezvous host' : ''}): PEER_FAILED naming it on every other rank, fast`, async () => {
    const timeoutMs = 20_000
    const runs = await runRanks({
      worldSize: 4,
      scenario: 'killed',
      env: { LLCOMM_TEST_VICTIM: String(victim), LLCOMM_TEST_TIMEOUT_MS: String(timeoutMs) },
      deadlineMs: 30_000,
    })
    for (const r of runs) {
      if (r.rank === victim) {
        assert.equal(r.signal, 'SIGKILL')
        continue
      }
      assert.equal(r.code, 0, r.stderr)
      const res = resultOf(r)
      const error = res.error as { code: string; details: Record<string, unknown> }
      assert.equal(error.code, 'PEER_FAILED', JSON.stringify(error))
      assert.equal(error.details.peer, victim)
      assert.equal(error.details.rank, r.rank)
      assert.ok((res.afterMs as number) < timeoutMs / 4, `noticed after ${res.afterMs} ms, not at the deadline`)
      assert.equal((res.second as { code: string }).code, 'PEER_FAILED', 'a later call fails the same way')
    }
    assertNothingLeft(runs)
  })
}

test('a rank that joins but never calls: TIMEOUT naming it (rank, peer, epoch) within the deadline', async () => {
  const timeoutMs = 1000
  const runs = await runRanks({
    worldSize: 3,
    scenario: 'absent',
    env: { LLCOMM_TEST_VICTIM: '1', LLCOMM_TEST_TIMEOUT_MS: String(timeoutMs) },
    deadlineMs: 30_000,
  })
  for (const r of runs) {
    assert.equal(r.code, 0, r.stderr)
    if (r.rank === 1) continue
    const res = resultOf(r)
    const error = res.error as { code: string; details: Record<string, unknown> }
    assert.equal(error.code, 'TIMEOUT', JSON.stringify(error))
    assert.equal(error.details.peer, 1)
    assert.equal(typeof error.details.epoch, 'number')
    assert.ok((res.afterMs as number) < timeoutMs + 4000, `after ${res.afterMs} ms`)
  }
  assertNothingLeft(runs)
})

// A per-rank call that differs from its peers' is MISMATCH on every rank, never data: another count, and an empty
// call (count 0) against a non-empty one, which must still take part in the signature exchange (an empty call
// that returned at once left its rank one call behind: its next call met the peers' mismatched one, and both
// returned wrong sums without an error).
// (bf16 101 against 102: the same 51 words of two lanes; the count itself must reach the signature)
for (const { oddCount, mainCount, dtype } of [
  { oddCount: 63, mainCount: 64, dtype: 'f32' },
  { oddCount: 0, mainCount: 64, dtype: 'f32' },
  { oddCount: 102, mainCount: 101, dtype: 'bf16' },
]) {
  test(`a rank whose ${dtype} call has ${oddCount} elements where the others have ${mainCount}: MISMATCH on every rank, no data from either call`, async () => {
    const runs = await runRanks({
      worldSize: 3,
      scenario: 'mismatch',
      env: {
        LLCOMM_TEST_VICTIM: '1',
        LLCOMM_TEST_ODD_COUNT: String(oddCount),
        LLCOMM_TEST_MAIN_COUNT: String(mainCount),
        LLCOMM_TEST_DTYPE: dtype,
        LLCOMM_TEST_TIMEOUT_MS: '3000',
      },
      deadlineMs: 30_000,
    })
    for (const r of runs) {
      assert.equal(r.code, 0, r.stderr)
      const outcomes = resultOf(r).outcomes as { code: string; wrong?: number; details?: Record<string, unknown> }[]
      const [first, second] = outcomes
      assert.equal(first.code, 'MISMATCH', `rank ${r.rank}, the mismatched call: ${JSON.stringify(first)}`)
      // After a MISMATCH the per-rank communicator stays failed: the next call reports it again, with no data.
      assert.notEqual(second.code, 'NONE', `rank ${r.rank}, the call after it returned data: ${JSON.stringify(second)}`)
    }
    assertNothingLeft(runs)
  })
}

// A call refused on one rank (a typed error thrown on that rank before anything runs) is still a call for its peers:
// the refused rank takes the call's signature epoch with a "refused" signature, so its peers fail with MISMATCH
// instead of waiting for (and reducing with) the refused rank's next call, which would return wrong sums without an
// error if that rank carries on.
// 'one': the victim refuses, carries on; the others get MISMATCH naming the refusal. 'all': every rank refuses alike:
// the refusals match, and the next call is exact.
for (const refusing of ['one', 'all'] as const) {
  test(
    refusing === 'one'
      ? 'a call refused on one rank (an unknown dtype) that carries on: MISMATCH on the others, the refusal on it, no data from any call'
      : 'a call refused alike on every rank: each rank gets its typed error, the refusals match, and the next call is exact',
    async () => {
      const runs = await runRanks({
        worldSize: 3,
        scenario: 'mismatch',
        env: {
          LLCOMM_TEST_VICTIM: '1',
          LLCOMM_TEST_ODD_COUNT: '64',
          LLCOMM_TEST_ODD_INVALID: refusing === 'one' ? '1' : 'all',
          LLCOMM_TEST_TIMEOUT_MS: '3000',
        },
        deadlineMs: 30_000,
      })
      for (const r of runs) {
        assert.equal(r.code, 0, r.stderr)
        const [first, second] = resultOf(r).outcomes as { code: string; message?: string; wrong?: number }[]
        const refused = refusing === 'all' || r.rank === 1
        if (refused) assert.equal(first.code, 'UNSUPPORTED_DTYPE', `rank ${r.rank}: ${JSON.stringify(first)}`)
        else {
          assert.equal(first.code, 'MISMATCH', `rank ${r.rank}: ${JSON.stringify(first)}`)
          assert.match(String(first.message), /refused/, `rank ${r.rank} names the refused call: ${first.message}`)
        }
        if (refusing === 'all') assert.deepEqual(second, { code: 'NONE', count: 64, wrong: 0 }, `rank ${r.rank}`)
        else assert.notEqual(second.code, 'NONE', `rank ${r.rank}, the call after it returned data`)
      }
      assertNothingLeft(runs)
    },
  )
}

// recover() per process after a failed call: a mismatched count, and a call refused on one rank; then calls are exact.
// 'skip': a rank that makes no call while the others time out, so the ranks' epochs differ until recover() re-arms them.
const RECOVER_AFTER = {
  count: 'a mismatched count',
  refused: 'a call refused on one rank',
  skip: 'a TIMEOUT (one rank made no call)',
}
for (const how of ['count', 'refused', 'skip'] as const) {
  test(`recover() on every rank after ${RECOVER_AFTER[how]}: the next calls are exact`, async () => {
    const runs = await runRanks({
      worldSize: 3,
      scenario: 'mismatch',
      env: {
        LLCOMM_TEST_VICTIM: '1',
        LLCOMM_TEST_ODD_COUNT: how === 'count' ? '63' : '64',
        ...(how === 'refused' ? { LLCOMM_TEST_ODD_INVALID: '1' } : {}),
        ...(how === 'skip' ? { LLCOMM_TEST_ODD_SKIP: '1' } : {}),
        LLCOMM_TEST_RECOVER: '1',
        LLCOMM_TEST_TIMEOUT_MS: '3000',
      },
      deadlineMs: 40_000,
    })
    for (const r of runs) {
      assert.equal(r.code, 0, r.stderr)
      const outcomes = resultOf(r).outcomes as { code: string }[]
      assert.notEqual(outcomes[0].code, 'NONE', `rank ${r.rank}: the failed call returned data`)
      assert.equal(outcomes[2].code, 'RECOVERED', `rank ${r.rank}: ${JSON.stringify(outcomes[2])}`)
      for (const after of outcomes.slice(3))
        assert.deepEqual(after, { code: 'NONE', count: 64, wrong: 0 }, `rank ${r.rank}`)
    }
    assertNothingLeft(runs)
  })
}

test('recover() where one rank never calls it: the others end in TIMEOUT naming that rank, within the deadline', async () => {
  const timeoutMs = 1000
  const runs = await runRanks({
    worldSize: 3,
    scenario: 'mismatch',
    env: {
      LLCOMM_TEST_VICTIM: '1',
      LLCOMM_TEST_ODD_COUNT: '63',
      LLCOMM_TEST_RECOVER: '1',
      LLCOMM_TEST_NO_RECOVER: '1',
      LLCOMM_TEST_TIMEOUT_MS: String(timeoutMs),
    },
    deadlineMs: 40_000,
  })
  for (const r of runs) {
    assert.equal(r.code, 0, r.stderr)
    if (r.rank === 1) continue
    const outcomes = resultOf(r).outcomes as { code: string; details?: { missing?: number[] }; ms?: number }[]
    const failed = outcomes[2]
    assert.equal(failed.code, 'TIMEOUT', `rank ${r.rank}: ${JSON.stringify(failed)}`)
    assert.deepEqual(failed.details?.missing, [1], `rank ${r.rank} names the rank that never came`)
    assert.ok((failed.ms as number) < 2 * timeoutMs + 5000 + 2000, `after ${failed.ms} ms`)
  }
  assertNothingLeft(runs)
})

test('a long run with failures planted on purpose at 3 processes: every data call exact, every planted failure typed on every rank, recover() after each', async () => {
  const runs = await runRanks({
    worldSize: 3,
    scenario: 'chaos',
    env: { LLCOMM_TEST_CALLS: '300', LLCOMM_TEST_SEED: '2026', LLCOMM_TEST_TIMEOUT_MS: '3000' },
    deadlineMs: 120_000,
  })
  for (const r of runs) assert.equal(r.code, 0, r.stderr)
  const { problems, drawn } = checkChaos(runs.map((r) => resultOf(r) as unknown as ChaosResult))
  assert.deepEqual(problems, [])
  assert.deepEqual([...drawn].sort(), [...CHAOS_EVENTS].sort(), 'every kind of event drawn')
  assertNothingLeft(runs)
})

test('allReduceMany at 3 processes: each buffer against the reference and bitwise equal to allReduce of it alone, an empty buffer among them, auto and a forced algorithm', async () => {
  const runs = await runRanks({ worldSize: 3, scenario: 'many', deadlineMs: 60_000 })
  const digests = runs.map((r) => resultOf(r).digests as Record<string, string>)
  for (const r of runs) {
    assert.equal(r.code, 0, r.stderr)
    assert.deepEqual(resultOf(r).problems, [], `rank ${r.rank}`)
    assert.equal(resultOf(r).calls, 4)
  }
  for (let r = 1; r < 3; r++) assert.deepEqual(digests[r], digests[0], `rank ${r} differs from rank 0`)
  assertNothingLeft(runs)
})

for (const odd of ['fewer', 'count']) {
  test(`allReduceMany, a rank with ${odd === 'fewer' ? 'one buffer fewer' : 'another count in one buffer'}: MISMATCH on every rank, naming the group signatures`, async () => {
    const runs = await runRanks({
      worldSize: 3,
      scenario: 'many',
      env: { LLCOMM_TEST_VICTIM: '2', LLCOMM_TEST_MANY_ODD: odd, LLCOMM_TEST_TIMEOUT_MS: '3000' },
      deadlineMs: 30_000,
    })
    for (const r of runs) {
      assert.equal(r.code, 0, r.stderr)
      const failure = resultOf(r).failure as { code: string; message?: string }
      assert.equal(failure.code, 'MISMATCH', `rank ${r.rank}: ${JSON.stringify(failure)}`)
      assert.match(String(failure.message), /allreduce-many f32/, `rank ${r.rank}: ${failure.message}`)
    }
    assertNothingLeft(runs)
  })
}

test('a rank that never joins: TIMEOUT naming the missing rank on every rank that joined', async () => {
  const runs = await runRanks({
    worldSize: 4,
    ranks: [0, 1, 3],
    scenario: 'stress',
    env: { LLCOMM_TEST_TIMEOUT_MS: '800' },
    deadlineMs: 20_000,
  })
  for (const r of runs) {
    assert.equal(r.code, 3)
    const e = resultOf(r).joinError as { code: string; details: Record<string, unknown> }
    assert.equal(e.code, 'TIMEOUT', JSON.stringify(e))
    assert.deepEqual(e.details.missing, [2])
    assert.ok((resultOf(r).afterMs as number) < 800 + 4000)
  }
  assertNothingLeft(runs)
})

for (const [what, rankEnv] of [
  ['duplicate ranks', (r: number): Record<string, string> => (r === 2 ? { LLCOMM_RANK: '1' } : {})],
  ['a disagreeing worldSize', (r: number): Record<string, string> => (r === 1 ? { LLCOMM_WORLD_SIZE: '5' } : {})],
] as const) {
  test(`${what}: INVALID_ARGUMENT at once on every rank`, async () => {
    const started = performance.now()
    const runs = await runRanks({
      worldSize: 3,
      scenario: 'stress',
      rankEnv,
      env: { LLCOMM_TEST_TIMEOUT_MS: '30000' },
      deadlineMs: 20_000,
    })
    for (const r of runs) {
      const e = resultOf(r).joinError as { code: string; message: string }
      assert.equal(e?.code, 'INVALID_ARGUMENT', `rank ${r.rank}: ${JSON.stringify(resultOf(r))}`)
    }
    assert.ok(performance.now() - started < 15_000, 'long before the 30 s deadline')
    assertNothingLeft(runs)
  })
}

test('bad arguments: INVALID_ARGUMENT before anything listens', async () => {
  const port = await findFreePort()
  const cases: Record<string, unknown>[] = [
    { rank: 2, worldSize: 2, rendezvous: `tcp://127.0.0.1:${port}` },
    { rank: -1, worldSize: 2, rendezvous: `tcp://127.0.0.1:${port}` },
    { rank: 0, worldSize: 0, rendezvous: `tcp://127.0.0.1:${port}` },
    { rank: 0, worldSize: 2, rendezvous: 'tcp://127.0.0.1' },
    { rank: 0, worldSize: 2, rendezvous: 'udp://127.0.0.1:1' },
    { rank: 0, worldSize: 2, rendezvous: `tcp://127.0.0.1:${port}`, device: 0 },
    { rank: 0, worldSize: 2, rendezvous: `tcp://127.0.0.1:${port}`, timeoutMs: -1 },
  ]
  for (const c of cases) {
    await assert.rejects(
      createCommunicator({ backend: 'cpu', ...c } as Parameters<typeof createCommunicator>[0]),
      (e) => isLlcommError(e, 'INVALID_ARGUMENT'),
      JSON.stringify(c),
    )
  }
  const saved = { ...process.env }
  try {
    delete process.env.LLCOMM_RENDEZVOUS
    process.env.LLCOMM_RANK = '0'
    process.env.LLCOMM_WORLD_SIZE = '2'
    await assert.rejects(createCommunicator({ backend: 'cpu', rendezvous: 'env' }), (e) =>
      isLlcommError(e, 'INVALID_ARGUMENT'),
    )
  } finally {
    for (const k of ['LLCOMM_RENDEZVOUS', 'LLCOMM_RANK', 'LLCOMM_WORLD_SIZE']) {
      if (saved[k] === undefined) delete process.env[k]
      else process.env[k] = saved[k]
    }
  }
})

test('a world of one process: the same API, nothing left after close', async () => {
  const port = await findFreePort()
  const comm = await createCommunicator({
    backend: 'cpu',
    rank: 0,
    worldSize: 1,
    rendezvous: `tcp://127.0.0.1:${port}`,
  })
  assert.equal(comm.size, 1)
  assert.ok(comm.algorithms.includes('auto'))
  const out = await comm.allReduce(new Float32Array([1, 2, 3]))
  assert.deepEqual(Array.from(out), [1, 2, 3])
  await comm.close()
  await comm.close()
  await assert.rejects(comm.allReduce(new Float32Array(1)), (e) => isLlcommError(e, 'CLOSED'))
  assert.deepEqual(
    listSegments().filter((n) => n.includes(`-${process.pid}-`)),
    [],
  )
})

test('an open per-rank communicator does not keep Node alive (a forgotten close)', async () => {
  const port = await findFreePort()
  const script = `
    import { createCommunicator } from ${JSON.stringify(new URL('../../src/create.js', import.meta.url).href)}
    const comm = await createCommunicator({ backend: 'cpu', rank: 0, worldSize: 1, rendezvous: 'tcp://127.0.0.1:${port}' })
    await comm.allReduce(new Float32Array(4))
    console.log('done')`
  const started = performance.now()
  const code = await new Promise<number | null>((resolve) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: 'ignore' })
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000)
    child.on('close', (c) => {
      clearTimeout(timer)
      resolve(c)
    })
  })
  assert.equal(code, 0, 'exited by itself')
  assert.ok(performance.now() - started < 10_000)
})

test('a segment whose creator died is removed by the next creation on the host (removeStaleSegments)', async () => {
  const child = spawn(process.execPath, ['-e', ''], { stdio: 'ignore' })
  const deadPid = await new Promise<number>((resolve) => child.on('close', () => resolve(child.pid ?? 0)))
  const name = `/llcomm-${deadPid}-stale0test`
  const seg = SharedMemorySegment.create(name, 4096)
  seg.unmap()
  assert.ok(listSegments().includes(name.slice(1)))
  const removed = removeStaleSegments(processAlive)
  assert.ok(removed.includes(name.slice(1)))
  assert.equal(listSegments().includes(name.slice(1)), false)
})
