// One process per rank on the H200 (issue 20): 2 and 4 processes on the one GPU through CUDA IPC, each running
// the correctness matrix on host arrays and graph replay of deviceAllReduce (test/gpu/multiprocess-rank.ts).
// Kernels of different processes time-slice on one GPU, so this checks correctness, not speed: generous
// deadlines. Skips without LLCOMM_TEST_BACKEND=cuda.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
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
