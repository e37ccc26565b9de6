// allReduceMany on the CPU backend (issue 21): several buffers of different sizes in one queued call, each result
// bitwise equal to allReduce of that buffer alone and to a float64 reference; one bad buffer rejects the whole call
// before anything runs; calls issued around it keep their order.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { createCpuCommunicator } from '../../../src/backends/cpu/communicator.js'
import { isLlcommError } from '../../../src/errors.js'

const RANKS = 3

function data(count: number, rank: number, seed: number): Float32Array {
  // multiples of 1/8: every partial sum is exact in f32, so the float64 reference is the exact answer
  return Float32Array.from({ length: count }, (_, i) => (((i * 7 + rank * 13 + seed * 5) % 17) - 8) / 8)
}

test('allReduceMany: every buffer equal to its own allReduce and to the float64 sum, in one queued call', async () => {
  const comm = await createCpuCommunicator({ backend: 'cpu', ranks: RANKS, timeoutMs: 20_000 })
  try {
    const counts = [1, 37, 0, 4096, 300]
    const buffers = counts.map((c, b) => Array.from({ length: RANKS }, (_, r) => data(c, r, b)))
    for (const algorithm of ['auto', 'oneshot-ll', 'ring'] as const) {
      const many = await comm.allReduceMany(buffers, { algorithm })
      assert.equal(many.length, counts.length)
      for (const [b, inputs] of buffers.entries()) {
        const one = await comm.allReduce(inputs, { algorithm })
        for (let r = 0; r < RANKS; r++) {
          assert.deepEqual(
            new Uint32Array(many[b][r].buffer),
            new Uint32Array(one[r].buffer),
            `${algorithm} buffer ${b} rank ${r}`,
          )
          for (let i = 0; i < counts[b]; i++) {
            let want = 0
            for (let q = 0; q < RANKS; q++) want += inputs[q][i]
            assert.equal(many[b][r][i], want)
          }
        }
      }
    }
    // A bad buffer (wrong length on one rank) rejects the whole call; the communicator keeps working.
    const bad = [buffers[0], [new Float32Array(2), new Float32Array(3), new Float32Array(2)]]
    await assert.rejects(comm.allReduceMany(bad), (e) => isLlcommError(e, 'LENGTH_MISMATCH'))
    await assert.rejects(comm.allReduceMany([]), (e) => isLlcommError(e, 'INVALID_ARGUMENT'))
    // Queued calls keep their issue order around it.
    const [a, m, z] = await Promise.all([
      comm.allReduce(buffers[1]),
      comm.allReduceMany([buffers[3], buffers[1]]),
      comm.allReduce(buffers[4]),
    ])
    assert.deepEqual(m[1][0], a[0])
    assert.equal(z[2].length, 300)
  } finally {
    await comm.close()
  }
})
