/**
 * oneshot-barrier (baseline): the classic custom all-reduce. Each rank publishes its chunk in its staging area,
 * global barrier, each reads every rank's chunk and reduces in rank order, global barrier (so nobody overwrites
 * its staging area while a peer still reads it). Two barriers per chunk.
 */
import { type RangeReceiver, RangeReduction } from '../../protocol/cpu/ll-buffer.js'
import type { CpuAlgorithm } from './cpu-algorithm.js'

/**
 * The staging areas read as a RangeReceiver, so the baseline reduces with the same code (and the same bits) as
 * the barrier-free algorithms. Plain reads: the first barrier orders them after every rank's staging writes.
 */
class StagingReader implements RangeReceiver {
  staging: readonly Int32Array[] = []
  recvRange(peer: number, firstSlot: number, out: Int32Array): void {
    out.set(this.staging[peer].subarray(firstSlot, firstSlot + out.length))
  }
}
// Scratch shared by the ranks of one thread: a call blocks its thread until done, so one call uses it at a time.
const stagingReader = new StagingReader()
const reduction = new RangeReduction()

export const oneshotBarrierAllReduce: CpuAlgorithm = {
  name: 'oneshot-barrier',
  maxChunkWords: (layout) => layout.wordsPerHalf,
  runChunk(p, input, output) {
    // Plain stores: the barrier's SC Atomics.add follows them and a peer's SC load of our count precedes its
    // plain reads, so the reads see these writes (data-race-free by the JS memory model).
    p.staging[p.rank].set(input)
    // Before the barrier: a peer running another algorithm never arrives there, and would be named a TIMEOUT.
    p.signature.check()
    p.barrier.arriveAndWait()
    stagingReader.staging = p.staging
    reduction.reduce(stagingReader, p.codec, p.rank, p.allRanks, 0, output)
    p.barrier.arriveAndWait()
  },
}
