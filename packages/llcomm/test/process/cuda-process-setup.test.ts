// The cuda per-rank communicator's setup path in CI (no GPU here): every rank reports its failure through the
// rendezvous, so all ranks reject promptly with the failing rank's own code (LIBRARY_NOT_FOUND without libcuda)
// instead of waiting out a deadline, and nothing is left listening. On a GPU machine test/gpu/multiprocess.test.ts
// covers the working path.
import assert from 'node:assert/strict'
import { createConnection } from 'node:net'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { createCommunicator } from '../../src/create.js'
import { isLlcommError } from '../../src/errors.js'
import { findFreePort } from '../../src/rendezvous/free-port.js'
import { runRanks } from './spawn-ranks.js'

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

// Settings read from each rank's environment that every rank's kernels must share: a rank whose value differs from
// rank 0's is refused by the rendezvous on every rank at once (INVALID_ARGUMENT naming both configs), before any
// device is opened, so this runs the same with or without a GPU. Without the check, a rank with LLCOMM_SIG_BLOCK=0
// would launch no signature block and its peers would wait for its packets until their deadline.
for (const [name, value] of [
  ['LLCOMM_SIG_BLOCK', '0'],
  ['LLCOMM_SIG_DEFERRED', '1'],
  ['LLCOMM_TWOSHOT_ALLGATHER', 'pull'],
] as const) {
  test(`cuda per process: ${name}=${value} on one rank only is INVALID_ARGUMENT on every rank at the join`, async () => {
    const started = performance.now()
    const runs = await runRanks({
      worldSize: 3,
      scenario: 'join',
      script: fileURLToPath(new URL('./cuda-join-main.js', import.meta.url)),
      rankEnv: (r) => (r === 1 ? { [name]: value } : {}),
      env: { LLCOMM_SIG_BLOCK: '', LLCOMM_SIG_DEFERRED: '', LLCOMM_TWOSHOT_ALLGATHER: '' },
      deadlineMs: 30_000,
    })
    for (const r of runs) {
      assert.ok(r.result, `rank ${r.rank} printed no result (code ${r.code}): ${r.stderr}`)
      const e = r.result.joinError as { code: string; message: string } | undefined
      assert.equal(e?.code, 'INVALID_ARGUMENT', `rank ${r.rank}: ${JSON.stringify(r.result)}`)
      if (r.rank === 1) assert.match(e.message, /options differ from rank 0's/)
    }
    assert.ok(performance.now() - started < 20_000, 'long before the 15 s deadline of a call')
  })
}

test('cuda per process: algorithm resolution is the shared resolver (auto, nccl fallback, fallback off, determinism)', async () => {
  const { CudaProcessCommunicator } = await import('../../src/backends/cuda/process-communicator.js')
  const { KERNEL_VARIANTS } = await import('../../src/backends/cuda/kernel-table.js')
  const { loadTuningTable } = await import('../../src/algorithms/auto.js')
  // Only the state resolution reads: no rendezvous is joined and no GPU is touched.
  const rv = { rank: 0, worldSize: 2 } as unknown as ConstructorParameters<typeof CudaProcessCommunicator>[0]
  const comm = new CudaProcessCommunicator(rv, {
    device: 0,
    timeoutMs: 1000,
    bufferBytes: 1 << 20,
    table: loadTuningTable(undefined),
  })
  Object.assign(comm, {
    algorithms: [...new Set(KERNEL_VARIANTS.map((v) => v.algorithm)), 'auto'],
    ncclReason: 'NCCL needs one rank per GPU (ranks share a device)',
  })
  assert.notEqual(comm.resolveAlgorithm('auto', 'bf16', 'sum', 8192).algorithm, 'nccl')
  assert.deepEqual(comm.resolveAlgorithm('twoshot-atomic', 'f32', 'sum', 4096), { algorithm: 'twoshot-atomic' })
  const nccl = comm.resolveAlgorithm('nccl', 'f32', 'sum', 256)
  assert.equal(nccl.algorithm, 'ring')
  assert.match(nccl.fallbackReason ?? '', /nccl is not usable per process here: NCCL needs one rank per GPU/)
  assert.throws(() => comm.resolveAlgorithm('nccl', 'f32', 'sum', 256, false), { code: 'UNSUPPORTED_ALGORITHM' })
  assert.throws(() => comm.resolveAlgorithm('nccl-x' as never, 'f32', 'sum', 256), { code: 'UNSUPPORTED_ALGORITHM' })
  const ring = comm.resolveAlgorithm('ring', 'bf16', 'sum', 4096, true, true)
  assert.equal(ring.algorithm, 'oneshot-barrier')
  assert.match(ring.fallbackReason ?? '', /deterministic/)
  assert.throws(() => comm.resolveAlgorithm('ring', 'bf16', 'sum', 4096, false, true), {
    code: 'UNSUPPORTED_ALGORITHM',
  })
  assert.throws(() => comm.resolveAlgorithm('auto', 'f64' as never, 'sum', 8), { code: 'UNSUPPORTED_DTYPE' })
})
