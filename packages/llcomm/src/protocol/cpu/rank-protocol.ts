/**
 * Everything one rank uses on a channel: its control block and its view of every buffer. Built inside the rank
 * (a pool worker or a user's worker) from the channel's SharedArrayBuffer and layout numbers.
 */
import type { Dtype } from '../../api/types.js'
import { DTYPE_CODECS, type DtypeCodec } from '../../dtype/codec.js'
import { AtomicLines } from './atomic-lines.js'
import { EpochBarrier } from './flags.js'
import { type ChannelLayout, type ChannelMemory, computeChannelLayout, regionBase } from './layout.js'
import { Ll8Buffer, type Ll8TestFaults } from './packets.js'
import { SentinelBuffer, type SentinelTestFaults } from './sentinel.js'
import { SignatureSlots, type SignatureTestFaults } from './signature.js'
import { RankControl, type WaitOptions } from './wait.js'

export interface ProtocolTestFaults extends Ll8TestFaults, SentinelTestFaults, SignatureTestFaults {}

export class RankProtocol {
  readonly rank: number
  readonly size: number
  readonly layout: ChannelLayout
  readonly control: RankControl
  readonly ll8: Ll8Buffer
  readonly sentinel: SentinelBuffer
  readonly lines: AtomicLines
  readonly barrier: EpochBarrier
  /** The per-call header slot: every chunk publishes its call signature, checked before any data is used. */
  readonly signature: SignatureSlots
  /** Every rank in order 0..N-1: the fixed reduction order that makes outputs bitwise identical. */
  readonly allRanks: readonly number[]
  /** This rank's staging words (oneshot-barrier), and every rank's. */
  readonly staging: Int32Array[]
  codec: DtypeCodec = DTYPE_CODECS.f32

  constructor(
    sab: ChannelMemory,
    ranks: number,
    bufferBytes: number,
    rank: number,
    wait: WaitOptions,
    faults: ProtocolTestFaults = {},
  ) {
    this.layout = computeChannelLayout(ranks, bufferBytes)
    this.rank = rank
    this.size = ranks
    this.control = new RankControl(sab, this.layout, rank, wait)
    this.ll8 = new Ll8Buffer(sab, this.control, faults)
    this.sentinel = new SentinelBuffer(sab, this.control, faults)
    this.lines = new AtomicLines(sab, this.control)
    this.barrier = new EpochBarrier(this.control)
    this.signature = new SignatureSlots(sab, this.control, faults)
    this.allRanks = Array.from({ length: ranks }, (_, r) => r)
    this.staging = this.allRanks.map(
      (r) => new Int32Array(sab, regionBase(this.layout, r) + this.layout.stagingOffset, this.layout.wordsPerHalf),
    )
  }

  private scratch = new Float64Array(64)

  /** Reusable per-rank scratch of at least `n` values (f32 values held exactly in doubles). */
  scratchF32(n: number): Float64Array {
    if (this.scratch.length < n) this.scratch = new Float64Array(Math.max(n, this.scratch.length * 2))
    return this.scratch
  }

  private scratchValues = new Float32Array(64)

  /** Reusable per-rank scratch of at least `n` f32 values (stores round as Math.fround). */
  scratchF32Values(n: number): Float32Array {
    if (this.scratchValues.length < n) {
      this.scratchValues = new Float32Array(Math.max(n, this.scratchValues.length * 2))
    }
    return this.scratchValues
  }

  private scratchWordsI32 = new Int32Array(64)

  /** Reusable per-rank scratch of at least `n` 32-bit words. */
  scratchWords(n: number): Int32Array {
    if (this.scratchWordsI32.length < n) {
      this.scratchWordsI32 = new Int32Array(Math.max(n, this.scratchWordsI32.length * 2))
    }
    return this.scratchWordsI32
  }

  useDtype(dtype: Dtype): void {
    const codec = DTYPE_CODECS[dtype]
    this.codec = codec
    this.ll8.codec = codec
    this.sentinel.codec = codec
  }

  /** One epoch per chunk, shared by every buffer of this rank. */
  advanceEpoch(): number {
    return this.control.advanceEpoch()
  }

  flush(): void {
    this.control.ringDoorbells()
  }

  /**
   * Back to the initial state: this rank's own receive regions re-armed, its barrier count and epoch zeroed.
   * Only with every rank idle (after a TIMEOUT: the driver calls it on every rank once all have returned, and
   * issues the next call only after every rank has reported the reset done). The final Atomics.store of the
   * epoch orders the plain fills before the rank's reply.
   */
  reset(): void {
    this.ll8.reset()
    this.sentinel.reset()
    this.lines.reset()
    this.barrier.reset()
    this.signature.reset()
    this.control.resetEpoch()
  }
}
