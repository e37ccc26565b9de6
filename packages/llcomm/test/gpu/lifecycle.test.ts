// The cuda communicator's lifecycle (issue 19 items 1, 2, 5, 9): driver-view calls from many async tasks queue
// FIFO and are all right; recover() after a device TIMEOUT brings every rank back (error word cleared, buffers
// re-armed, epochs 0 on every rank) and the next calls are right; inputs are read at submission; channel epochs
// started just below 2^32 cross the wrap with every output right. Run on the GPU machine:
//   LLCOMM_TEST_BACKEND=cuda node --test dist/test/gpu/lifecycle.test.js
import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { AlgorithmName } from '../../src/api/types.js'
import { createCudaCommunicator } from '../../src/backends/cuda/communicator.js'
import { cudaDriver } from '../../src/ffi/index.js'
import { ON_GPU, recordCase } from './gpu-harness.js'

/** Small integers in f32: every sum is exact, whatever the order, so outputs compare with ===. */
function integerInputs(ranks: number, count: number, seed: number): Float32Array[] {
  return Array.from({ length: ranks }, (_, r) =>
    Float32Array.from({ length: count }, (_, i) => ((i * 7 + r * 3 + seed) % 17) - 8),
  )
}

function expectedSum(inputs: Float32Array[], i: number): number {
  let s = 0
  for (const x of inputs) s += x[i]
  return s
}

function wrongElements(inputs: Float32Array[], outputs: Float32Array[]): number {
  let wrong = 0
  for (const o of outputs) for (let i = 0; i < o.length; i++) if (o[i] !== expectedSum(inputs, i)) wrong++
  return wrong
}

test('12 driver-view calls started without awaiting each other: all right (the calls queue FIFO)', {
  skip: !ON_GPU,
}, async () => {
  const ranks = 4
  const comm = await createCudaCommunicator({ backend: 'cuda', devices: new Array(ranks).fill(0), timeoutMs: 5000 })
  try {
    const algorithms: AlgorithmName[] = ['oneshot-ll', 'twoshot-sentinel']
    // Growing sizes: the staging pair is reallocated between calls, never under one in flight.
    const calls = Array.from({ length: 12 }, (_, k) => {
      const inputs = integerInputs(ranks, 1000 + k * 20_000, k)
      return { inputs, pending: comm.allReduce(inputs, { algorithm: algorithms[k % 2], fallback: false }) }
    })
    let wrong = 0
    for (const [k, c] of calls.entries()) {
      const out = await c.pending
      const w = wrongElements(c.inputs, out)
      wrong += w
      assert.equal(w, 0, `call ${k} (${algorithms[k % 2]}, ${c.inputs[0].length} elements)`)
    }
    recordCase({ name: 'lifecycle/concurrent-driver-calls', passed: wrong === 0, calls: 12, wrong })
  } finally {
    await comm.close()
  }
})

for (const algorithm of ['oneshot-ll', 'oneshot-sentinel', 'twoshot-sentinel', 'ring'] as const) {
  test(`${algorithm}: after a device TIMEOUT, recover() and the next calls are right`, { skip: !ON_GPU }, async () => {
    const comm = await createCudaCommunicator({ backend: 'cuda', devices: [0, 0, 0], timeoutMs: 200 })
    const d = cudaDriver()
    try {
      const x = integerInputs(3, 5000, 1)
      assert.equal(wrongElements(x, await comm.allReduce(x, { algorithm, fallback: false })), 0)
      // Rank 1's channel epochs jump ahead (scratch offset 0): its flags are never the ones its peers wait for.
      d.memsetD32(comm.deviceBuffersOf(1).scratch, 0x5555, 64)
      await assert.rejects(
        comm.allReduce(x, { algorithm, fallback: false }),
        (e: { code?: string }) => e.code === 'TIMEOUT',
      )
      await assert.rejects(comm.allReduce(x, { algorithm }), (e: { code?: string }) => e.code === 'TIMEOUT', 'poisoned')
      await comm.recover()
      let wrong = 0
      for (let k = 0; k < 20; k++) {
        const y = integerInputs(3, 100 + k * 997, k)
        wrong += wrongElements(y, await comm.allReduce(y, { algorithm, fallback: false }))
      }
      assert.equal(wrong, 0)
      recordCase({ name: `lifecycle/recover-after-timeout/${algorithm}`, passed: true, calls: 20, wrong })
    } finally {
      await comm.close()
    }
  })
}

test('inputs are read at submission: a change after allReduce() does not reach the result', {
  skip: !ON_GPU,
}, async () => {
  const comm = await createCudaCommunicator({ backend: 'cuda', devices: [0, 0], timeoutMs: 5000 })
  try {
    const first = comm.allReduce(integerInputs(2, 1 << 20, 0))
    const x = integerInputs(2, 1000, 5)
    const expected = x.map((a) => a.slice())
    const pending = comm.allReduce(x)
    for (const a of x) a.fill(1000)
    await first
    assert.equal(wrongElements(expected, await pending), 0)
    recordCase({ name: 'lifecycle/inputs-read-at-submission', passed: true })
  } finally {
    await comm.close()
  }
})

test('channel epochs started just below 2^32 cross the wrap: 400 calls of every algorithm, all right', {
  skip: !ON_GPU,
}, async () => {
  const comm = await createCudaCommunicator({ backend: 'cuda', devices: [0, 0, 0, 0], timeoutMs: 2000 })
  try {
    const algorithms: AlgorithmName[] = [
      'oneshot-ll',
      'oneshot-sentinel',
      'twoshot-sentinel',
      'twoshot-atomic',
      'oneshot-barrier',
      'ring',
    ]
    comm.testHooks.setChannelEpochs(2 ** 32 - 1 - 200)
    let wrong = 0
    const failures: string[] = []
    for (let k = 0; k < 400; k++) {
      const algorithm = algorithms[k % algorithms.length]
      const x = integerInputs(4, 1 + ((k * 7919) % 70_000), k)
      try {
        const w = wrongElements(x, await comm.allReduce(x, { algorithm, fallback: false }))
        if (w > 0) failures.push(`call ${k} ${algorithm} ${x[0].length}: ${w} wrong`)
        wrong += w
      } catch (e) {
        failures.push(`call ${k} ${algorithm} ${x[0].length}: ${(e as Error).message}`)
        break
      }
    }
    recordCase({
      name: 'lifecycle/epoch-wrap',
      passed: failures.length === 0,
      calls: 400,
      wrong,
      failures: failures.slice(0, 10),
    })
    assert.deepEqual(failures, [])
  } finally {
    await comm.close()
  }
})

test('communicators dropped without close() give their device memory back once collected', {
  skip: !ON_GPU,
}, async () => {
  const { spawnSync } = await import('node:child_process')
  const { mkdtempSync, writeFileSync } = await import('node:fs')
  const { tmpdir } = await import('node:os')
  const { join } = await import('node:path')
  const { fileURLToPath } = await import('node:url')
  const communicatorJs = fileURLToPath(new URL('../../src/backends/cuda/communicator.js', import.meta.url))
  const ffiJs = fileURLToPath(new URL('../../src/ffi/index.js', import.meta.url))
  const dir = mkdtempSync(join(tmpdir(), 'llcomm-dropped-'))
  const file = join(dir, 'child.mjs')
  // The child holds device 0's primary context itself, so that cuMemGetInfo has a context between communicators.
  writeFileSync(
    file,
    `import { createCudaCommunicator } from ${JSON.stringify(communicatorJs)}
     import { cudaDriver } from ${JSON.stringify(ffiJs)}
     const d = cudaDriver()
     const ctx = d.primaryContextRetain(d.device(0))
     const freeMiB = () => { d.setCurrent(ctx); return d.memGetInfo().freeBytes / 2 ** 20 }
     const make = async () => {
       const comm = await createCudaCommunicator({ backend: 'cuda', devices: [0, 0], bufferBytes: 64 << 20 })
       const out = await comm.allReduce([Float32Array.of(1, 2), Float32Array.of(3, 4)])
       if (out[1][1] !== 6) throw new Error('wrong sum ' + out[1][1])
     }
     const collect = async () => { for (let i = 0; i < 5; i++) { globalThis.gc(); await new Promise((r) => setTimeout(r, 50)) } }
     await make()
     await collect()
     const before = freeMiB()
     for (let i = 0; i < 8; i++) await make()
     const held = before - freeMiB()
     let after = freeMiB()
     for (let i = 0; i < 40 && before - after > 64; i++) { await collect(); after = freeMiB() }
     console.log('RESULT ' + JSON.stringify({ beforeMiB: before, heldMiB: held, leftMiB: before - after }))`,
  )
  const r = spawnSync(process.execPath, ['--expose-gc', file], { encoding: 'utf8', timeout: 120_000 })
  const line = r.stdout.split('\n').find((l) => l.startsWith('RESULT '))
  assert.ok(line, `no result (status ${r.status}): ${r.stderr}`)
  const result = JSON.parse(line.slice('RESULT '.length)) as { beforeMiB: number; heldMiB: number; leftMiB: number }
  // held: what 8 dropped communicators keep before they are collected (each holds 2 receive buffers of at least
  // 64 MiB), so the check below can fail; left: what is still gone after collection.
  const passed = result.heldMiB > 512 && result.leftMiB <= 64
  recordCase({ name: 'lifecycle/dropped-communicators-free-device-memory', passed, ...result })
  assert.ok(result.heldMiB > 512, `the dropped communicators held only ${result.heldMiB} MiB before collection`)
  assert.ok(
    result.leftMiB <= 64,
    `${result.leftMiB} MiB still allocated after the dropped communicators were collected`,
  )
})
