/**
 * Sentinel slots: plain 32-bit data words, pre-filled with SENTINEL_WORD. A reader polls until the bits differ
 * (bits, never floats), takes the word and re-arms the slot. Full payload efficiency; the price is the re-arm
 * and the rule that a sender canonicalizes a value whose bits equal the sentinel.
 */
import { DTYPE_CODECS, type DtypeCodec } from '../../dtype/codec.js'
import { SENTINEL_WORD } from '../../dtype/sentinels.js'
import { type ChannelMemory, regionBase } from './layout.js'
import { LaneAccumulator, type LlChannel, RangeReduction, ranksAfter } from './ll-buffer.js'
import type { RankControl } from './wait.js'

const SENTINEL = SENTINEL_WORD | 0
const SENTINEL_LANE = SENTINEL_WORD & 0xffff

/** True when canonicalizeWord may change `w`: some 16-bit half equals the sentinel lane (f32: a superset test). */
function mayHoldSentinel(w: number): boolean {
  return (w & 0xffff) === SENTINEL_LANE || w >>> 16 === SENTINEL_LANE
}

/** True when no word of `words` can need canonicalizing (mayHoldSentinel is false for all). */
function holdsNoSentinel(words: Int32Array): boolean {
  for (let i = 0; i < words.length; i++) if (mayHoldSentinel(words[i])) return false
  return true
}

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
  /** Every rank but us, starting after us (bcast's order), and every rank in rank order (recvReduce's). */
  private readonly others: number[]
  private readonly allRanks: number[]
  /** Per-rank scratch of recvReduceRange: f32 accumulators (one per lane) and the raw words of one peer. */
  private readonly rangeReduction = new RangeReduction()

  constructor(sab: ChannelMemory, control: RankControl, faults: SentinelTestFaults = {}) {
    const layout = control.layout
    this.i32 = new Int32Array(sab)
    this.control = control
    this.slotsPerPeer = layout.slotsPerPeer
    this.halfStride = layout.ranks * layout.slotsPerPeer
    this.regionIndex = []
    for (let r = 0; r < layout.ranks; r++) this.regionIndex.push((regionBase(layout, r) + layout.sentinelOffset) / 4)
    this.acc = new LaneAccumulator(DTYPE_CODECS.f32)
    this.faults = faults
    this.others = ranksAfter(control.rank, layout.ranks)
    this.allRanks = Array.from({ length: layout.ranks }, (_, r) => r)
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

  bcast(slot: number, word: number): void {
    const canonical = this.codec.canonicalizeWord(word)
    const peers = this.others
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

  recvReduce(slot: number, own: number): number {
    if (this.acc.codec !== this.codec) this.acc = new LaneAccumulator(this.codec)
    const acc = this.acc
    acc.clear()
    const me = this.control.rank
    // Our own word canonicalized as a sent one would be, so every rank reduces the same bits (CUDA: Fmt::canonicalize).
    for (let r = 0; r < this.control.size; r++)
      acc.add(r === me ? this.codec.canonicalizeWord(own) : this.recv(r, slot))
    return acc.take()
  }

  /**
   * send for slots [firstSlot, firstSlot + words.length): plain stores for every slot but the last (one bulk copy
   * when no word needs canonicalizing), then one SC store of the last slot (the range's release point).
   * - Values: an Int32Array element store is tear-free, so a reader's SC load of a slot returns either the
   *   sentinel or the whole word, whichever store it sees; each slot is its own flag, as with per-slot SC stores.
   * - Acknowledgement: every receiver reads whole ranges (recvRange), so the SC load of our last slot reads from
   *   our SC store: it synchronizes with it, and everything we did before in program order (our re-arms
   *   included) happens-before what the receiver does next, such as writing our slots again.
   * - No stale read: a slot is written once per use of its half, after the receiver's re-arm of its previous use
   *   (the contract in ll-buffer.ts); the receiver's own re-arm happens-before its next read, so coherence rules
   *   out reading the value of two uses ago.
   */
  sendRange(peer: number, firstSlot: number, words: Int32Array): void {
    this.writeRange(peer, firstSlot, words, holdsNoSentinel(words))
  }

  /** sendRange to every rank but us, starting after us (as bcast; the words are scanned for the sentinel once). */
  bcastRange(firstSlot: number, words: Int32Array): void {
    const peers = this.others
    const clean = holdsNoSentinel(words)
    for (let k = 0; k < peers.length; k++) this.writeRange(peers[k], firstSlot, words, clean)
  }

  /** sendRange's stores. `clean`: no word needs canonicalizing, so all but the last go as one bulk copy. */
  private writeRange(peer: number, firstSlot: number, words: Int32Array, clean: boolean): void {
    const n = words.length
    if (n === 0) return
    const i32 = this.i32
    const codec = this.codec
    const base = this.index(peer, this.control.rank, firstSlot)
    if (clean) {
      i32.set(words.subarray(0, n - 1), base)
    } else {
      for (let i = 0; i < n - 1; i++) {
        const w = words[i]
        i32[base + i] = mayHoldSentinel(w) ? codec.canonicalizeWord(w) | 0 : w
      }
    }
    const last = words[n - 1]
    Atomics.store(i32, base + n - 1, mayHoldSentinel(last) ? codec.canonicalizeWord(last) | 0 : last)
    this.control.markWritten(peer)
  }

  /**
   * recv of slots [firstSlot, firstSlot + out.length) from `peer` into `out`, then the whole range re-armed at once.
   * - First one SC load of the last slot (a bounded wait while it is armed). sendRange stores that slot last, with
   *   an SC store after plain stores of the others: our SC load reads from it, so it synchronizes with it, and
   *   every earlier slot's store happens-before the plain loads below. Those loads are therefore not racing and
   *   see the data (an SC load costs about 8 ns in V8 against 1 ns for a plain one: 2026-11-29, 2-core VM).
   * - A slot that still reads as the sentinel (a sender that used per-slot `send`, in another order) falls back
   *   to the per-slot SC wait. A plain load never returns the value of two uses ago: our own re-arm of that use
   *   happens-before it (program order), and coherence forbids reading a write older than one that precedes it.
   * - The re-arm is one plain fill. It precedes in program order the SC store of every message we send
   *   afterwards, and the peer writes these slots again only after an SC load that sees one of those messages
   *   (acknowledgement rule), so the fill happens-before the peer's next write and cannot erase it (the same
   *   argument as `recv`'s per-slot re-arm).
   */
  recvRange(peer: number, firstSlot: number, out: Int32Array): void {
    const n = out.length
    if (n === 0) return
    const i32 = this.i32
    const base = this.index(this.control.rank, peer, firstSlot)
    if (Atomics.load(i32, base + n - 1) === SENTINEL) this.waitArmed(base + n - 1, peer, firstSlot + n - 1)
    for (let i = 0; i < n; i++) {
      let w = i32[base + i]
      if (w === SENTINEL) w = this.waitArmed(base + i, peer, firstSlot + i)
      out[i] = w
    }
    if (!this.faults.skipRearm) i32.fill(SENTINEL, base, base + n)
  }

  /**
   * recvReduce for slots [firstSlot, firstSlot + out.length): every rank in rank order 0..N-1, lane-wise f32 sums
   * (a Float32Array element store rounds exactly as Math.fround), rounded once to the dtype into `out`; our own
   * words from `own` (length out.length; the caller sends to every rank but itself). Bitwise the same result as
   * recvReduce per slot (a sentinel-pattern word is a NaN either way, and NaN results are canonical).
   */
  recvReduceRange(firstSlot: number, out: Int32Array, own: Int32Array): void {
    this.rangeReduction.reduce(this, this.codec, this.control.rank, this.allRanks, firstSlot, out, own)
  }

  /**
   * Waits for the last slot of each peer's range (sendRange stores it last, with the range's release point), the
   * latest peer first (RankControl.waitForAll). Our own slots count too unless `skip` is our rank.
   */
  awaitRanges(peers: readonly number[], skip: number, firstSlot: number, count: number): void {
    if (count === 0) return
    this.awaitedLastSlot = firstSlot + count - 1
    this.control.waitForAll(peers, skip, this.lastSlotArrived, this.waitLastSlot)
  }

  /** awaitRanges' state and callbacks, made once (a wait runs on every call: no closure per call). */
  private awaitedLastSlot = 0
  private readonly lastSlotArrived = (p: number): boolean =>
    Atomics.load(this.i32, this.index(this.control.rank, p, this.awaitedLastSlot)) !== SENTINEL
  private readonly waitLastSlot = (p: number): void => {
    this.waitArmed(this.index(this.control.rank, p, this.awaitedLastSlot), p, this.awaitedLastSlot)
  }

  /** Slow path of recvRange: bounded wait until the slot at `index` holds data; returns the word. */
  private waitArmed(index: number, peer: number, slot: number): number {
    let word = SENTINEL
    this.control.waitUntil(
      () => {
        word = Atomics.load(this.i32, index)
        return word !== SENTINEL
      },
      peer,
      () => `sentinel recv slot ${slot}`,
    )
    return word
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
