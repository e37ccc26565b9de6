/**
 * twoshot-sentinel: reduce-scatter to owners, then all-gather, both through sentinel slots. Owner o owns words
 * [o*seg, (o+1)*seg); it reduces them once (rank order) and sends the result, so every rank gets the same bits.
 * Slots per peer region: [0, half) carry reduce-scatter words, [half, 2*half) all-gather words.
 */
import { type CpuAlgorithm, peersExcept } from './cpu-algorithm.js'

export const twoshotSentinelAllReduce: CpuAlgorithm = {
  name: 'twoshot-sentinel',
  maxChunkWords: (layout) => Math.floor(layout.slotsPerPeer / 2) * layout.ranks,
  runChunk(p, input, output) {
    const s = p.sentinel
    const n = input.length
    const seg = Math.ceil(n / p.size)
    const gatherBase = Math.floor(p.layout.slotsPerPeer / 2)
    const others = peersExcept(p.size, p.rank)
    // Reduce-scatter. Owner o re-armed our slots at their last use before it sent us that epoch's all-gather
    // word for the same slot index, which we received before finishing that epoch.
    for (const o of others) {
      const end = Math.min(n, (o + 1) * seg)
      if (end > o * seg) s.sendRange(o, 0, input.subarray(o * seg, end))
    }
    s.flush()
    p.signature.check() // every peer makes this call (MISMATCH otherwise) before we read any of its slots
    const mine = p.rank * seg
    const mineEnd = Math.min(n, mine + seg)
    if (mineEnd > mine) {
      const reduced = output.subarray(mine, mineEnd)
      // Reduces in rank order and re-arms the reduce-scatter slots before the all-gather sends below.
      // Our own words come straight from `input` (read before `reduced` is written, even if they alias).
      s.recvReduceRange(0, reduced, input.subarray(mine, mineEnd))
      // All-gather words: safe, since each peer sent us its reduce-scatter words of this epoch (just received)
      // only after finishing the previous epoch, including re-arming these slots.
      s.bcastRange(gatherBase, reduced)
    }
    s.flush()
    for (const o of others) {
      const end = Math.min(n, (o + 1) * seg)
      if (end > o * seg) s.recvRange(o, gatherBase, output.subarray(o * seg, end))
    }
  },
}
