/**
 * The per-call header slot of the CPU channel (issue 18 item 1; CUDA: kernels/llcomm/signature.cuh): at every epoch
 * each rank stores its call signature (src/protocol/call-signature.ts: two 32-bit words) into every peer's signature
 * region, and checks every peer's signature before it uses any of that epoch's data. The region is the same for
 * every algorithm, so a peer that runs another algorithm, dtype, count or chunk is caught at the first chunk where
 * the two differ, instead of being read as data (or waited for until a TIMEOUT).
 *
 * Format: LL8 packets (packets.ts), one per signature word: data in the low 32 bits, the sender's epoch in the
 * high 32 bits, stored with one 64-bit SC Atomics.store (single-copy atomic). A packet whose flag is not exactly our
 * epoch is not this epoch's, so the region never needs re-arming (a stale packet of epoch e-2 in the same half never
 * matches) and a zero-filled region holds no signature (epochs start at 1).
 *
 * Memory ordering:
 *  - publish() runs first in every chunk, before any data store of the chunk, and before any wait. So a peer never
 *    waits for data from a rank that has not yet published its signature: the header wait ends (or finds the
 *    mismatch) whenever the peer is at the same epoch at all.
 *  - check() runs before the first read of the chunk's data (each algorithm calls it before its first receive or
 *    barrier; runChunked calls it again after the chunk, a no-op unless an algorithm forgot). Each packet is loaded
 *    with an SC load and accepted only with our epoch in its flag; data and flag come from one store, so an accepted
 *    packet's data is the peer's signature of this epoch.
 *  - Overwriting half h at epoch e is safe for the same reason as an LL8 data packet: the peer read our epoch e-2
 *    packet of half h before it used epoch e-2 data, and we reach epoch e only after finishing epoch e-1, which needs
 *    data the peer sent at epoch e-1, after its epoch e-2 check (the completion invariant, ll-buffer.ts).
 *  - Cost: 2(N-1) 64-bit stores and 2(N-1) loads per chunk. The peer stores its signature before its data, so the
 *    check usually finds every packet there and does not wait; when it waits, it waits for the latest peer
 *    (RankControl.waitForAll) as the data receive would have.
 */

import { LlcommError, mismatchError } from '../../errors.js'
import { decodeSignature, describeSignature } from '../call-signature.js'
import { type ChannelMemory, regionBase, SIGNATURE_PACKETS } from './layout.js'
import type { RankControl } from './wait.js'

const DATA_MASK = 0xffffffffn

/** Deliberately broken variant, only for the tests that prove the other checks are load-bearing on their own. */
export interface SignatureTestFaults {
  /**
   * Publish but never check. The check waits until every peer has started the epoch, which also narrows the window
   * in which a broken flag or re-arm check can read stale data: the ordering tests switch it off to see those.
   */
  skipSignatureCheck?: boolean
}

export class SignatureSlots {
  private readonly u64: BigUint64Array
  private readonly control: RankControl
  private readonly regionIndex: number[]
  private readonly halfStride: number
  private readonly peers: number[]
  /** This epoch's own signature words, and the epoch they were published for (0: none this epoch). */
  private word0 = 0
  private word1 = 0
  private publishedEpoch = 0
  private checkedEpoch = 0

  private readonly faults: SignatureTestFaults

  constructor(sab: ChannelMemory, control: RankControl, faults: SignatureTestFaults = {}) {
    this.faults = faults
    const layout = control.layout
    this.u64 = new BigUint64Array(sab)
    this.control = control
    this.halfStride = layout.ranks * SIGNATURE_PACKETS
    this.regionIndex = []
    for (let r = 0; r < layout.ranks; r++) this.regionIndex.push((regionBase(layout, r) + layout.signatureOffset) / 8)
    this.peers = []
    for (let p = 0; p < layout.ranks; p++) if (p !== control.rank) this.peers.push(p)
  }

  private index(owner: number, from: number, word: number): number {
    return this.regionIndex[owner] + (this.control.epoch & 1) * this.halfStride + from * SIGNATURE_PACKETS + word
  }

  /** Store our signature of the current epoch into every peer's region (first thing of every chunk). */
  publish(word0: number, word1: number): void {
    const epoch = this.control.epoch
    this.word0 = word0 >>> 0
    this.word1 = word1 >>> 0
    this.publishedEpoch = epoch
    const flag = BigInt(epoch) << 32n
    const a = flag | BigInt(this.word0)
    const b = flag | BigInt(this.word1)
    const me = this.control.rank
    for (let k = 0; k < this.peers.length; k++) {
      const p = this.peers[k]
      // One 64-bit SC store per word: data and epoch become visible together (no separate flag to order).
      Atomics.store(this.u64, this.index(p, me, 0), a)
      Atomics.store(this.u64, this.index(p, me, 1), b)
      this.control.markWritten(p)
    }
  }

  /**
   * Waits (bounded) for every peer's signature of this epoch and throws MISMATCH naming both ranks and both
   * signatures at the first one that differs from ours; TIMEOUT (naming the peer) when a peer never publishes.
   * Idempotent within an epoch.
   */
  check(): void {
    const epoch = this.control.epoch
    if (this.checkedEpoch === epoch || this.publishedEpoch !== epoch || this.faults.skipSignatureCheck) return
    // Our doorbells first: the check may throw MISMATCH before any wait of ours would ring them, and a peer asleep
    // on our signature (AWAITED_PEER = us) must wake to see it, or it sleeps until its deadline. Usually a no-op:
    // the algorithms flush their sends before they check.
    this.control.ringDoorbells()
    this.control.waitForAll(this.peers, -1, this.arrivedAndEqual, this.waitPeer)
    this.checkedEpoch = epoch
  }

  /** Forget the epochs (reset: the epoch goes back to 0). */
  reset(): void {
    this.publishedEpoch = 0
    this.checkedEpoch = 0
    const first = this.regionIndex[this.control.rank]
    this.u64.fill(0n, first, first + 2 * this.halfStride)
  }

  /**
   * Without waiting: the MISMATCH this rank would have found itself, from the signatures already published for the
   * current epoch, or undefined. For a rank whose wait was cut short by a peer's MISMATCH (the channel was
   * poisoned), so that it too names the odd rank and both signatures.
   */
  diagnose(): LlcommError | undefined {
    if (this.publishedEpoch !== this.control.epoch) return undefined
    for (const peer of this.peers) {
      try {
        this.arrivedAndEqual(peer)
      } catch (e) {
        if (e instanceof LlcommError && e.code === 'MISMATCH') return e
        throw e
      }
    }
    return undefined
  }

  private load(peer: number, word: number): bigint {
    return Atomics.load(this.u64, this.index(this.control.rank, peer, word))
  }

  /** True when both of `peer`'s packets carry this epoch; throws MISMATCH when they do and differ from ours. */
  private readonly arrivedAndEqual = (peer: number): boolean => {
    const flag = BigInt(this.control.epoch)
    const a = this.load(peer, 0)
    const b = this.load(peer, 1)
    if (a >> 32n !== flag || b >> 32n !== flag) return false
    const t0 = Number(a & DATA_MASK)
    const t1 = Number(b & DATA_MASK)
    if (t0 !== this.word0 || t1 !== this.word1) {
      throw mismatchError({
        rank: this.control.rank,
        peer,
        epoch: this.control.epoch,
        mine: describeSignature(decodeSignature(this.word0, this.word1)),
        theirs: describeSignature(decodeSignature(t0, t1)),
        mineWords: [this.word0, this.word1],
        theirsWords: [t0, t1],
      })
    }
    return true
  }

  private readonly waitPeer = (peer: number): void => {
    this.control.waitUntil(
      () => this.arrivedAndEqual(peer),
      peer,
      () => `call signature of rank ${peer}`,
    )
  }
}
