// 04: the GPU path. Device buffers per rank, an eager deviceAllReduce on our own streams, then the same call
// captured in a CUDA graph and replayed with fresh data. Skips cleanly where there is no GPU.
// Run: node examples/dist/04-device-buffers.js   (LLCOMM_EXAMPLE_DEVICES=0,1 for two GPUs; default 0,0)
import type { DeviceAllReduceArgs } from 'llcomm'
import { openGpuOrSkip, streamPerDevice } from './gpu-devices.js'

const comm = await openGpuOrSkip('04')
if (comm) {
  try {
    const count = 4099 // odd on purpose: not a multiple of any vector width
    const ranks = comm.size
    const inputs = Array.from({ length: ranks }, (_, r) => comm.allocate(r, count * 4))
    const outputs = Array.from({ length: ranks }, (_, r) => comm.allocate(r, count * 4))
    const streams = streamPerDevice(comm)
    const streamOfRank = (r: number) => streams[comm.launchGroupDevices.indexOf(comm.devices[r])]

    // Small integers sum exactly in f32 whatever the order, so every rank must see exactly this.
    const fill = (round: number) => {
      const host = Array.from({ length: ranks }, (_, r) =>
        Float32Array.from({ length: count }, (_, i) => ((i * 7 + r * 13 + round) % 101) - 50),
      )
      for (const [r, x] of host.entries()) comm.upload(inputs[r], x, streamOfRank(r))
      return Float32Array.from({ length: count }, (_, i) => host.reduce((s, x) => s + x[i], 0))
    }
    const check = async (expected: Float32Array, what: string) => {
      for (const s of streams) await comm.synchronize(s)
      for (let r = 0; r < ranks; r++) {
        const got = new Float32Array(count)
        comm.download(outputs[r], got)
        const wrong = got.findIndex((v, i) => v !== expected[i])
        if (wrong >= 0)
          throw new Error(`${what}: rank ${r} element ${wrong} is ${got[wrong]}, expected ${expected[wrong]}`)
      }
    }

    const args: DeviceAllReduceArgs = { inputs, outputs, count, dtype: 'f32', op: 'sum', algorithm: 'auto', streams }
    const expected = fill(0)
    const info = comm.deviceAllReduce(args)
    await check(expected, 'eager call')
    console.log(
      `eager deviceAllReduce on ${ranks} ranks (devices ${comm.devices.join(',')}): ${info.algorithm}, ${info.chunks} chunk(s), correct`,
    )

    // The same call, captured once and replayed: no host state, so every replay is a new collective.
    const graph = comm.captureGraph(() => comm.deviceAllReduce(args), streams)
    const replays = 20
    for (let round = 1; round <= replays; round++) {
      const want = fill(round)
      graph.launch()
      await check(want, `graph replay ${round}`)
    }
    graph.destroy()
    console.log(`the same call captured in a CUDA graph: ${replays} replays with fresh data, all correct`)
  } finally {
    await comm.close() // frees the buffers and streams above too
  }
}
