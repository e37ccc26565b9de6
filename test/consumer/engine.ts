// A consumer of the packed llcomm, type-checked by test/package.test.ts with strict tsc, no @types/node and
// skipLibCheck off: every public name an inference engine uses, the CPU path and the GPU path.
import {
  type AllReduceOutputs,
  type CpuCommunicator,
  type CudaCommunicator,
  type CudaProcessCommunicatorApi,
  type CuStream,
  createCommunicator,
  cudaStream,
  type DeviceAllReduceArgs,
  type DeviceAllReduceInfo,
  type DevicePtr,
  devicePtr,
  type FusedDeviceInfo,
  isLlcommError,
  LlcommError,
  type LlcommErrorCode,
  type PreparedDeviceAllReduce,
  type ProcessCommunicator,
  type ProcessDeviceAllReduceManyRequest,
  type ProcessDeviceAllReduceRmsNormRequest,
  type RankAllReduceOutput,
} from 'llcomm'

export async function cpuPath(): Promise<Float32Array> {
  const comm: CpuCommunicator = await createCommunicator({ backend: 'cpu', ranks: 2 })
  try {
    const out: AllReduceOutputs<Float32Array> = await comm.allReduce([new Float32Array(4), new Float32Array(4)])
    return out[0]
  } finally {
    await comm.close()
  }
}

/** The shape of an engine's tensor-parallel group: sum each GPU's buffer in place on that GPU's current stream. */
export class TensorParallelGroup {
  private constructor(private readonly comm: CudaCommunicator) {}

  static async open(devices: number[]): Promise<TensorParallelGroup> {
    return new TensorParallelGroup(await createCommunicator({ backend: 'cuda', devices }))
  }

  allReduceSum(
    buffers: readonly (bigint | number)[],
    count: number,
    dtype: 'f32' | 'f16' | 'bf16',
    streams: readonly bigint[],
  ): DeviceAllReduceInfo {
    const ptrs: DevicePtr[] = buffers.map((b) => devicePtr(b))
    const onStreams: CuStream[] = streams.map((s) => cudaStream(s))
    const args: DeviceAllReduceArgs = {
      inputs: ptrs,
      outputs: ptrs,
      count,
      dtype,
      op: 'sum',
      algorithm: 'auto',
      fallback: 'nccl',
      streams: onStreams,
    }
    const served = this.comm.canServe({ count, dtype, op: 'sum' })
    if (!served.ok) throw new Error(served.reason)
    return this.comm.deviceAllReduce(args)
  }

  prepare(args: DeviceAllReduceArgs): PreparedDeviceAllReduce {
    const prepared = this.comm.prepareDeviceAllReduce(args)
    prepared.issue()
    prepared.issue(args.streams)
    return prepared
  }

  async roundTrip(rank: number, data: Uint16Array): Promise<Uint16Array> {
    const ptr: DevicePtr = this.comm.allocate(rank, data.byteLength)
    const stream: CuStream = this.comm.createStream(rank)
    try {
      this.comm.upload(ptr, data, stream)
      const back = new Uint16Array(data.length)
      this.comm.download(ptr, back, stream)
      await this.comm.synchronize(stream)
      this.comm.checkDeviceError()
      return back
    } finally {
      this.comm.free(ptr)
    }
  }

  async close(): Promise<void> {
    await this.comm.close()
  }
}

export function codeOf(e: unknown): LlcommErrorCode | undefined {
  if (isLlcommError(e)) return e.code
  if (e instanceof LlcommError) return e.code
  return undefined
}

/** This process's rank of a per-process cuda communicator (rendezvous from the environment). */
async function openProcessCommunicator(rank: number, worldSize: number): Promise<CudaProcessCommunicatorApi> {
  return (await createCommunicator({
    backend: 'cuda',
    rendezvous: 'env',
    rank,
    worldSize,
  })) as CudaProcessCommunicatorApi
}

/** One process per GPU: this rank's fused AllReduce + residual add + RMSNorm on its current stream. */
export async function perProcessFusedStep(
  rank: number,
  worldSize: number,
  pointers: { x: bigint; residual: bigint; out: bigint; weight: bigint },
  stream: bigint,
): Promise<FusedDeviceInfo> {
  const comm = await openProcessCommunicator(rank, worldSize)
  try {
    const request: ProcessDeviceAllReduceRmsNormRequest = {
      input: pointers.x,
      residual: pointers.residual,
      output: pointers.out,
      weight: pointers.weight,
      rows: 1,
      hidden: 4096,
      eps: 1e-5,
      dtype: 'bf16',
      algorithm: 'auto',
      stream,
    }
    return comm.deviceAllReduceRmsNorm(request)
  } finally {
    await comm.close()
  }
}

/** One process per GPU: this rank's gradient buckets (several sizes) reduced in one call on its current stream. */
export async function perProcessBucketsStep(
  rank: number,
  worldSize: number,
  buckets: { input: bigint; output: bigint; count: number }[],
  stream: bigint,
): Promise<FusedDeviceInfo> {
  const comm = await openProcessCommunicator(rank, worldSize)
  try {
    const request: ProcessDeviceAllReduceManyRequest = {
      inputs: buckets.map((b) => b.input),
      outputs: buckets.map((b) => b.output),
      counts: buckets.map((b) => b.count),
      dtype: 'bf16',
      pdl: false,
      stream,
    }
    return comm.deviceAllReduceMany(request)
  } finally {
    await comm.close()
  }
}

/** One process per rank, host arrays: this rank's buffers reduced as one call (either backend). */
export async function perProcessHostBuckets(
  rank: number,
  worldSize: number,
  buckets: Uint16Array[],
): Promise<RankAllReduceOutput<Uint16Array>[]> {
  const comm: ProcessCommunicator = await createCommunicator({
    backend: 'cpu',
    rendezvous: 'env',
    rank,
    worldSize,
  })
  try {
    try {
      return await comm.allReduceMany(buckets, { dtype: 'bf16' })
    } catch (e) {
      // a mismatched or timed-out call with every rank alive: recover on every rank, then call again
      if (!isLlcommError(e) || (e.code !== 'MISMATCH' && e.code !== 'TIMEOUT')) throw e
      await comm.recover()
      return await comm.allReduceMany(buckets, { dtype: 'bf16' })
    }
  } finally {
    await comm.close()
  }
}
