// Issue 18 on the cuda backend, virtual ranks on device 0 (skipped without LLCOMM_TEST_BACKEND=cuda):
// 1. mismatched calls: ranks 0..N-2 launch one call and rank N-1 another (two grids on two streams, launched apart
//    through the launcher's launchRanks), and the error word must say MISMATCH naming both signatures;
// 2. deterministic: true: every algorithm x f32/bf16/f16 x 2/3/5/8 ranks x sampled lengths 1..300,001 gives
//    oneshot-barrier's bits, and the CPU backend's bits (NaNs compared as NaN: their payload is not guaranteed);
// 3. f32 accumulation with adversarial small terms, every algorithm: the exact sum rounded once (ring and
//    twoshot-atomic too, since issue 18 item 4: f32 partials and f32 lines by default; their 16-bit option is
//    test/gpu/atomic-lines.test.ts's).
import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { AlgorithmName, Dtype, LlProtocol, TensorArray } from '../../src/api/types.js'
import { DTYPE_BYTES } from '../../src/api/types.js'
import { createCpuCommunicator } from '../../src/backends/cpu/communicator.js'
import type { AllReduceLauncher } from '../../src/backends/cuda/allreduce-launcher.js'
import { type CudaCommunicator, createCudaCommunicator } from '../../src/backends/cuda/communicator.js'
import { cudaDriver, type DevicePtr } from '../../src/ffi/index.js'
import { accumulationInput, expectedAccumulation } from '../support/accumulation.js'
import { makeInput, ON_GPU, REDUCED, recordCase, rng } from './gpu-harness.js'

const KERNEL_ALGORITHMS: readonly AlgorithmName[] = [
  'oneshot-ll',
  'oneshot-sentinel',
  'twoshot-sentinel',
  'twoshot-atomic',
  'oneshot-barrier',
  'ring',
]
const DTYPES: readonly Dtype[] = ['f32', 'bf16', 'f16']

/** The launcher inside a communicator (private there; the test launches ranks apart through it). */
function launcherOf(comm: CudaCommunicator): AllReduceLauncher {
  return (comm as unknown as { launcher: AllReduceLauncher }).launcher
}

interface MismatchCase {
  ranks: number
  main: { algorithm: AlgorithmName; dtype: Dtype; count: number; protocol?: LlProtocol }
  odd: { algorithm: AlgorithmName; dtype: Dtype; count: number; protocol?: LlProtocol }
}

const MISMATCHES: MismatchCase[] = [
  {
    ranks: 2,
    main: { algorithm: 'oneshot-ll', dtype: 'f32', count: 1000, protocol: 'll16' },
    odd: { algorithm: 'oneshot-ll', dtype: 'f32', count: 1001, protocol: 'll16' },
  },
  {
    ranks: 2,
    main: { algorithm: 'oneshot-sentinel', dtype: 'f32', count: 1000 },
    odd: { algorithm: 'oneshot-sentinel', dtype: 'bf16', count: 2000 },
  },
  {
    ranks: 8,
    main: { algorithm: 'oneshot-sentinel', dtype: 'bf16', count: 4096 },
    odd: { algorithm: 'twoshot-sentinel', dtype: 'bf16', count: 4096 },
  },
  {
    ranks: 8,
    main: { algorithm: 'oneshot-ll', dtype: 'bf16', count: 4, protocol: 'll8' },
    odd: { algorithm: 'ring', dtype: 'bf16', count: 4 },
  },
  {
    ranks: 8,
    main: { algorithm: 'oneshot-barrier', dtype: 'f32', count: 64 },
    odd: { algorithm: 'twoshot-atomic', dtype: 'f32', count: 64 },
  },
  {
    ranks: 8,
    main: { algorithm: 'oneshot-ll', dtype: 'f32', count: 2, protocol: 'll16' },
    odd: { algorithm: 'oneshot-ll', dtype: 'f32', count: 2, protocol: 'll8' },
  },
  // twoshot-sentinel's spread path (parts of 32-33 slots at 16 ranks): another count, and a kernel that writes
  // nothing into the sentinel lanes (its reduce-scatter waits end by their armed look, or the odd rank's check).
  {
    ranks: 16,
    main: { algorithm: 'twoshot-sentinel', dtype: 'bf16', count: 4096 },
    odd: { algorithm: 'twoshot-sentinel', dtype: 'bf16', count: 4104 },
  },
  {
    ranks: 16,
    main: { algorithm: 'twoshot-sentinel', dtype: 'f16', count: 4096 },
    odd: { algorithm: 'oneshot-ll', dtype: 'f16', count: 4096, protocol: 'll8' },
  },
]

test('cuda: a mismatched call ends every launch with MISMATCH naming both ranks and signatures', {
  skip: !ON_GPU,
}, async () => {
  const d = cudaDriver()
  const failures: string[] = []
  for (const c of MISMATCHES) {
    const name = `signature/mismatch/${c.ranks}r/${c.main.algorithm}-${c.main.dtype}-${c.main.count}-vs-${c.odd.algorithm}-${c.odd.dtype}-${c.odd.count}`
    const comm = await createCudaCommunicator({ backend: 'cuda', devices: new Array(c.ranks).fill(0), timeoutMs: 3000 })
    const free: DevicePtr[] = []
    const s1 = d.streamCreate()
    const s2 = d.streamCreate()
    try {
      const bytes = Math.max(c.main.count * DTYPE_BYTES[c.main.dtype], c.odd.count * DTYPE_BYTES[c.odd.dtype])
      const alloc = Math.ceil(bytes / 256) * 256
      const inputs: DevicePtr[] = []
      const outputs: DevicePtr[] = []
      for (let r = 0; r < c.ranks; r++) {
        const i = d.memAlloc(alloc)
        const o = d.memAlloc(alloc)
        d.memsetD32(i, 0x3f800000, alloc / 4)
        free.push(i, o)
        inputs.push(i)
        outputs.push(o)
      }
      const launcher = launcherOf(comm)
      const odd = c.ranks - 1
      const mainRanks = Array.from({ length: odd }, (_, r) => r)
      const prepare = (call: MismatchCase['main'], ranks: number[], stream: typeof s1) =>
        launcher.prepare({
          inputs,
          outputs,
          count: call.count,
          dtype: call.dtype,
          op: 'sum',
          algorithm: call.algorithm,
          protocol: call.protocol,
          pdl: false,
          streams: [stream],
          launchRanks: ranks,
          cooperative: false,
        })
      const a = prepare(c.main, mainRanks, s1)
      const b = prepare(c.odd, [odd], s2)
      const t0 = performance.now()
      launcher.issue(a, [s1])
      launcher.issue(b, [s2])
      d.streamSynchronize(s1)
      d.streamSynchronize(s2)
      const ms = performance.now() - t0
      let error: { code?: string; message: string; details?: Record<string, unknown> } | undefined
      try {
        comm.checkDeviceError()
      } catch (e) {
        error = e as typeof error
      }
      const details = error?.details ?? {}
      const pairNamesOdd = details.rank === odd || details.peer === odd
      const oddSide = String(details.rank === odd ? details.mine : details.theirs)
      const mainSide = String(details.rank === odd ? details.theirs : details.mine)
      const passed =
        error?.code === 'MISMATCH' &&
        pairNamesOdd &&
        mainSide.startsWith(c.main.algorithm) &&
        oddSide.startsWith(c.odd.algorithm) &&
        ms < 3000
      recordCase({ name, passed, code: error?.code, message: error?.message, ms })
      if (!passed) failures.push(`${name}: ${error?.code} ${error?.message} after ${ms.toFixed(0)} ms`)
    } finally {
      for (const p of free) d.memFree(p)
      await comm.close()
    }
  }
  assert.deepEqual(failures, [])
})

/** Raw bits of an output (f32 as u32), NaN as one value: the guarantee covers every non-NaN bit pattern. */
function bitsOf(o: TensorArray, dtype: Dtype): number[] {
  if (dtype === 'f32') {
    const u = new Uint32Array(o.buffer, o.byteOffset, o.length)
    return Array.from(u, (b) => ((b & 0x7fffffff) > 0x7f800000 ? -1 : b))
  }
  const nan = dtype === 'bf16' ? (b: number) => (b & 0x7fff) > 0x7f80 : (b: number) => (b & 0x7fff) > 0x7c00
  return Array.from(o as Uint16Array, (b) => (nan(b) ? -1 : b))
}

function firstDiff(a: number[], b: number[]): number {
  if (a.length !== b.length) return Math.min(a.length, b.length)
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return i
  return -1
}

test('cuda: deterministic: true gives oneshot-barrier bits for every algorithm, and the CPU backend bits', {
  skip: !ON_GPU,
}, async () => {
  const failures: string[] = []
  const lengths = REDUCED ? [1, 33, 4099] : [1, 7, 33, 4099, 65_537, 300_001]
  let seed = 18_000
  for (const ranks of REDUCED ? [2, 8] : [2, 3, 5, 8]) {
    const cuda = await createCudaCommunicator({
      backend: 'cuda',
      devices: new Array(ranks).fill(0),
      bufferBytes: 64 * 1024,
      deterministic: true,
    })
    const cpu = await createCpuCommunicator({ backend: 'cpu', ranks, deterministic: true })
    const algorithms = cuda.algorithms.filter((a): a is AlgorithmName => a !== 'auto')
    try {
      for (const dtype of DTYPES) {
        for (const count of lengths) {
          for (const pattern of ['random', 'adversarial'] as const) {
            const random = rng(seed++)
            const inputs = Array.from({ length: ranks }, (_, r) => makeInput(dtype, count, pattern, r, random))
            const reference = await cuda.allReduce(inputs, { algorithm: 'oneshot-barrier', dtype })
            const refBits = bitsOf(reference[0], dtype)
            const cpuOut = await cpu.allReduce(inputs, { algorithm: 'oneshot-barrier', dtype })
            const cpuAt = firstDiff(bitsOf(cpuOut[0], dtype), refBits)
            const cpuName = `signature/deterministic/cpu-vs-cuda/${ranks}r/${dtype}/n=${count}/${pattern}`
            recordCase({ name: cpuName, passed: cpuAt < 0, firstDiff: cpuAt })
            if (cpuAt >= 0) failures.push(`${cpuName}: first difference at ${cpuAt}`)
            for (const algorithm of [...algorithms, 'auto' as const]) {
              const name = `signature/deterministic/${ranks}r/${algorithm}/${dtype}/n=${count}/${pattern}`
              const out = await cuda.allReduce(inputs, { algorithm, dtype })
              let at = -1
              for (const o of out) {
                at = firstDiff(bitsOf(o, dtype), refBits)
                if (at >= 0) break
              }
              recordCase({ name, passed: at < 0, ran: out.info.algorithm, fallbackReason: out.info.fallbackReason })
              if (at >= 0) failures.push(`${name} (ran ${out.info.algorithm}): first difference at ${at}`)
            }
          }
        }
      }
    } finally {
      await cuda.close()
      await cpu.close()
    }
  }
  assert.deepEqual(failures, [])
})

test('cuda: f32 accumulation with adversarial small terms, every algorithm (the exact sum rounded once)', {
  skip: !ON_GPU,
}, async () => {
  const failures: string[] = []
  for (const ranks of REDUCED ? [3] : [3, 8, 16]) {
    const comm = await createCudaCommunicator({ backend: 'cuda', devices: new Array(ranks).fill(0) })
    try {
      for (const dtype of DTYPES) {
        for (const algorithm of KERNEL_ALGORITHMS) {
          const count = 1001
          const seed = ranks + KERNEL_ALGORITHMS.indexOf(algorithm)
          const inputs = Array.from({ length: ranks }, (_, r) => accumulationInput(dtype, count, seed, r))
          const want = expectedAccumulation(dtype, count, seed, ranks)
          const out = await comm.allReduce(inputs, { algorithm, dtype, fallback: false })
          const got = dtype === 'f32' ? Array.from(new Uint32Array(out[0].buffer, 0, count)) : Array.from(out[0])
          let wrong = 0
          for (let i = 0; i < count; i++) if (got[i] !== want[i]) wrong++
          const name = `signature/f32-accumulation/${ranks}r/${algorithm}/${dtype}`
          recordCase({ name, passed: wrong === 0, wrong })
          if (wrong > 0) failures.push(`${name}: ${wrong} of ${count} wrong`)
        }
      }
    } finally {
      await comm.close()
    }
  }
  assert.deepEqual(failures, [])
})
