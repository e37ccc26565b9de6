// Property tests (fast-check): for random rank counts, lengths, dtypes, algorithms and values (including NaN,
// infinities, subnormals and the sentinel's bits), the result matches the float64 reference and every rank has
// the same bits. A tiny buffer makes most shapes run in several chunks.
import assert from 'node:assert/strict'
import { after, test } from 'node:test'
import fc from 'fast-check'
import { DTYPES, type Dtype } from '../../src/api/types.js'
import { type CpuCommunicator, createCpuCommunicator } from '../../src/backends/cpu/communicator.js'
import { DTYPE_CODECS } from '../../src/dtype/codec.js'
import { SPECIAL_BITS } from '../support/adversarial.js'
import { checkAllReduce } from '../support/reference.js'
import { GRID_ALGORITHMS } from './grid.js'

const communicators = new Map<number, CpuCommunicator>()
async function communicator(ranks: number): Promise<CpuCommunicator> {
  let comm = communicators.get(ranks)
  if (!comm) {
    comm = await createCpuCommunicator({ backend: 'cpu', ranks, bufferBytes: 1024, timeoutMs: 20_000 })
    communicators.set(ranks, comm)
  }
  return comm
}
after(async () => {
  await Promise.all([...communicators.values()].map((c) => c.close()))
})

function laneBits(dtype: Dtype): fc.Arbitrary<number> {
  const codec = DTYPE_CODECS[dtype]
  return fc.oneof(
    { weight: 8, arbitrary: fc.double({ min: -100, max: 100, noNaN: true }).map((x) => codec.encodeLane(x)) },
    { weight: 1, arbitrary: fc.constantFrom(...SPECIAL_BITS[dtype]) },
    { weight: 1, arbitrary: fc.integer({ min: 0, max: dtype === 'f32' ? 0xffffffff : 0xffff }) },
  )
}

const shape = fc
  .record({
    ranks: fc.integer({ min: 1, max: 5 }),
    length: fc.integer({ min: 1, max: 700 }),
    dtype: fc.constantFrom(...DTYPES),
    algorithm: fc.constantFrom(...GRID_ALGORITHMS),
  })
  .chain((s) =>
    fc.record({
      s: fc.constant(s),
      bits: fc.array(fc.array(laneBits(s.dtype), { minLength: s.length, maxLength: s.length }), {
        minLength: s.ranks,
        maxLength: s.ranks,
      }),
    }),
  )

test('random shapes and values: reference-exact within tolerance, bitwise identical across ranks', async () => {
  await fc.assert(
    fc.asyncProperty(shape, async ({ s, bits }) => {
      const inputs = bits.map((b) => {
        if (s.dtype !== 'f32') return Uint16Array.from(b)
        const a = new Float32Array(b.length)
        new Uint32Array(a.buffer).set(b)
        return a
      })
      const comm = await communicator(s.ranks)
      const outputs = await comm.allReduce(inputs, { algorithm: s.algorithm, dtype: s.dtype })
      assert.deepEqual(checkAllReduce(s.dtype, inputs, outputs), [])
    }),
    { numRuns: 120, seed: 20260729 },
  )
})
