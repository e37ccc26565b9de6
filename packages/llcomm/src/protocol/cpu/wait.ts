/**
 * One rank's control words and its bounded waits. The epoch lives in the shared memory and only the rank itself
 * advances it (no host-side counter ranks must agree on). Waits spin `spinIterations` times, then block in
 * Atomics.wait on the rank's doorbell, so progress never depends on having a core per rank.
 */
import { LlcommError, type LlcommErrorCode } from '../../errors.js'
import { type ChannelLayout, type ChannelMemory, CONTROL, controlIndex, POISON_KIND } from './layout.js'

const POISON_CODES: Readonly<Record<number, LlcommErrorCode>> = {
  [POISON_KIND.TIMEOUT]: 'TIMEOUT',
  [POISON_KIND.MISMATCH]: 'MISMATCH',
  [POISON_KIND.WORKER_FAILED]: 'WORKER_FAILED',
  [POISON_KIND.OTHER]: 'WORKER_FAILED',
  [POISON_KIND.PEER_FAILED]: 'PEER_FAILED',
}

export interface WaitOptions {
  spinIterations: number
  timeoutMs: number
  /**
   * How a waiter blocks and a writer wakes it, when not Atomics.wait / Atomics.notify: memory shared between
   * processes is not a SharedArrayBuffer, so Atomics.wait refuses it and a futex takes its place
   * (src/backends/cpu/process-channel.ts). Same contract: wait(index, expected) returns at once when the word
   * no longer holds `expected`, and a wake after a change of the word is never lost.
   */
  doorbell?: DoorbellWaiter
  /**
   * Whether a peer still runs (one process per rank): checked about every LIVENESS_CHECK_MS while waiting; a
   * dead peer ends the wait with PEER_FAILED naming rank, peer and epoch instead of a TIMEOUT at the deadline.
   */
  peerAlive?: (peer: number) => boolean
}

export interface DoorbellWaiter {
  /** Blocks while word `index` of the channel holds `expected`, at most `timeoutMs`. */
  wait(index: number, expected: number, timeoutMs: number): void
  /** Wakes every waiter on word `index`. */
  wake(index: number): void
}

/** Interval between two liveness checks of the awaited peers while a wait goes on (peerAlive only). */
export const LIVENESS_CHECK_MS = 100

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
  private readonly doorbell: DoorbellWaiter | undefined
  private readonly peerAlive: ((peer: number) => boolean) | undefined

  constructor(sab: ChannelMemory, layout: ChannelLayout, rank: number, wait: WaitOptions) {
    this.rank = rank
    this.size = layout.ranks
    this.layout = layout
    this.i32 = new Int32Array(sab)
    this.spinIterations = wait.spinIterations
    this.timeoutMs = wait.timeoutMs
    this.doorbell = wait.doorbell
    this.peerAlive = wait.peerAlive
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
      if (awaited === this.rank || awaited < 0) {
        if (this.doorbell) this.doorbell.wake(bell)
        else Atomics.notify(i32, bell)
      }
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
    let nextLivenessCheck = 0
    for (let i = 0; i < this.spinIterations; i++) {
      if (ready()) return
      if ((i & (SPINS_PER_DEADLINE_CHECK - 1)) === SPINS_PER_DEADLINE_CHECK - 1) {
        this.checkAbort(peer, waitingFor)
        const now = performance.now()
        if (deadline === 0) {
          deadline = now + this.timeoutMs
          nextLivenessCheck = now + LIVENESS_CHECK_MS
        } else if (now > deadline) break
        if (this.peerAlive && now >= nextLivenessCheck) {
          nextLivenessCheck = now + LIVENESS_CHECK_MS
          if (ready()) return
          this.throwIfPeerDead(peer, waitingFor)
        }
      }
    }
    if (deadline === 0) {
      deadline = performance.now() + this.timeoutMs
      nextLivenessCheck = performance.now() + LIVENESS_CHECK_MS
    }
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
        // After the doorbell read: a poisoner or closer stores its word, then notifies every doorbell, so either
        // we see the word here or its notify (after our doorbell read) ends the Atomics.wait below.
        this.checkAbort(peer, waitingFor)
        const leftMs = deadline - performance.now()
        if (leftMs <= 0) {
          throw LlcommError.timeout({
            rank: this.rank,
            peer: peer >= 0 ? peer : this.laggardPeer(),
            epoch: this.epoch,
            waitingFor: waitingFor(),
          })
        }
        if (this.peerAlive) {
          // Sleep in slices, so that a dead peer is noticed long before the deadline (re-checked after ready()).
          const now = performance.now()
          if (now >= nextLivenessCheck) {
            nextLivenessCheck = now + LIVENESS_CHECK_MS
            this.throwIfPeerDead(peer, waitingFor)
          }
          const sliceMs = Math.min(leftMs, Math.max(1, nextLivenessCheck - now))
          if (this.doorbell) this.doorbell.wait(bellIndex, bell, sliceMs)
          else Atomics.wait(i32, bellIndex, bell, sliceMs)
        } else if (this.doorbell) this.doorbell.wait(bellIndex, bell, leftMs)
        else Atomics.wait(i32, bellIndex, bell, leftMs)
      }
    } finally {
      // Only an extra notify can follow from a stale 1, never a missed one; cleared so writers skip it.
      Atomics.store(i32, sleepingIndex, 0)
    }
  }

  /**
   * PEER_FAILED when the awaited peer (every peer, for a wait that names none) no longer runs. Called only after
   * ready() was seen false, so data a peer wrote before it died is still taken, never skipped.
   */
  private throwIfPeerDead(peer: number, waitingFor: () => string): void {
    const alive = this.peerAlive
    if (!alive) return
    for (let p = 0; p < this.size; p++) {
      if (p === this.rank || (peer >= 0 && p !== peer) || alive(p)) continue
      throw new LlcommError(
        'PEER_FAILED',
        `rank ${this.rank}: peer ${p} died while rank ${this.rank} waited for it at epoch ${this.epoch} (${waitingFor()})`,
        { rank: this.rank, peer: p, epoch: this.epoch, waitingFor: waitingFor() },
      )
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

  /**
   * Throws at once when the channel is closed (CLOSED) or poisoned by a failed call of another rank (that failure's
   * code, naming the rank that failed): no wait outlives the call it serves. SC loads; see CONTROL.POISONED.
   */
  /** The POISON_KIND the channel is poisoned with, or 0 (SC load; see CONTROL.POISONED). */
  poisonKind(): number {
    return Atomics.load(this.i32, controlIndex(0, CONTROL.POISONED))
  }

  checkAbort(peer: number, waitingFor?: () => string): void {
    const i32 = this.i32
    if (Atomics.load(i32, controlIndex(0, CONTROL.CHANNEL_CLOSED)) !== 0) {
      throw new LlcommError('CLOSED', `rank ${this.rank}: the communicator was closed during the call`, {
        rank: this.rank,
        epoch: this.epoch,
      })
    }
    const kind = Atomics.load(i32, controlIndex(0, CONTROL.POISONED))
    if (kind !== 0) {
      const failed = Atomics.load(i32, controlIndex(0, CONTROL.POISON_RANK))
      if (kind === POISON_KIND.PEER_FAILED) {
        // One process per rank: a peer found another's process dead; every rank names the dead one.
        throw new LlcommError(
          'PEER_FAILED',
          `rank ${this.rank} stopped waiting at epoch ${this.epoch}: the process of rank ${failed} died`,
          { rank: this.rank, peer: failed, epoch: this.epoch, aborted: true },
        )
      }
      throw new LlcommError(
        POISON_CODES[kind] ?? 'WORKER_FAILED',
        `rank ${this.rank} stopped waiting at epoch ${this.epoch}: the call of rank ${failed} failed; recover() first`,
        {
          rank: this.rank,
          peer: peer >= 0 ? peer : this.laggardPeer(),
          epoch: this.epoch,
          // What this rank was waiting for when it stopped: usually the same peer and slot as the failure.
          ...(waitingFor ? { waitingFor: waitingFor() } : {}),
          failedRank: failed,
          aborted: true,
        },
      )
    }
  }

  /**
   * Poisons the channel after this rank's call failed (see CONTROL.POISONED): the first failure wins (CAS), then
   * every rank's doorbell is notified so that sleeping waiters re-check at once.
   */
  poison(kind: number, subject: number = this.rank): void {
    const i32 = this.i32
    if (Atomics.load(i32, controlIndex(0, CONTROL.POISONED)) !== 0) return
    // POISON_RANK before POISONED: a waiter that sees POISONED (SC) also sees the rank. Two failing ranks may both
    // store POISON_RANK; the CAS below picks one kind, and the rank names one of the failures: diagnostics only.
    Atomics.store(i32, controlIndex(0, CONTROL.POISON_RANK), subject)
    Atomics.compareExchange(i32, controlIndex(0, CONTROL.POISONED), 0, kind)
    wakeEveryRank(i32, this.size)
  }

  /**
   * Clears the poison (recovery: no rank is in a call, and each re-arms its own buffers and epoch). SC store, made
   * before the recovery's last step, which a peer must see before its next call: in process the SC add on
   * CONTROL.RECOVERY_ARRIVALS after it (rank-view.ts recoverRank), per process the second rendezvous barrier
   * (rendezvous/recovery.ts: this rank's message after the store, the peer's next call after the host's answer).
   * Removing it fails the recovery tests: the next call stops at the poison.
   */
  clearPoison(): void {
    Atomics.store(this.i32, controlIndex(0, CONTROL.POISONED), 0)
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

/** Notifies every rank's doorbell (after a store to CONTROL.POISONED or CHANNEL_CLOSED: see checkAbort). */
export function wakeEveryRank(i32: Int32Array, ranks: number): void {
  for (let r = 0; r < ranks; r++) {
    // The add makes a waiter that read the doorbell before it, but has not blocked yet, return from Atomics.wait
    // at once (value changed); notify wakes one that has blocked.
    Atomics.add(i32, controlIndex(r, CONTROL.DOORBELL), 1)
    Atomics.notify(i32, controlIndex(r, CONTROL.DOORBELL))
  }
}
