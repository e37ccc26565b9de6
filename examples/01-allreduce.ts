// 01: the driver view. One communicator, four CPU ranks (worker threads), an f32 and a bf16 all-reduce.
// Run: node dist/examples/01-allreduce.js
import { createCommunicator } from 'llcomm'

const ranks = 4
const comm = await createCommunicator({ backend: 'cpu', ranks })
try {
  const inputs = Array.from({ length: ranks }, (_, r) => Float32Array.from({ length: 8 }, (_, i) => r * 10 + i))
  const outputs = await comm.allReduce(inputs, { algorithm: 'auto', dtype: 'f32', op: 'sum' })
  console.log(`f32 sum on ${ranks} ranks with ${outputs.info.algorithm}:`, Array.from(outputs[0]).join(' '))

  // bf16 travels as raw bits in a Uint16Array: 0x3f80 is 1.0, so the sum is 4.0 = 0x4080.
  const bf16 = Array.from({ length: ranks }, () => new Uint16Array(5).fill(0x3f80))
  const summed = await comm.allReduce(bf16, { algorithm: 'twoshot-sentinel', dtype: 'bf16' })
  console.log(`bf16 sum with ${summed.info.algorithm}: 0x${summed[3][0].toString(16)}`)
  if (summed[3][0] !== 0x4080 || outputs[2][7] !== 88) throw new Error('wrong sum')
} finally {
  await comm.close()
}
