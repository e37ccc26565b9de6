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
    const values = p.scratchF32Values(seg * lanes)
    // Reduce-scatter: element k of owner o's segment goes to line floor(k/31), data word k%31. Owner o re-armed
    // each line at its last use (epoch e-2 or earlier in this half) before sending that epoch's all-gather words,
    // which we received before finishing it (see AtomicLines.rearm and the completion invariant in ll-buffer.ts).
    // Owners in rotated order (ours last): ranks that start together add into different owners' lines instead
    // of all racing on owner 0's cache lines (the owner's sum does not depend on the order of the adds' issue).
    for (let j = 1; j <= p.size; j++) {
      const o = (p.rank + j) % p.size
      const from = o * seg
      const end = Math.min(n, from + seg)
      if (end <= from) continue
      const elements = (end - from) * lanes
      if (lanes === 1) {
        const f32 = new Float32Array(input.buffer, input.byteOffset + 4 * from, end - from)
        values.set(f32)
      } else {
        for (let i = from; i < end; i++) {
          const w = input[i]
          values[2 * (i - from)] = codec.decodeLane(w & 0xffff)
          values[2 * (i - from) + 1] = codec.decodeLane(w >>> 16)
        }
      }
      lines.addRangeAndArrive(o, values, elements)
    }
    lines.flush()
    p.signature.check() // every peer makes this call (MISMATCH otherwise) before we read our lines
    // Our segment: wait for every counter, read, re-arm, then all-gather (re-arm before the sends: see above).
    const mine = p.rank * seg
    const mineEnd = Math.min(n, mine + seg)
    const elements = Math.max(0, mineEnd - mine) * lanes
    const usedLines = Math.ceil(elements / LINE_PAYLOAD_WORDS)
    for (let l = 0; l < usedLines; l++) {
      lines.waitComplete(l)
      const laneCount = Math.min(LINE_PAYLOAD_WORDS, elements - l * LINE_PAYLOAD_WORDS)
      lines.readLine(l, values, l * LINE_PAYLOAD_WORDS, laneCount)
      lines.rearm(l, laneCount)
    }
    const others = peersExcept(p.size, p.rank)
    for (let i = mine; i < mineEnd; i++) {
      const k = (i - mine) * lanes
      output[i] =
        lanes === 1
          ? codec.encodeLane(values[k])
          : ((codec.encodeLane(values[k + 1]) << 16) | codec.encodeLane(values[k])) >>> 0
    }
    if (mineEnd > mine) sentinel.bcastRange(0, output.subarray(mine, mineEnd))
    sentinel.flush()
    for (const o of others) {
      const end = Math.min(n, (o + 1) * seg)
      if (end > o * seg) sentinel.recvRange(o, 0, output.subarray(o * seg, end))
    }
  },
}
