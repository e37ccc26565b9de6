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
    for (let o = 0; o < p.size; o++) {
      const end = Math.min(n, (o + 1) * seg)
      for (let i = o * seg; i < end; i++) s.send(o, i - o * seg, input[i])
    }
    s.flush()
    const mine = p.rank * seg
    const mineEnd = Math.min(n, mine + seg)
    for (let i = mine; i < mineEnd; i++) {
      const word = s.recvReduce(p.allRanks, i - mine)
      output[i] = word
      // All-gather word: safe, since each peer sent us its reduce-scatter word of this epoch (just received)
      // only after finishing the previous epoch, including re-arming this slot.
      s.bcast(others, gatherBase + i - mine, word)
    }
    s.flush()
    for (const o of others) {
      const end = Math.min(n, (o + 1) * seg)
      for (let i = o * seg; i < end; i++) output[i] = s.recv(o, gatherBase + i - o * seg)
    }
  },
}
