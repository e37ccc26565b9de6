// The cuda per-rank communicator's setup path in CI (no GPU here): every rank reports its failure through the
// rendezvous, so all ranks reject promptly with the failing rank's own code (LIBRARY_NOT_FOUND without libcuda)
// instead of waiting out a deadline, and nothing is left listening. On a GPU machine test/gpu/multiprocess.test.ts
// covers the working path.
import assert from 'node:assert/strict'
import { createConnection } from 'node:net'
import { test } from 'node:test'
import { createCommunicator } from '../../src/create.js'
import { isLlcommError } from '../../src/errors.js'
import { findFreePort } from '../../src/rendezvous/free-port.js'

const ON_GPU = process.env.LLCOMM_TEST_BACKEND === 'cuda'

test('cuda per process without a usable GPU: every rank rejects at once with the same typed error', {
  skip: ON_GPU,
}, async () => {
  const port = await findFreePort()
  const started = performance.now()
  const results = await Promise.allSettled(
    [0, 1, 2].map((rank) =>
      createCommunicator({
        backend: 'cuda',
        rank,
        worldSize: 3,
        rendezvous: `tcp://127.0.0.1:${port}`,
        timeoutMs: 20_000,
      }),
    ),
  )
  const codes = results.map((r) => (r.status === 'rejected' && isLlcommError(r.reason) ? r.reason.code : r.status))
  assert.equal(new Set(codes).size, 1, `one code on every rank: ${codes.join(', ')}`)
  assert.ok(['LIBRARY_NOT_FOUND', 'NO_DEVICE', 'CUDA_ERROR', 'NVRTC_ERROR'].includes(codes[0]), codes[0])
  assert.ok(performance.now() - started < 10_000, 'long before the 20 s deadline')
  const listening = await new Promise<boolean>((resolve) => {
    const s = createConnection({ host: '127.0.0.1', port })
    s.once('connect', () => {
      s.destroy()
      resolve(true)
    })
    s.once('error', () => resolve(false))
  })
  assert.equal(listening, false)
})
