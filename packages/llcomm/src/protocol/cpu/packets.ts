/**
 * LL8: 4 B data + 4 B flag in one aligned 64-bit Atomics.store on a BigUint64Array (single-copy atomic: a reader
 * sees the whole packet or none of it). The flag is the sender's epoch, so a stale packet from epoch e-2 in the
 * same half never matches and the buffer never needs resetting between calls. Payload efficiency is 50%.
 */
import { DTYPE_CODECS, type DtypeCodec } from '../../dtype/codec.js'
import { type ChannelMemory, regionBase } from './layout.js'
import { LaneAccumulator, type LlChannel, RangeReduction, ranksAfter } from './ll-buffer.js'
import type { RankControl } from './wait.js'

const TWO_POW_32 = 1n << 32n
const DATA_MASK = 0xffffffffn

/** Deliberately broken variants, only for the test that proves the checks are load-bearing. */
export interface Ll8TestFaults {
  /** Accept any non-zero flag instead of exactly the current epoch. */
  ignoreEpochInFlag?: boolean
}

export class Ll8Buffer implements LlChannel {
  codec: DtypeCodec = DTYPE_CODECS.f32
  private readonly u64: BigUint64Array
  private readonly control: RankControl
  private readonly slotsPerPeer: number
  private readonly halfStride: number
  private readonly regionIndex: number[]
  private cachedEpoch = -1
  private flagLow = 0n
  private flagHigh = 0n
  private acc: LaneAccumulator
  private readonly bases: Int32Array
  private readonly faults: Ll8TestFaults
  /** Every rank but us, starting after us (bcast's order), and every rank in rank order (recvReduce's). */
  private readonly others: number[]
  private readonly allRanks: number[]
  /** Per-rank scratch of recvReduceRange: f32 accumulators (one per lane) and the raw words of one peer. */
  private readonly rangeReduction = new RangeReduction()

  constructor(sab: ChannelMemory, control: RankControl, faults: Ll8TestFaults = {}) {
    const layout = control.layout
    this.u64 = new BigUint64Array(sab)
    this.control = control
    this.slotsPerPeer = layout.slotsPerPeer
    this.halfStride = layout.ranks * layout.slotsPerPeer
    this.regionIndex = []
    for (let r = 0; r < layout.ranks; r++) this.regionIndex.push((regionBase(layout, r) + layout.ll8Offset) / 8)
    this.acc = new LaneAccumulator(DTYPE_CODECS.f32)
    this.bases = new Int32Array(layout.ranks)
    this.faults = faults
    this.others = ranksAfter(control.rank, layout.ranks)
    this.allRanks = Array.from({ length: layout.ranks }, (_, r) => r)
  }

  private refreshEpoch(): void {
    const e = this.control.epoch
    this.cachedEpoch = e
    this.flagLow = BigInt(e) << 32n
    this.flagHigh = this.flagLow + TWO_POW_32
  }

  private index(owner: number, from: number, slot: number): number {
    return this.regionIndex[owner] + (this.control.epoch & 1) * this.halfStride + from * this.slotsPerPeer + slot
  }

  send(peer: number, slot: number, word: number): void {
    if (this.cachedEpoch !== this.control.epoch) this.refreshEpoch()
    // One 64-bit SC store: data and flag become visible together (no separate flag store to order).
    Atomics.store(this.u64, this.index(peer, this.control.rank, slot), this.flagLow | BigInt(word >>> 0))
    this.control.markWritten(peer)
  }

  bcast(slot: number, word: number): void {
    if (this.cachedEpoch !== this.control.epoch) this.refreshEpoch()
    const packet = this.flagLow | BigInt(word >>> 0) // built once, stored to every peer (one SC store each)
    const peers = this.others
    for (let i = 0; i < peers.length; i++) {
      Atomics.store(this.u64, this.index(peers[i], this.control.rank, slot), packet)
      this.control.markWritten(peers[i])
    }
  }

  private isCurrent(packet: bigint): boolean {
    if (this.faults.ignoreEpochInFlag) return packet >= TWO_POW_32
    return packet >= this.flagLow && packet < this.flagHigh
  }

  recv(peer: number, slot: number): number {
    if (this.cachedEpoch !== this.control.epoch) this.refreshEpoch()
    const index = this.index(this.control.rank, peer, slot)
    let packet = Atomics.load(this.u64, index)
    if (!this.isCurrent(packet)) {
      // The flag must equal our epoch exactly: data and flag arrive in one store, so a matching flag proves the
      // data word is this epoch's. Nothing to re-arm: the next use of this half carries epoch+2.
      this.control.waitUntil(
        () => {
          packet = Atomics.load(this.u64, index)
          return this.isCurrent(packet)
        },
        peer,
        () => `ll8 recv slot ${slot} (flag ${packet >> 32n})`,
      )
    }
    return Number(packet & 0xffffffffn)
  }

  recvReduce(slot: number, own: number): number {
    const acc = this.accumulator()
    acc.clear()
    const me = this.control.rank
    for (let r = 0; r < this.control.size; r++) acc.add(r === me ? own : this.recv(r, slot))
    return acc.take()
  }

  private accumulator(): LaneAccumulator {
    if (this.acc.codec !== this.codec) this.acc = new LaneAccumulator(this.codec)
    return this.acc
  }

  /**
   * send for slots [firstSlot, firstSlot + words.length): one 64-bit SC packet store per slot as in `send`
   * (the BigInt packet is the price of the single-copy 64-bit store), index and flag hoisted out of the loop.
   */
  sendRange(peer: number, firstSlot: number, words: Int32Array): void {
    if (this.cachedEpoch !== this.control.epoch) this.refreshEpoch()
    const u64 = this.u64
    const flag = this.flagLow
    const base = this.index(peer, this.control.rank, firstSlot)
    for (let i = 0; i < words.length; i++) Atomics.store(u64, base + i, flag | BigInt(words[i] >>> 0))
    this.control.markWritten(peer)
  }

  /** sendRange to every rank but us, starting after us (as bcast): each packet is built once, stored to every peer. */
  bcastRange(firstSlot: number, words: Int32Array): void {
    const peers = this.others
    if (this.cachedEpoch !== this.control.epoch) this.refreshEpoch()
    const u64 = this.u64
    const flag = this.flagLow
    const rank = this.control.rank
    const bases = this.bases
    for (let k = 0; k < peers.length; k++) {
      bases[k] = this.index(peers[k], rank, firstSlot)
      this.control.markWritten(peers[k])
    }
    for (let i = 0; i < words.length; i++) {
      const packet = flag | BigInt(words[i] >>> 0)
      for (let k = 0; k < peers.length; k++) Atomics.store(u64, bases[k] + i, packet)
    }
  }

  /**
   * recv of slots [firstSlot, firstSlot + out.length) from `peer`: one 64-bit SC load per packet, compared
   * against the precomputed flag range of our epoch (flag == epoch exactly); the data half is extracted only
   * from a packet whose flag matched, so data and flag always come from the same single-copy store.
   */
  recvRange(peer: number, firstSlot: number, out: Int32Array): void {
    if (this.cachedEpoch !== this.control.epoch) this.refreshEpoch()
    const u64 = this.u64
    const low = this.flagLow
    const high = this.flagHigh
    const anyFlag = this.faults.ignoreEpochInFlag === true
    const base = this.index(this.control.rank, peer, firstSlot)
    // Wait for the last packet first: sendRange/bcastRange store it last, so once it is there the rest is too,
    // and the loop below reads without chasing a writer that is still storing (each packet is still checked).
    const lastIndex = base + out.length - 1
    if (out.length > 1 && !this.isCurrent(Atomics.load(u64, lastIndex)))
      this.waitPacket(lastIndex, peer, firstSlot + out.length - 1)
    for (let i = 0; i < out.length; i++) {
      let packet = Atomics.load(u64, base + i)
      if (anyFlag ? packet < TWO_POW_32 : packet < low || packet >= high) {
        packet = this.waitPacket(base + i, peer, firstSlot + i)
      }
      out[i] = Number(packet & DATA_MASK)
    }
  }

  /**
   * recvReduce for slots [firstSlot, firstSlot + out.length): every rank in rank order 0..N-1, our own words from
   * `own` (length out.length); bitwise the same as recvReduce per slot.
   */
  recvReduceRange(firstSlot: number, out: Int32Array, own: Int32Array): void {
    this.rangeReduction.reduce(this, this.codec, this.control.rank, this.allRanks, firstSlot, out, own)
  }

  /** Waits for the last packet of each peer's range, the latest peer first (as SentinelBuffer.awaitRanges). */
  awaitRanges(peers: readonly number[], skip: number, firstSlot: number, count: number): void {
    if (count === 0) return
    if (this.cachedEpoch !== this.control.epoch) this.refreshEpoch()
    this.awaitedLastSlot = firstSlot + count - 1
    this.control.waitForAll(peers, skip, this.lastPacketArrived, this.waitLastPacket)
  }

  /** awaitRanges' state and callbacks, made once (a wait runs on every call: no closure per call). */
  private awaitedLastSlot = 0
  private readonly lastPacketArrived = (p: number): boolean =>
    this.isCurrent(Atomics.load(this.u64, this.index(this.control.rank, p, this.awaitedLastSlot)))
  private readonly waitLastPacket = (p: number): void => {
    this.waitPacket(this.index(this.control.rank, p, this.awaitedLastSlot), p, this.awaitedLastSlot)
  }

  /** Slow path of recvRange: bounded wait for a packet of our epoch at `index`; returns it. */
  private waitPacket(index: number, peer: number, slot: number): bigint {
    let packet = 0n
    this.control.waitUntil(
      () => {
        packet = Atomics.load(this.u64, index)
        return this.isCurrent(packet)
      },
      peer,
      () => `ll8 recv slot ${slot} (flag ${packet >> 32n})`,
    )
    return packet
  }

  flush(): void {
    this.control.ringDoorbells()
  }

  reset(): void {
    const first = this.regionIndex[this.control.rank]
    this.u64.fill(0n, first, first + 2 * this.halfStride)
    this.cachedEpoch = -1
  }

  resetRange(first: number, count: number): void {
    const base = this.regionIndex[this.control.rank]
    for (let h = 0; h < 2; h++) {
      for (let p = 0; p < this.control.size; p++) {
        const start = base + h * this.halfStride + p * this.slotsPerPeer + first
        this.u64.fill(0n, start, start + count)
      }
    }
  }

  advanceEpoch(): number {
    return this.control.advanceEpoch()
  }
}
