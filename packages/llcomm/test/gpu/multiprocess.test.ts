// One process per rank on the H200 (issue 20): 2 and 4 processes on the one GPU through CUDA IPC, each running
// the correctness matrix on host arrays and graph replay of deviceAllReduce (test/gpu/multiprocess-rank.ts).
// Kernels of different processes time-slice on one GPU, so this checks correctness, not speed: generous
// deadlines. Skips without LLCOMM_TEST_BACKEND=cuda.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { type ChaosResult, checkChaos } from '../process/chaos.js'
import { runRanks } from '../process/spawn-ranks.js'
import { ON_GPU, REDUCED, recordCase } from './gpu-harness.js'

const SCRIPT = fileURLToPath(new URL('./multiprocess-rank.js', import.meta.url))

for (const worldSize of REDUCED ? [2] : [2, 4]) {
  test(`${worldSize} processes on one GPU via CUDA IPC: correctness matrix and graph replay per process`, {
    skip: !ON_GPU,
  }, async () => {
    const started = performance.now()
    const runs = await runRanks({
      worldSize,
      scenario: 'gpu',
      script: SCRIPT,
      env: REDUCED ? { LLCOMM_TEST_SIZES: '1000', LLCOMM_TEST_REPLAYS: '5' } : {},
      deadlineMs: 300_000,
    })
    const results = runs.map(
      (r) =>
        r.result ?? { error: { message: `no result (code ${r.code}, signal ${r.signal}): ${r.stderr.slice(-2000)}` } },
    )
    const errors = results.filter((r) => r.error).map((r) => JSON.stringify(r.error))
    const problems = results.flatMap((r) => (r.problems as string[] | undefined) ?? [])
    const digests = results.map((r) => r.digests as Record<string, string> | undefined)
    const disagreements: string[] = []
    if (digests.every((d) => d)) {
      for (const key of Object.keys(digests[0] as Record<string, string>)) {
        if (!digests.every((d) => (d as Record<string, string>)[key] === (digests[0] as Record<string, string>)[key]))
          disagreements.push(key)
      }
    }
    const passed =
      errors.length === 0 && problems.length === 0 && disagreements.length === 0 && runs.every((r) => r.code === 0)
    recordCase({
      name: `multiprocess/ipc-${worldSize}-processes`,
      passed,
      worldSize,
      calls: results.map((r) => r.calls),
      replays: results.map((r) => r.replays),
      setupMs: results.map((r) => r.setupMs),
      algorithms: results[0]?.algorithms,
      ncclFallback: results[0]?.ncclFallback,
      errors,
      problems: problems.slice(0, 10),
      disagreements: disagreements.slice(0, 10),
      wallMs: performance.now() - started,
    })
    assert.deepEqual(errors, [])
    assert.deepEqual(problems, [])
    assert.deepEqual(disagreements, [], 'every rank got bitwise the same outputs')
    for (const r of runs) assert.equal(r.code, 0, r.stderr.slice(-2000))
  })
}

test('a long run with failures planted on purpose at 2 processes (test/process/chaos.ts): every data call exact, every planted failure typed on every rank, recover() after each', {
  skip: !ON_GPU,
}, async () => {
  const started = performance.now()
  const runs = await runRanks({
    worldSize: 2,
    scenario: 'gpu-chaos',
    script: SCRIPT,
    env: { LLCOMM_TEST_CALLS: '80', LLCOMM_TEST_SEED: '2026', LLCOMM_TEST_TIMEOUT_MS: '4000' },
    deadlineMs: 240_000,
  })
  const results = runs.map((r) => r.result as unknown as ChaosResult | undefined)
  const missing = runs
    .filter((r, i) => !results[i] || r.code !== 0)
    .map((r) => `rank ${r.rank}: ${r.stderr.slice(-1500)}`)
  const { problems, drawn } =
    missing.length === 0 ? checkChaos(results as ChaosResult[]) : { problems: missing, drawn: new Set() }
  recordCase({
    name: 'multiprocess/chaos/2r',
    passed: problems.length === 0,
    drawn: [...drawn],
    problems: problems.slice(0, 20),
    wallMs: performance.now() - started,
  })
  assert.deepEqual(problems, [])
})

test('a process killed mid-run: every other rank gets PEER_FAILED (or TIMEOUT naming it) within the deadline', {
  skip: !ON_GPU,
}, async () => {
  const { processAlive } = await import('../../src/rendezvous/process-liveness.js')
  const timeoutMs = 5000
  const runs = await runRanks({
    worldSize: 3,
    scenario: 'gpu-killed',
    script: SCRIPT,
    env: { LLCOMM_TEST_VICTIM: '1', LLCOMM_TEST_TIMEOUT_MS: String(timeoutMs) },
    deadlineMs: 120_000,
  })
  const survivors = runs.filter((r) => r.rank !== 1)
  const results = survivors.map((r) => r.result as Record<string, unknown> | undefined)
  const failures = results.map((r) => (r?.failure as { code?: string; details?: Record<string, unknown> }) ?? {})
  const typed = failures.every((f) => f.code === 'PEER_FAILED' || f.code === 'TIMEOUT')
  const inTime = results.every((r) => typeof r?.afterMs === 'number' && (r.afterMs as number) < timeoutMs * 2 + 5000)
  const victimGone = !processAlive(runs[1].pid) && runs[1].signal === 'SIGKILL'
  const passed = results.every((r) => r?.firstOk === true) && typed && inTime && victimGone
  recordCase({
    name: 'multiprocess/killed-rank',
    passed,
    failures: failures.map((f) => f.code),
    afterMs: results.map((r) => r?.afterMs),
    callsAfterKill: results.map((r) => r?.callsAfterKill),
    victimSignal: runs[1].signal,
  })
  for (const [i, r] of results.entries())
    assert.ok(r, `rank ${survivors[i].rank} printed no result: ${survivors[i].stderr}`)
  assert.ok(typed, `not PEER_FAILED/TIMEOUT: ${JSON.stringify(failures)}`)
  assert.ok(inTime, `a survivor waited too long: ${JSON.stringify(results.map((r) => r?.afterMs))}`)
  assert.ok(victimGone, `victim: signal ${runs[1].signal}, alive ${processAlive(runs[1].pid)}`)
})
