/** oneshot-sentinel: sentinel slots + double buffer, full payload efficiency; otherwise like oneshot-ll. */
import type { CpuAlgorithm } from './cpu-algorithm.js'

export const oneshotSentinelAllReduce: CpuAlgorithm = {
  name: 'oneshot-sentinel',
  maxChunkWords: (layout) => layout.slotsPerPeer,
  runChunk(p, input, output) {
    const s = p.sentinel
    // Safe to write half h(e) at a peer: it re-armed these slots while reading epoch e-2, before it sent us
    // its epoch e-1 data, which we have received (double-buffer acknowledgement).
    s.bcastRange(0, input)
    s.flush()
    p.signature.check() // every peer makes this call (MISMATCH otherwise) before we read any of its slots
    // Same order 0..N-1 on every rank (our own words from `input`): bitwise identical outputs. Slots are
    // re-armed per peer range.
    s.recvReduceRange(0, output, input)
  },
}
