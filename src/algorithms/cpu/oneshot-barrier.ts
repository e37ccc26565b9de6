/**
 * oneshot-barrier (baseline): the classic custom all-reduce. Each rank publishes its chunk in its staging area,
 * global barrier, each reads every rank's chunk and reduces in rank order, global barrier (so nobody overwrites
 * its staging area while a peer still reads it). Two barriers per chunk.
 */
import { LaneAccumulator } from '../../protocol/cpu/ll-channel.js'
import type { CpuAlgorithm } from './cpu-algorithm.js'

export const oneshotBarrierAllReduce: CpuAlgorithm = {
  name: 'oneshot-barrier',
  maxChunkWords: (layout) => layout.wordsPerHalf,
  runChunk(p, input, output) {
    // Plain stores: the barrier's SC Atomics.add follows them and a peer's SC load of our count precedes its
    // plain reads, so the reads see these writes (data-race-free by the JS memory model).
    p.staging[p.rank].set(input)
    p.barrier.arriveAndWait()
    const acc = new LaneAccumulator(p.codec)
    for (let i = 0; i < input.length; i++) {
      for (let r = 0; r < p.size; r++) acc.add(p.staging[r][i])
      output[i] = acc.take()
    }
    p.barrier.arriveAndWait()
  },
}
