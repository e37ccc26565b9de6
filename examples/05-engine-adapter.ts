// 05: an inference engine's tensor-parallel group on llcomm, shaped like the NCCL group it replaces:
// allReduceSum(buffers, count, dtype) in place, on each GPU's current stream, inside or outside CUDA graphs;
// `auto` picks the kernel by size, and what llcomm cannot serve falls back (NCCL on distinct GPUs).
// Run: node examples/dist/05-engine-adapter.js   (LLCOMM_EXAMPLE_DEVICES=0,1 for two GPUs; default 0,0)
import { type CudaCommunicator, type CuStream, type DeviceAllReduceInfo, type DevicePtr, devicePtr } from 'llcomm'
import { openGpuOrSkip, streamPerDevice } from './gpu-devices.js'

type Dtype = 'f32' | 'f16' | 'bf16'

/** What an engine's model code calls after each row-parallel layer. */
class TensorParallelGroup {
  constructor(
    private readonly comm: CudaCommunicator,
    /** The engine's current stream on each GPU (one per distinct device, launchGroupDevices order). */
    private readonly currentStreams: readonly CuStream[],
  ) {}

  /** Sums `buffers` (one device address per rank, from any allocator) in place. */
  allReduceSum(buffers: readonly (bigint | number)[], count: number, dtype: Dtype): DeviceAllReduceInfo {
    const ptrs = buffers.map((b) => devicePtr(b))
    return this.comm.deviceAllReduce({ inputs: ptrs, outputs: ptrs, count, dtype, streams: this.currentStreams })
  }
}

const comm = await openGpuOrSkip('05')
if (comm) {
  try {
    const streams = streamPerDevice(comm)
    const group = new TensorParallelGroup(comm, streams)
    // What would run at decode-time sizes (hidden 4096, bf16: 8 KB per token) and at a prefill size.
    for (const count of [4096, 16 * 4096, 4096 * 512]) {
      const served = comm.canServe({ count, dtype: 'bf16' })
      console.log(
        `${count} bf16 elements: ${served.ok ? served.algorithm + (served.fallbackReason ? ` (fallback: ${served.fallbackReason})` : '') : `not served: ${served.reason}`}`,
      )
    }
    const count = 16 * 4096
    const buffers: DevicePtr[] = Array.from({ length: comm.size }, (_, r) => comm.allocate(r, count * 2))
    const ones = new Uint16Array(count).fill(0x3f80) // bf16 1.0
    for (const [r, b] of buffers.entries())
      comm.upload(b, ones, streams[comm.launchGroupDevices.indexOf(comm.devices[r])])
    const info = group.allReduceSum(buffers, count, 'bf16')
    for (const s of streams) await comm.synchronize(s)
    const got = new Uint16Array(count)
    comm.download(buffers[comm.size - 1], got)
    const want = new Float32Array([comm.size])
    const wantBits = new Uint16Array(want.buffer)[1] // bf16 = the high half of the f32 bits (exact for small ints)
    if (got.some((v) => v !== wantBits)) throw new Error(`in-place sum wrong: 0x${got[0].toString(16)}`)
    console.log(
      `allReduceSum in place, ${count} bf16 on ${comm.size} ranks: ${info.algorithm}, every element = ${comm.size}`,
    )
  } finally {
    await comm.close()
  }
}
