// One rank of test/gpu/multiprocess.test.ts (not a test file): a per-rank cuda communicator on device
// $LLCOMM_TEST_DEVICE (default 0; several processes share it through CUDA IPC), then
//   - the correctness matrix on host arrays (every algorithm offered x dtype x size), each output against the
//     float64 reference of every rank's input (inputs are regenerated from the seed, so every rank knows them all)
//     plus a digest per case so the parent can check the ranks agree bitwise;
//   - graph replay: deviceAllReduce captured once per algorithm on a fresh stream, replayed with new input data
//     each time, every replay checked;
//   - nccl: on a shared GPU it is not offered and a request for it falls back with a reason (checked).
// With LLCOMM_TEST_SCENARIO=gpu-chaos instead: test/process/chaos.ts's long run with failures planted on purpose.
// Prints one `RESULT {...}` line.
import { createHash } from 'node:crypto'
import type { AlgorithmChoice, Dtype, TensorArray } from '../../src/api/types.js'
import { DTYPE_BYTES, DTYPES } from '../../src/api/types.js'
import type { CudaProcessCommunicator } from '../../src/backends/cuda/process-communicator.js'
import { createCommunicator } from '../../src/create.js'
import { numericModel } from '../../src/dtype/tolerance.js'
import { LlcommError } from '../../src/errors.js'
import { cudaDriver, type DevicePtr } from '../../src/ffi/index.js'
import { runChaos } from '../process/chaos.js'
import { checkAllReduce } from '../support/reference.js'
import { makeInput, rng } from './gpu-harness.js'

const rank = Number(process.env.LLCOMM_RANK)
const SIZES = (process.env.LLCOMM_TEST_SIZES ?? '1,1000,65537').split(',').map(Number)
const REPLAYS = Number(process.env.LLCOMM_TEST_REPLAYS ?? 20)

function inputOf(dtype: Dtype, count: number, r: number, seed: number): TensorArray {
  return makeInput(dtype, count, seed % 2 === 0 ? 'random' : 'adversarial', r, rng(seed * 1009 + r))
}

function digest(a: TensorArray): string {
  return createHash('sha256')
    .update(new Uint8Array(a.buffer, a.byteOffset, a.byteLength))
    .digest('hex')
    .slice(0, 16)
}

async function main(): Promise<void> {
  const started = performance.now()
  const comm = (await createCommunicator({
    backend: 'cuda',
    rendezvous: 'env',
    device: Number(process.env.LLCOMM_TEST_DEVICE ?? 0),
    timeoutMs: Number(process.env.LLCOMM_TEST_TIMEOUT_MS ?? 60_000),
    rendezvousTimeoutMs: 120_000,
  })) as CudaProcessCommunicator
  const setupMs = performance.now() - started
  if (process.env.LLCOMM_TEST_SCENARIO === 'gpu-killed') return killed(comm)
  if (process.env.LLCOMM_TEST_SCENARIO === 'gpu-chaos') {
    // test/process/chaos.ts on this per-process cuda communicator: its algorithms but nccl (no signature)
    const algorithms = comm.algorithms.filter((a) => a !== 'nccl' && a !== 'nccl-symmetric')
    const result = await runChaos(comm, algorithms, {
      calls: Number(process.env.LLCOMM_TEST_CALLS ?? 80),
      seed: Number(process.env.LLCOMM_TEST_SEED ?? 7),
      maxCount: 5000,
    })
    await comm.close()
    process.stdout.write(`RESULT ${JSON.stringify({ rank, ...result })}\n`)
    return
  }
  const problems: string[] = []
  const digests: Record<string, string> = {}
  const algorithms = comm.algorithms.filter((a) => a !== 'nccl') as AlgorithmChoice[]
  let calls = 0
  for (const algorithm of algorithms) {
    for (const dtype of DTYPES) {
      for (const [k, count] of SIZES.entries()) {
        const seed = 1 + k * 7 + DTYPES.indexOf(dtype) * 101
        const inputs = Array.from({ length: comm.size }, (_, r) => inputOf(dtype, count, r, seed))
        const out = await comm.allReduce(inputs[rank], { algorithm, dtype })
        calls++
        if (algorithm !== 'auto' && out.info.algorithm !== algorithm)
          problems.push(`${algorithm} ran ${out.info.algorithm}`)
        // Checked under the numeric model of the algorithm that ran (twoshot-atomic's red.add.f32 flushes
        // subnormals: src/dtype/tolerance.ts).
        const model = numericModel(out.info.algorithm, dtype)
        for (const p of checkAllReduce(
          dtype,
          inputs,
          inputs.map(() => out),
          5,
          model,
        ))
          problems.push(`${algorithm} ${dtype} ${count}: ${p}`)
        digests[`${algorithm}/${dtype}/${count}`] = digest(out)
      }
    }
  }
  // deterministic: true per call: every algorithm gives oneshot-barrier's bits; ring and twoshot-atomic are replaced
  // by it, with the reason.
  for (const dtype of ['f32', 'bf16'] as const) {
    const inputs = Array.from({ length: comm.size }, (_, r) => inputOf(dtype, 4099, r, 91))
    const reference = digest(await comm.allReduce(inputs[rank], { algorithm: 'oneshot-barrier', dtype }))
    for (const algorithm of algorithms) {
      const out = await comm.allReduce(inputs[rank], { algorithm, dtype, deterministic: true })
      calls++
      if (digest(out) !== reference)
        problems.push(`deterministic ${algorithm} ${dtype}: bits differ from oneshot-barrier`)
      if ((algorithm === 'ring' || algorithm === 'twoshot-atomic') && out.info.algorithm !== 'oneshot-barrier')
        problems.push(`deterministic ${algorithm} ${dtype} ran ${out.info.algorithm}`)
    }
  }
  // nccl on a GPU shared by the ranks: not offered; a request falls back with a reason.
  let ncclFallback: string | undefined
  if (!comm.algorithms.includes('nccl')) {
    const out = await comm.allReduce(new Float32Array(64).fill(1), { algorithm: 'nccl' })
    ncclFallback = out.info.fallbackReason
    if (!ncclFallback) problems.push('nccl request did not report a fallback')
    if (!out.every((x) => x === comm.size)) problems.push('nccl fallback gave wrong data')
  }
  // Graph replay per process: capture deviceAllReduce once, replay with fresh inputs.
  const d = cudaDriver()
  const count = 4096
  const replayAlgorithms = algorithms.filter((a) => a !== 'auto')
  let replays = 0
  for (const algorithm of replayAlgorithms) {
    const dtype: Dtype = 'f32'
    const bytes = count * DTYPE_BYTES[dtype]
    const input = d.memAlloc(bytes) as DevicePtr
    const output = d.memAlloc(bytes) as DevicePtr
    const stream = d.streamCreate()
    try {
      // One eager call first (collective, checked like the replays): modules and launch configs are made outside
      // the capture, where the driver allows module loads; the capture then only records the launches.
      const warm = Array.from({ length: comm.size }, (_, r) => inputOf(dtype, count, r, 4999 * 2))
      d.copyHtoD(input, warm[rank], bytes)
      d.contextSynchronize()
      comm.deviceAllReduce({ input, output, count, dtype, algorithm, stream })
      d.streamSynchronize(stream)
      comm.checkDeviceError()
      d.beginCapture(stream)
      comm.deviceAllReduce({ input, output, count, dtype, algorithm, stream })
      const graph = d.endCapture(stream)
      const exec = d.graphInstantiate(graph)
      try {
        for (let it = 0; it < REPLAYS; it++) {
          const seed = 5000 + it
          const inputs = Array.from({ length: comm.size }, (_, r) => inputOf(dtype, count, r, seed * 2))
          d.copyHtoD(input, inputs[rank], bytes)
          d.contextSynchronize()
          d.graphLaunch(exec, stream)
          d.streamSynchronize(stream)
          comm.checkDeviceError()
          const out = new Float32Array(count)
          d.copyDtoH(out, output, bytes)
          replays++
          for (const p of checkAllReduce(
            dtype,
            inputs,
            inputs.map(() => out),
          ))
            problems.push(`graph ${algorithm} replay ${it}: ${p}`)
          digests[`graph/${algorithm}/${it}`] = digest(out)
        }
      } finally {
        d.graphExecDestroy(exec)
        d.graphDestroy(graph)
      }
    } finally {
      d.streamDestroy(stream)
      d.memFree(input)
      d.memFree(output)
    }
  }
  await comm.close()
  process.stdout.write(
    `RESULT ${JSON.stringify({ rank, setupMs, calls, replays, problems: problems.slice(0, 20), digests, algorithms: comm.algorithms, ncclFallback, totalMs: performance.now() - started })}\n`,
  )
}

/**
 * The victim (LLCOMM_TEST_VICTIM) makes one call with the others, then SIGKILLs itself; every other rank keeps
 * calling and must get PEER_FAILED (or TIMEOUT naming the victim) within the deadline, never data.
 */
async function killed(comm: CudaProcessCommunicator): Promise<void> {
  const victim = Number(process.env.LLCOMM_TEST_VICTIM ?? 1)
  const first = await comm.allReduce(new Float32Array(1000).fill(1), { algorithm: 'oneshot-ll' })
  if (comm.rank === victim) process.kill(process.pid, 'SIGKILL')
  const started = performance.now()
  let calls = 0
  let error: Record<string, unknown> | undefined
  try {
    for (; calls < 100_000; calls++) await comm.allReduce(new Float32Array(1000).fill(1), { algorithm: 'oneshot-ll' })
  } catch (e) {
    error = e instanceof LlcommError ? { code: e.code, message: e.message, details: e.details } : { message: String(e) }
  }
  process.stdout.write(
    `RESULT ${JSON.stringify({ rank, firstOk: first.every((x) => x === comm.size), callsAfterKill: calls, failure: error, afterMs: performance.now() - started })}\n`,
  )
  await comm.destroy()
}

main().catch((e: unknown) => {
  const error =
    e instanceof LlcommError ? { code: e.code, message: e.message, details: e.details } : { message: String(e) }
  process.stdout.write(`RESULT ${JSON.stringify({ rank, error })}\n`)
  process.exitCode = 1
})
