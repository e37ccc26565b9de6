/**
 * ring (baseline, NCCL-style): reduce-scatter then all-gather around the ring, 2(N-1) steps, LL8 packets from
 * `prev` only (the flag carries the epoch). Works on elements: reduce-scatter steps carry f32 partial sums (one
 * element per word, so f16/bf16 accumulate in f32), all-gather steps the final lane bits. Each segment is reduced
 * once, at its owner, then forwarded unchanged: every rank gets the same bits. Slots of the region from `prev`:
 * step s (0 .. 2N-3) uses [s*seg, (s+1)*seg).
 */

import { f32FromBits, f32ToBits } from '../../dtype/f32.js'
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
    const values = p.scratchF32(elements)
    for (let i = 0; i < input.length; i++) {
      for (let lane = 0; lane < lanes; lane++) {
        values[i * lanes + lane] = codec.decodeLane(lanes === 1 ? input[i] : (input[i] >>> (16 * lane)) & 0xffff)
      }
    }
    const seg = Math.ceil(elements / size)
    const next = (rank + 1) % size
    const prev = (rank + size - 1) % size
    const segment = (k: number): [number, number] => {
      const s = ((k % size) + size) % size
      return [s * seg, Math.min(elements, (s + 1) * seg)]
    }
    // Writing half h(e) at `next` is safe: we finished epoch e-1, whose all-gather ended with the segment that
    // `next` owns; `next` sent it at its first all-gather step, after finishing epoch e-2 (double buffering).
    for (let step = 0; step < size - 1; step++) {
      const [sendFrom, sendTo] = segment(rank - step)
      for (let k = sendFrom; k < sendTo; k++) ll8.send(next, step * seg + k - sendFrom, f32ToBits(values[k]))
      ll8.flush()
      const [recvFrom, recvTo] = segment(rank - step - 1)
      for (let k = recvFrom; k < recvTo; k++) {
        values[k] = Math.fround(f32FromBits(ll8.recv(prev, step * seg + k - recvFrom)) + values[k])
      }
    }
    // We own segment rank+1 fully reduced: round once to the dtype, then forward lane bits unchanged.
    const [ownFrom, ownTo] = segment(rank + 1)
    for (let k = ownFrom; k < ownTo; k++) values[k] = codec.encodeLane(values[k])
    for (let step = 0; step < size - 1; step++) {
      const slotBase = (size - 1 + step) * seg
      const [sendFrom, sendTo] = segment(rank + 1 - step)
      for (let k = sendFrom; k < sendTo; k++) ll8.send(next, slotBase + k - sendFrom, values[k])
      ll8.flush()
      const [recvFrom, recvTo] = segment(rank - step)
      for (let k = recvFrom; k < recvTo; k++) values[k] = ll8.recv(prev, slotBase + k - recvFrom)
    }
    for (let i = 0; i < input.length; i++) {
      output[i] = lanes === 1 ? values[i] : (values[i * lanes] | (values[i * lanes + 1] << 16)) >>> 0
    }
  },
}
