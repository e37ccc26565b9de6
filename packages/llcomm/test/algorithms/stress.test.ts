// 10,000 back-to-back calls per barrier-free algorithm, each rank busy-waiting a random 0..skewUs before every
// call, fresh inputs each iteration, every output checked in the rank against the float64 reference.
import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { BARRIER_FREE_ALGORITHMS } from '../../src/api/types.js'
import { type CpuCommunicator, createCpuCommunicator } from '../../src/backends/cpu/communicator.js'

const ITERS = 10_000
let comm: CpuCommunicator
before(async () => {
  comm = await createCpuCommunicator({ backend: 'cpu', ranks: 4, timeoutMs: 20_000 })
})
after(async () => {
  await comm.close()
})

for (const algorithm of BARRIER_FREE_ALGORITHMS) {
  test(`${algorithm}: ${ITERS} back-to-back calls with random per-rank delays, zero wrong elements`, async () => {
    const result = await comm.benchmark({ algorithm, dtype: 'bf16', count: 37, iters: ITERS, skewUs: 30 })
    assert.equal(result.algorithm, algorithm)
    assert.equal(result.timesUs.length, ITERS)
    assert.equal(result.wrong, 0)
    assert.ok(
      result.skewWaitUs.some((us) => us > 0),
      'the delays really skewed the arrivals',
    )
  })
}
