/** oneshot-sentinel: sentinel slots + double buffer, full payload efficiency; otherwise like oneshot-ll. */
import type { CpuAlgorithm } from './cpu-algorithm.js'

export const oneshotSentinelAllReduce: CpuAlgorithm = {
  name: 'oneshot-sentinel',
  maxChunkWords: (layout) => layout.slotsPerPeer,
  runChunk(p, input, output) {
    const s = p.sentinel
    const all = p.allRanks
    // Safe to write half h(e) at a peer: it re-armed these slots while reading epoch e-2, before it sent us
    // its epoch e-1 data, which we have received (double-buffer acknowledgement).
    for (let i = 0; i < input.length; i++) s.bcast(all, i, input[i])
    s.flush()
    for (let i = 0; i < input.length; i++) output[i] = s.recvReduce(all, i)
  },
}
