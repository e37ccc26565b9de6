/**
 * Sentinel slots: plain 32-bit data words, pre-filled with SENTINEL_WORD. A reader polls until the bits differ
 * (bits, never floats), takes the word and re-arms the slot. Full payload efficiency; the price is the re-arm
 * and the rule that a sender canonicalizes a value whose bits equal the sentinel.
 */
import { DTYPE_CODECS, type DtypeCodec } from '../../dtype/codec.js'
import { SENTINEL_WORD } from '../../dtype/sentinels.js'
import type { RankControl } from './control.js'
import { regionBase } from './layout.js'
import { LaneAccumulator, type LlChannel } from './ll-channel.js'

const SENTINEL = SENTINEL_WORD | 0

/** Deliberately broken variants, only for the test that proves the re-arm is load-bearing. */
export interface SentinelTestFaults {
  /** Leave the slot holding the data after reading it. */
  skipRearm?: boolean
}

export class SentinelBuffer implements LlChannel {
  codec: DtypeCodec = DTYPE_CODECS.f32
  private readonly i32: Int32Array
  private readonly control: RankControl
  private readonly slotsPerPeer: number
  private readonly halfStride: number
  private readonly regionIndex: number[]
  private acc: LaneAccumulator
  private readonly faults: SentinelTestFaults

  constructor(sab: SharedArrayBuffer, control: RankControl, faults: SentinelTestFaults = {}) {
    const layout = control.layout
    this.i32 = new Int32Array(sab)
    this.control = control
    this.slotsPerPeer = layout.slotsPerPeer
    this.halfStride = layout.ranks * layout.slotsPerPeer
    this.regionIndex = []
    for (let r = 0; r < layout.ranks; r++) this.regionIndex.push((regionBase(layout, r) + layout.sentinelOffset) / 4)
    this.acc = new LaneAccumulator(DTYPE_CODECS.f32)
    this.faults = faults
  }

  private index(owner: number, from: number, slot: number): number {
    return this.regionIndex[owner] + (this.control.epoch & 1) * this.halfStride + from * this.slotsPerPeer + slot
  }

  send(peer: number, slot: number, word: number): void {
    // Canonicalize first: a value equal to the sentinel would never be seen as data (NaN in, NaN out, no hang).
    // SC store: the reader's SC load that sees it sees the whole word.
    Atomics.store(this.i32, this.index(peer, this.control.rank, slot), this.codec.canonicalizeWord(word))
    this.control.markWritten(peer)
  }

  bcast(peers: readonly number[], slot: number, word: number): void {
    const canonical = this.codec.canonicalizeWord(word)
    for (let i = 0; i < peers.length; i++) {
      Atomics.store(this.i32, this.index(peers[i], this.control.rank, slot), canonical)
      this.control.markWritten(peers[i])
    }
  }

  recv(peer: number, slot: number): number {
    const index = this.index(this.control.rank, peer, slot)
    let word = Atomics.load(this.i32, index)
    if (word === SENTINEL) {
      this.control.waitUntil(
        () => {
          word = Atomics.load(this.i32, index)
          return word !== SENTINEL
        },
        peer,
        () => `sentinel recv slot ${slot}`,
      )
    }
    // Re-arm. It must be ordered before the peer's next write to this slot, which is at a later use of this
    // half (epoch+2 or later). Atomics are sequentially consistent and the re-arm precedes in program order
    // everything we send after it; the peer writes this slot again only after receiving something we send
    // later in this or the next epoch (each algorithm names that message beside its sends), so in the single
    // total order the re-arm comes before that write and cannot erase it.
    if (!this.faults.skipRearm) Atomics.store(this.i32, index, SENTINEL)
    return word >>> 0
  }

  recvReduce(peers: readonly number[], slot: number): number {
    if (this.acc.codec !== this.codec) this.acc = new LaneAccumulator(this.codec)
    const acc = this.acc
    acc.clear()
    for (let i = 0; i < peers.length; i++) acc.add(this.recv(peers[i], slot))
    return acc.take()
  }

  flush(): void {
    this.control.ringDoorbells()
  }

  reset(): void {
    const first = this.regionIndex[this.control.rank]
    this.i32.fill(SENTINEL, first, first + 2 * this.halfStride)
  }

  resetRange(first: number, count: number): void {
    const base = this.regionIndex[this.control.rank]
    for (let h = 0; h < 2; h++) {
      for (let p = 0; p < this.control.size; p++) {
        const start = base + h * this.halfStride + p * this.slotsPerPeer + first
        this.i32.fill(SENTINEL, start, start + count)
      }
    }
  }

  advanceEpoch(): number {
    return this.control.advanceEpoch()
  }
}
