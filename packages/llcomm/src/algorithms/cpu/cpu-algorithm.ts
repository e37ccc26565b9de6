/**
 * What a CPU algorithm is: a capacity rule and one chunk (= one epoch) of work composed from the LL-buffer API.
 * Inputs and outputs are 32-bit words (one f32, or two f16/bf16 lanes; see src/dtype/codec.ts).
 */
import type { AlgorithmName } from '../../api/types.js'
import type { DtypeCodec } from '../../dtype/codec.js'
import type { ChannelLayout } from '../../protocol/cpu/layout.js'
import type { RankProtocol } from '../../protocol/cpu/rank-protocol.js'

export interface CpuAlgorithm {
  readonly name: AlgorithmName
  /** The most words one chunk may carry on this layout; 0 when this layout cannot serve the algorithm at all. */
  maxChunkWords(layout: ChannelLayout, codec: DtypeCodec): number
  /** One chunk at the current epoch: every rank calls it with the same word count. */
  runChunk(p: RankProtocol, input: Int32Array, output: Int32Array): void
}

/** Every rank except `rank`, in rank order. */
export function peersExcept(size: number, rank: number): number[] {
  const peers: number[] = []
  for (let r = 0; r < size; r++) if (r !== rank) peers.push(r)
  return peers
}
