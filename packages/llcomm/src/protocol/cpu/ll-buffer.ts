/**
 * The thread-level LL-buffer API of docs/design.md §2, shared by the LL8 and sentinel buffers (same names as the CUDA
 * device API). Values are 32-bit words: one f32, or two f16/bf16 lanes. Slot `s` from peer `p` is slot s of the
 * receiver's region for p, in the half of the double buffer selected by the current epoch's parity.
 *
 * Contract (what the caller guarantees): a sender writes slot s of half h into peer p at epoch e only after it
 * has seen evidence that p finished reading that slot at its previous use of half h (epoch e-2); every
 * algorithm states that evidence beside its sends. Every rank advances its epoch once per chunk, in the same
 * sequence of calls as every other rank. Every algorithm here also keeps the completion invariant: a rank
 * completes a chunk only after every rank has started it (each chunk's data flow reaches every rank), so finishing
 * epoch e-1 proves every rank finished e-2, whichever algorithms ran then (docs/protocols.md).
 */
import type { DtypeCodec } from '../../dtype/codec.js'
import { F32_CANONICAL_NAN } from '../../dtype/sentinels.js'

export interface LlChannel {
  /** Write `word` into slot `slot` of `peer`'s buffer (our region there), tagged for the current epoch. */
  send(peer: number, slot: number, word: number): void
  /** Wait (bounded) for slot `slot` from `peer` at the current epoch and return its word. */
  recv(peer: number, slot: number): number
  /**
   * Slot `slot` of every rank reduced lane-wise in f32 in rank order 0..N-1, our own contribution being `own`
   * (not read from the buffer); returns the rounded word. As CUDA's LlBuffer::recvReduce(slot, own).
   */
  recvReduce(slot: number, own: number): number
  /** send the same word to every rank but us, starting after us (as CUDA's LlBuffer::bcast(slot, v)). */
  bcast(slot: number, word: number): void
  /** Ring the doorbells of peers written since the last flush (done automatically before any blocking wait). */
  flush(): void
  /** Re-initialize this rank's whole receive region (only with every rank idle). */
  reset(): void
  /** Re-initialize slots [first, first+count) of every peer region in both halves (only with every rank idle). */
  resetRange(first: number, count: number): void
  /** Next epoch (one epoch word per rank, shared by all of its buffers). */
  advanceEpoch(): number
  /** The dtype whose lanes recvReduce and the sentinel canonicalization use. */
  codec: DtypeCodec
}

/** Every rank but `rank`, starting after it and wrapping (the order CUDA's bcast stores in). */
export function ranksAfter(rank: number, size: number): number[] {
  return Array.from({ length: size - 1 }, (_, k) => (rank + 1 + k) % size)
}

/** Lane-wise f32 reduction of words in a fixed order; shared by both buffers' recvReduce. */
export class LaneAccumulator {
  private lo = 0
  private hi = 0
  private first = true
  constructor(readonly codec: DtypeCodec) {}

  add(word: number): void {
    const c = this.codec
    if (c.lanesPerWord === 1) {
      const x = c.decodeLane(word)
      this.lo = this.first ? x : Math.fround(this.lo + x)
    } else {
      const a = c.decodeLane(word & 0xffff)
      const b = c.decodeLane(word >>> 16)
      if (this.first) {
        this.lo = a
        this.hi = b
      } else {
        this.lo = Math.fround(this.lo + a)
        this.hi = Math.fround(this.hi + b)
      }
    }
    this.first = false
  }

  /** Start over (a recv that threw TIMEOUT may have left a partial sum behind). */
  clear(): void {
    this.first = true
    this.lo = 0
    this.hi = 0
  }

  /** The rounded word (canonical NaN), and a fresh accumulator. */
  take(): number {
    const c = this.codec
    const w =
      c.lanesPerWord === 1 ? c.encodeLane(this.lo) : ((c.encodeLane(this.hi) << 16) | c.encodeLane(this.lo)) >>> 0
    this.first = true
    this.lo = 0
    this.hi = 0
    return w
  }
}

/** A buffer that can receive a range of slots from one peer into words (LL8 packets or sentinel slots). */
export interface RangeReceiver {
  recvRange(peer: number, firstSlot: number, out: Int32Array): void
  /**
   * Optional: return once the ranges [firstSlot, firstSlot + count) of every rank in `peers` but `skip` have
   * arrived, so that the reads after it do not block. Waiting for all first lets a buffer wait for the latest
   * peer once instead of once per peer in rank order.
   */
  awaitRanges?(peers: readonly number[], skip: number, firstSlot: number, count: number): void
}

/**
 * recvReduce over a range of slots, for both buffers: receives each peer's words in the given order and sums them
 * lane-wise in f32 (a Float32Array element store rounds exactly as Math.fround, so the sums equal LaneAccumulator's),
 * then packs the result. With `local`, our own rank's words come from it instead of our own slots (the caller then
 * sends to every rank but itself). Scratch arrays grow once and are reused: no allocation per call.
 */
export class RangeReduction {
  private accF32 = new Float32Array(64)
  private accBits = new Int32Array(this.accF32.buffer)
  private wordsI32 = new Int32Array(64)
  private wordsF32 = new Float32Array(this.wordsI32.buffer)

  reduce(
    from: RangeReceiver,
    codec: DtypeCodec,
    rank: number,
    peers: readonly number[],
    firstSlot: number,
    out: Int32Array,
    local?: Int32Array,
  ): void {
    const n = out.length
    const lanes = codec.lanesPerWord
    if (this.wordsI32.length < n) {
      this.wordsI32 = new Int32Array(Math.max(n, 2 * this.wordsI32.length))
      this.wordsF32 = new Float32Array(this.wordsI32.buffer)
    }
    if (this.accF32.length < n * lanes) {
      this.accF32 = new Float32Array(Math.max(n * lanes, 2 * this.accF32.length))
      this.accBits = new Int32Array(this.accF32.buffer)
    }
    const words = this.wordsI32.subarray(0, n)
    const wordsF32 = this.wordsF32
    const acc = this.accF32
    from.awaitRanges?.(peers, local !== undefined ? rank : -1, firstSlot, n)
    for (let k = 0; k < peers.length; k++) {
      // Our own contribution is read from `local` when given (then nobody wrote our own slots this epoch).
      if (peers[k] === rank && local !== undefined) words.set(local)
      else from.recvRange(peers[k], firstSlot, words)
      if (lanes === 1) {
        if (k === 0) for (let i = 0; i < n; i++) acc[i] = wordsF32[i]
        else for (let i = 0; i < n; i++) acc[i] += wordsF32[i]
      } else {
        for (let i = 0; i < n; i++) {
          const w = words[i]
          const a = codec.decodeLane(w & 0xffff)
          const b = codec.decodeLane(w >>> 16)
          if (k === 0) {
            acc[2 * i] = a
            acc[2 * i + 1] = b
          } else {
            acc[2 * i] += a
            acc[2 * i + 1] += b
          }
        }
      }
    }
    if (lanes === 1) {
      // f32: the accumulator's own bits, NaNs canonicalized (what codec.encodeLane does, without a call per element).
      const accBits = this.accBits
      const canonicalNan = F32_CANONICAL_NAN | 0
      for (let i = 0; i < n; i++) {
        const b = accBits[i]
        out[i] = (b & 0x7fffffff) > 0x7f800000 ? canonicalNan : b
      }
    } else {
      for (let i = 0; i < n; i++) out[i] = (codec.encodeLane(acc[2 * i + 1]) << 16) | codec.encodeLane(acc[2 * i])
    }
  }
}
