/** The CPU algorithm table and the chunk loop (one chunk = one epoch). */
import type { AlgorithmName, Dtype, LlProtocol, ReduceOp } from '../../api/types.js'
import { encodeSignature, signatureProtocol } from '../../protocol/call-signature.js'
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

/** What the signature of a call needs beyond the algorithm and the words (src/protocol/call-signature.ts). */
export interface ChunkedCall {
  dtype: Dtype
  /** Elements per rank (a 16-bit dtype's last word may hold one padding lane). */
  count: number
  op?: ReduceOp
  protocol?: LlProtocol
}

/**
 * Runs `algorithm` over `input` in chunks of at most maxChunkWords words, one epoch each. Every rank computes the
 * same chunking from the same (layout, dtype, word count), so the epoch sequences stay aligned. Each chunk starts by
 * publishing the call signature (count of the chunk, dtype, op, algorithm, protocol, chunk index and count), which
 * every peer checks before it uses the chunk's data (SignatureSlots; a peer making another call: MISMATCH). An empty
 * call still takes one epoch, for the signature alone, so that a rank calling with 0 elements while its peers call
 * with more fails with them instead of returning at once. Returns the number of data chunks.
 */
export function runChunked(
  p: RankProtocol,
  algorithm: CpuAlgorithm,
  input: Int32Array,
  output: Int32Array,
  call: ChunkedCall,
): number {
  const maxWords = algorithm.maxChunkWords(p.layout, p.codec)
  const lanes = p.codec.lanesPerWord
  const chunkCount = Math.ceil(input.length / maxWords)
  const protocol = signatureProtocol(algorithm.name, call.protocol, 'll8')
  const op = call.op ?? 'sum'
  if (chunkCount === 0) {
    const [w0, w1] = encodeSignature({
      count: 0,
      algorithm: algorithm.name,
      dtype: call.dtype,
      op,
      protocol,
      chunkIndex: 0,
      chunkCount: 0,
    })
    runSignatureEpoch(p, w0, w1)
    return 0
  }
  let chunks = 0
  for (let first = 0; first < input.length; first += maxWords) {
    const end = Math.min(input.length, first + maxWords)
    p.advanceEpoch()
    const [w0, w1] = encodeSignature({
      count: Math.min(call.count - first * lanes, (end - first) * lanes),
      algorithm: algorithm.name,
      dtype: call.dtype,
      op,
      protocol,
      chunkIndex: chunks,
      chunkCount,
    })
    p.signature.publish(w0, w1)
    algorithm.runChunk(p, input.subarray(first, end), output.subarray(first, end))
    // Every algorithm checks before its first receive; this only catches one that forgot (a no-op otherwise).
    p.signature.check()
    p.flush()
    chunks++
  }
  return chunks
}

/**
 * One epoch with a signature and no data: advance, publish (w0, w1) to every peer, check every peer's (MISMATCH on
 * a difference). An empty call's epoch, and a per-process allReduceMany's group check (encodeManyGroupSignature).
 * The signature slots' overwrite argument holds as for a data epoch: finishing epoch e needs every peer's packet
 * of e, which the peer stores only after it finished epoch e - 1.
 */
export function runSignatureEpoch(p: RankProtocol, w0: number, w1: number): void {
  p.advanceEpoch()
  p.signature.publish(w0, w1)
  p.signature.check()
  p.flush()
}
