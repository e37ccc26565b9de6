/**
 * One rank's control words and its bounded waits. The epoch lives in the shared memory and only the rank itself
 * advances it (no host-side counter ranks must agree on). Waits spin `spinIterations` times, then block in
 * Atomics.wait on the rank's doorbell, so progress never depends on having a core per rank.
 */
import { LlcommError } from '../../errors.js'
import { type ChannelLayout, CONTROL, controlIndex } from './layout.js'

export interface WaitOptions {
  spinIterations: number
  timeoutMs: number
}

/** The largest epoch before wrapping back to 1; even, so that parity keeps alternating across the wrap. */
const EPOCH_WRAP = 0xfffffffe

/** Polls between two clock reads while spinning (a power of two): performance.now() is not free. */
const SPINS_PER_DEADLINE_CHECK = 1024

export class RankControl {
  readonly rank: number
  readonly size: number
  readonly layout: ChannelLayout
  readonly i32: Int32Array
  epoch: number
  private readonly spinIterations: number
  private readonly timeoutMs: number
  private readonly dirtyPeers: Uint8Array
  private anyDirty = false

  constructor(sab: SharedArrayBuffer, layout: ChannelLayout, rank: number, wait: WaitOptions) {
    this.rank = rank
    this.size = layout.ranks
    this.layout = layout
    this.i32 = new Int32Array(sab)
    this.spinIterations = wait.spinIterations
    this.timeoutMs = wait.timeoutMs
    this.dirtyPeers = new Uint8Array(layout.ranks)
    this.epoch = Atomics.load(this.i32, controlIndex(rank, CONTROL.EPOCH)) >>> 0
  }

  /** Half of the double buffer used at the current epoch. */
  get half(): number {
    return this.epoch & 1
  }

  /**
   * Next epoch. Stored with Atomics.store only for diagnostics (timeouts name the laggard): no peer relies on
   * reading it, since every ordering between ranks goes through the flags, sentinels and counters themselves.
   */
  advanceEpoch(): number {
    this.epoch = this.epoch >= EPOCH_WRAP ? 1 : this.epoch + 1
    Atomics.store(this.i32, controlIndex(this.rank, CONTROL.EPOCH), this.epoch | 0)
    return this.epoch
  }

  /** Back to epoch 0 (only with every rank idle: see RankProtocol.reset). */
  resetEpoch(): void {
    this.epoch = 0
    Atomics.store(this.i32, controlIndex(this.rank, CONTROL.EPOCH), 0)
  }

  /** Remember that `peer`'s buffers were written, so its doorbell is rung before we block or return. */
  markWritten(peer: number): void {
    this.dirtyPeers[peer] = 1
    this.anyDirty = true
  }

  /**
   * Rings the doorbell of every peer written since the last ring: Atomics.add, then Atomics.notify only if the
   * peer's SLEEPING word is 1 and its AWAITED_PEER word names us or any writer (-1). The add is sequentially
   * consistent and comes after our data stores in program order, so a waiter that sees the new doorbell value
   * also sees the data. Skipping the notify is safe (Dekker argument on SC atomics): a waiter stores AWAITED_PEER,
   * then SLEEPING = 1, *before* it reads the doorbell value it will wait on.
   * - If our SLEEPING load returned 0, it precedes that store in the total order, so our add precedes the waiter's
   *   doorbell read: the waiter waits on the new value, and Atomics.wait returns at once (value mismatch).
   * - If it returned 1 and the waiter read the doorbell before our add, its AWAITED_PEER store also precedes our
   *   add, so our later AWAITED_PEER load sees the peer it waits for (or a newer wait's): we notify when that is
   *   us. When it names another peer, our write cannot end that wait, and that peer's own ring will notify.
   */
  ringDoorbells(): void {
    if (!this.anyDirty) return
    this.anyDirty = false
    const i32 = this.i32
    for (let p = 0; p < this.size; p++) {
      if (this.dirtyPeers[p] === 0) continue
      this.dirtyPeers[p] = 0
      const bell = controlIndex(p, CONTROL.DOORBELL)
      Atomics.add(i32, bell, 1)
      if (Atomics.load(i32, controlIndex(p, CONTROL.SLEEPING)) === 0) continue
      const awaited = Atomics.load(i32, controlIndex(p, CONTROL.AWAITED_PEER))
      if (awaited === this.rank || awaited < 0) Atomics.notify(i32, bell)
    }
  }

  /**
   * Slow path of every wait (callers test their condition inline first, so the closures are only built when
   * the data is not there yet): returns once `ready()` holds, or throws TIMEOUT naming rank, peer and epoch.
   * Spins `spinIterations` polls, reading the clock only every SPINS_PER_DEADLINE_CHECK polls, then blocks.
   * No lost wake-up: we store SLEEPING = 1, read our doorbell value `bell`, re-check `ready()`, then
   * Atomics.wait(bell). A writer stores its data, then Atomics.add's our doorbell, then loads our SLEEPING
   * word and notifies if it is 1. If its data store precedes our re-check we see the data. Otherwise its add
   * follows our doorbell read, so Atomics.wait finds the value changed and returns at once, or we are queued
   * and its SLEEPING load (after its add, so after our SLEEPING store) sees 1 and its notify wakes us (wait
   * and notify take the same waiter-list lock). Our own pending doorbells are rung first: a peer may be
   * waiting for us.
   */
  waitUntil(ready: () => boolean, peer: number, waitingFor: () => string): void {
    this.ringDoorbells()
    let deadline = 0
    for (let i = 0; i < this.spinIterations; i++) {
      if (ready()) return
      if ((i & (SPINS_PER_DEADLINE_CHECK - 1)) === SPINS_PER_DEADLINE_CHECK - 1) {
        const now = performance.now()
        if (deadline === 0) deadline = now + this.timeoutMs
        else if (now > deadline) break
      }
    }
    if (deadline === 0) deadline = performance.now() + this.timeoutMs
    const i32 = this.i32
    const bellIndex = controlIndex(this.rank, CONTROL.DOORBELL)
    const sleepingIndex = controlIndex(this.rank, CONTROL.SLEEPING)
    // The writer that can end this wait (see ringDoorbells); stored before SLEEPING, as the Dekker argument needs.
    Atomics.store(i32, controlIndex(this.rank, CONTROL.AWAITED_PEER), peer >= 0 ? peer : -1)
    try {
      for (;;) {
        Atomics.store(i32, sleepingIndex, 1)
        const bell = Atomics.load(i32, bellIndex)
        if (ready()) return
        const leftMs = deadline - performance.now()
        if (leftMs <= 0) {
          throw LlcommError.timeout({
            rank: this.rank,
            peer: peer >= 0 ? peer : this.laggardPeer(),
            epoch: this.epoch,
            waitingFor: waitingFor(),
          })
        }
        Atomics.wait(i32, bellIndex, bell, leftMs)
      }
    } finally {
      // Only an extra notify can follow from a stale 1, never a missed one; cleared so writers skip it.
      Atomics.store(i32, sleepingIndex, 0)
    }
  }

  /**
   * Waits until `arrived(p)` holds for every p in `peers` but `skip`, blocking on one peer at a time: the one
   * with the smallest epoch among those still missing, the likeliest to come last. Each block then usually
   * ends with the last arrival instead of the next one in rank order, and writers notify only the peer a
   * sleeper names (ringDoorbells), so a wait for N-1 peers costs one wake-up where it cost up to N-1.
   * `block(p)` is the bounded wait for peer p alone (it throws TIMEOUT naming p).
   */
  waitForAll(
    peers: readonly number[],
    skip: number,
    arrived: (peer: number) => boolean,
    block: (peer: number) => void,
  ): void {
    const i32 = this.i32
    for (;;) {
      let latest = -1
      let latestEpoch = 0
      for (let k = 0; k < peers.length; k++) {
        const p = peers[k]
        if (p === skip || p === this.rank || arrived(p)) continue
        // Epoch words are diagnostics only (advanceEpoch): a stale read just picks a worse peer to wait for.
        const e = Atomics.load(i32, controlIndex(p, CONTROL.EPOCH)) >>> 0
        if (latest < 0 || e < latestEpoch) {
          latest = p
          latestEpoch = e
        }
      }
      if (latest < 0) return
      block(latest)
    }
  }

  /** The peer with the smallest epoch (the likeliest missing one), for waits that cannot name a single peer. */
  laggardPeer(): number {
    let best = -1
    let bestEpoch = Number.POSITIVE_INFINITY
    for (let p = 0; p < this.size; p++) {
      if (p === this.rank) continue
      const e = Atomics.load(this.i32, controlIndex(p, CONTROL.EPOCH)) >>> 0
      if (e < bestEpoch) {
        bestEpoch = e
        best = p
      }
    }
    return best
  }
}
