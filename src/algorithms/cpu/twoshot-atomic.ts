/**
 * twoshot-atomic: LL128-style reduce-scatter by atomic adds into the owner's lines (counter = synchronization,
 * no barrier), then an all-gather of the owner's rounded words through sentinel slots. The owner reads each
 * line once, so every rank receives the same bits even though the order of the atomic adds varies.
 */
import { LINE_PAYLOAD_WORDS } from '../../protocol/cpu/layout.js'
import { type CpuAlgorithm, peersExcept } from './cpu-algorithm.js'

export const twoshotAtomicAllReduce: CpuAlgorithm = {
  name: 'twoshot-atomic',
  maxChunkWords: (layout, codec) =>
    layout.ranks *
    Math.min(layout.slotsPerPeer, Math.floor((layout.linesPerHalf * LINE_PAYLOAD_WORDS) / codec.lanesPerWord)),
  runChunk(p, input, output) {
    const { lines, sentinel, codec } = p
    const lanes = codec.lanesPerWord
    const n = input.length
    const seg = Math.ceil(n / p.size)
    // Reduce-scatter: element k of owner o's segment goes to line floor(k/31), data word k%31. Owner o re-armed
    // each line at its last use (epoch e-2 or earlier in this half) before sending that epoch's all-gather words,
    // which we received before finishing it (see AtomicLines.rearm and the completion invariant in ll-channel.ts).
    for (let o = 0; o < p.size; o++) {
      const end = Math.min(n, (o + 1) * seg)
      if (end <= o * seg) continue
      for (let i = o * seg; i < end; i++) {
        const w = input[i]
        for (let lane = 0; lane < lanes; lane++) {
          const k = (i - o * seg) * lanes + lane
          const bits = lanes === 1 ? w : (w >>> (16 * lane)) & 0xffff
          lines.atomicAdd(o, Math.floor(k / LINE_PAYLOAD_WORDS), k % LINE_PAYLOAD_WORDS, codec.decodeLane(bits))
        }
      }
      const usedLines = Math.ceil(((end - o * seg) * lanes) / LINE_PAYLOAD_WORDS)
      for (let l = 0; l < usedLines; l++) lines.arrive(o, l)
    }
    lines.flush()
    // Our segment: wait for every counter, read, re-arm, then all-gather (re-arm before the sends: see above).
    const mine = p.rank * seg
    const mineEnd = Math.min(n, mine + seg)
    const elements = Math.max(0, mineEnd - mine) * lanes
    const usedLines = Math.ceil(elements / LINE_PAYLOAD_WORDS)
    const reduced = p.scratchF32(elements)
    for (let l = 0; l < usedLines; l++) {
      lines.waitComplete(l)
      const laneCount = Math.min(LINE_PAYLOAD_WORDS, elements - l * LINE_PAYLOAD_WORDS)
      for (let k = 0; k < laneCount; k++) reduced[l * LINE_PAYLOAD_WORDS + k] = lines.read(l, k)
      lines.rearm(l, laneCount)
    }
    const others = peersExcept(p.size, p.rank)
    for (let i = mine; i < mineEnd; i++) {
      const k = (i - mine) * lanes
      const word =
        lanes === 1
          ? codec.encodeLane(reduced[k])
          : ((codec.encodeLane(reduced[k + 1]) << 16) | codec.encodeLane(reduced[k])) >>> 0
      output[i] = word
      sentinel.bcast(others, i - mine, word)
    }
    sentinel.flush()
    for (const o of others) {
      const end = Math.min(n, (o + 1) * seg)
      for (let i = o * seg; i < end; i++) output[i] = sentinel.recv(o, i - o * seg)
    }
  },
}
