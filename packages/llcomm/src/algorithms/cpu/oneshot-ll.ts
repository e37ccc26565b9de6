/** oneshot-ll: LL8 packets + double buffer. Each rank bcasts its input to every other rank; each
 * recvReduces all ranks in rank order, its own words read from its input. */
import type { CpuAlgorithm } from './cpu-algorithm.js'

export const oneshotLlAllReduce: CpuAlgorithm = {
  name: 'oneshot-ll',
  maxChunkWords: (layout) => layout.slotsPerPeer,
  runChunk(p, input, output) {
    const ll = p.ll8
    // Writing half h(e) at a peer is safe: the previous use of h was epoch e-2, and we finished epoch e-1 only
    // after receiving that peer's epoch e-1 packets, which it sent after it finished reading epoch e-2.
    ll.bcastRange(0, input)
    ll.flush()
    p.signature.check() // every peer makes this call (MISMATCH otherwise) before we read any of its packets
    // Same order 0..N-1 on every rank (our own words from `input`): bitwise identical outputs.
    ll.recvReduceRange(0, output, input)
  },
}
