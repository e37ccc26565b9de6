/** The CPU algorithm table and the chunk loop (one chunk = one epoch). */
import type { AlgorithmName } from '../../api/types.js'
import type { RankProtocol } from '../../protocol/cpu/rank-protocol.js'
import type { CpuAlgorithm } from './cpu-algorithm.js'
import { oneshotBarrierAllReduce } from './oneshot-barrier.js'
import { oneshotLlAllReduce } from './oneshot-ll.js'
import { oneshotSentinelAllReduce } from './oneshot-sentinel.js'
import { ringAllReduce } from './ring.js'
import { twoshotAtomicAllReduce } from './twoshot-atomic.js'
import { twoshotSentinelAllReduce } from './twoshot-sentinel.js'

export type { CpuAlgorithm } from './cpu-algorithm.js'

export const CPU_ALGORITHMS: Readonly<Partial<Record<AlgorithmName, CpuAlgorithm>>> = {
  'oneshot-ll': oneshotLlAllReduce,
  'oneshot-sentinel': oneshotSentinelAllReduce,
  'twoshot-sentinel': twoshotSentinelAllReduce,
  'twoshot-atomic': twoshotAtomicAllReduce,
  'oneshot-barrier': oneshotBarrierAllReduce,
  ring: ringAllReduce,
}

/**
 * Runs `algorithm` over `input` in chunks of at most maxChunkWords words, one epoch each. Every rank computes the
 * same chunking from the same (layout, dtype, word count), so the epoch sequences stay aligned. Returns the
 * number of chunks.
 */
export function runChunked(p: RankProtocol, algorithm: CpuAlgorithm, input: Int32Array, output: Int32Array): number {
  const maxWords = algorithm.maxChunkWords(p.layout, p.codec)
  let chunks = 0
  for (let first = 0; first < input.length; first += maxWords) {
    const end = Math.min(input.length, first + maxWords)
    p.advanceEpoch()
    algorithm.runChunk(p, input.subarray(first, end), output.subarray(first, end))
    p.flush()
    chunks++
  }
  return chunks
}
