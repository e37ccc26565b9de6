/** oneshot-ll: LL8 packets + double buffer. Each rank bcasts its input to all; each recvReduces all in rank order. */
import type { CpuAlgorithm } from './cpu-algorithm.js'

export const oneshotLlAllReduce: CpuAlgorithm = {
  name: 'oneshot-ll',
  maxChunkWords: (layout) => layout.slotsPerPeer,
  runChunk(p, input, output) {
    const ll = p.ll8
    const all = p.allRanks
    // Writing half h(e) at a peer is safe: the previous use of h was epoch e-2, and we finished epoch e-1 only
    // after receiving that peer's epoch e-1 packets, which it sent after it finished reading epoch e-2.
    for (let i = 0; i < input.length; i++) ll.bcast(all, i, input[i])
    ll.flush()
    // Same order 0..N-1 on every rank: bitwise identical outputs.
    for (let i = 0; i < input.length; i++) output[i] = ll.recvReduce(all, i)
  },
}
