/**
 * ring (baseline, NCCL-style): reduce-scatter then all-gather around the ring, 2(N-1) steps, LL8 packets from
 * `prev` only (the flag carries the epoch). Works on elements: reduce-scatter steps carry f32 partial sums (one
 * element per word, so f16/bf16 accumulate in f32), all-gather steps the final lane bits. Each segment is reduced
 * once, at its owner, then forwarded unchanged: every rank gets the same bits. Slots of the region from `prev`:
 * step s (0 .. 2N-3) uses [s*seg, (s+1)*seg).
 */

import type { CpuAlgorithm } from './cpu-algorithm.js'

export const ringAllReduce: CpuAlgorithm = {
  name: 'ring',
  maxChunkWords: (layout, codec) => {
    if (layout.ranks === 1) return layout.wordsPerHalf
    const seg = Math.floor(layout.slotsPerPeer / (2 * (layout.ranks - 1)))
    return Math.floor((seg * layout.ranks) / codec.lanesPerWord)
  },
  runChunk(p, input, output) {
    const { ll8, codec, size, rank } = p
    const lanes = codec.lanesPerWord
    const elements = input.length * lanes
    // f32 partial sums (a Float32Array store rounds as Math.fround), and 32-bit words in flight / lane bits.
    const values = p.scratchF32Values(elements)
    const words = p.scratchWords(elements)
    const wordsAsF32 = new Float32Array(words.buffer, words.byteOffset, elements)
    const valuesAsWords = new Int32Array(values.buffer, values.byteOffset, elements)
    if (lanes === 1) {
      values.set(new Float32Array(input.buffer, input.byteOffset, input.length))
    } else {
      for (let i = 0; i < input.length; i++) {
        values[2 * i] = codec.decodeLane(input[i] & 0xffff)
        values[2 * i + 1] = codec.decodeLane(input[i] >>> 16)
      }
    }
    const seg = Math.ceil(elements / size)
    const next = (rank + 1) % size
    const prev = (rank + size - 1) % size
    const segFrom = (k: number): number => (((k % size) + size) % size) * seg
    const segTo = (k: number): number => Math.min(elements, segFrom(k) + seg)
    // Writing half h(e) at `next` is safe: we finished epoch e-1, whose all-gather ended with the segment that
    // `next` owns; `next` sent it at its first all-gather step, after finishing epoch e-2 (double buffering).
    for (let step = 0; step < size - 1; step++) {
      const sendFrom = Math.min(elements, segFrom(rank - step))
      const sendTo = segTo(rank - step)
      // f32 partial sums travel as their bits (a NaN's payload may change: the owner's encode canonicalizes it).
      if (sendTo > sendFrom) ll8.sendRange(next, step * seg, valuesAsWords.subarray(sendFrom, sendTo))
      ll8.flush()
      // Every peer makes this call (MISMATCH otherwise) before we read `prev`'s first packet (idempotent per epoch).
      if (step === 0) p.signature.check()
      const recvFrom = Math.min(elements, segFrom(rank - step - 1))
      const recvTo = segTo(rank - step - 1)
      if (recvTo > recvFrom) {
        ll8.recvRange(prev, step * seg, words.subarray(recvFrom, recvTo))
        for (let k = recvFrom; k < recvTo; k++) values[k] = wordsAsF32[k] + values[k]
      }
    }
    // We own segment rank+1 fully reduced: round once to the dtype, then forward lane bits unchanged.
    const ownFrom = Math.min(elements, segFrom(rank + 1))
    const ownTo = segTo(rank + 1)
    for (let k = ownFrom; k < ownTo; k++) words[k] = codec.encodeLane(values[k])
    for (let step = 0; step < size - 1; step++) {
      const slotBase = (size - 1 + step) * seg
      const sendFrom = Math.min(elements, segFrom(rank + 1 - step))
      const sendTo = segTo(rank + 1 - step)
      if (sendTo > sendFrom) ll8.sendRange(next, slotBase, words.subarray(sendFrom, sendTo))
      ll8.flush()
      const recvFrom = Math.min(elements, segFrom(rank - step))
      const recvTo = segTo(rank - step)
      if (recvTo > recvFrom) ll8.recvRange(prev, slotBase, words.subarray(recvFrom, recvTo))
    }
    for (let i = 0; i < input.length; i++) {
      output[i] = lanes === 1 ? words[i] : (words[2 * i] & 0xffff) | (words[2 * i + 1] << 16)
    }
  },
}
