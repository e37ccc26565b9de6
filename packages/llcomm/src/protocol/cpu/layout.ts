/**
 * The shared memory of one CPU channel: the CPU analogue of device memory. One SharedArrayBuffer holds every
 * rank's control words (epoch, doorbell, barrier arrivals) and every rank's receive buffers; a rank reads its
 * own buffers and writes its peers'. The layout is a pure function of (ranks, bufferBytes), so every worker
 * computes the same offsets from the two numbers.
 *
 *   control: ranks x 32 int32 (128 B per rank, so one rank's epoch and doorbell never share a line with another's)
 *   then per rank r, regionBytes each:
 *   +-------------------------------------------------------------------------------------------+
 *   | ll8      half 0: [from rank 0: P packets][from rank 1: P packets]...[from rank N-1]         |
 *   |          half 1: same                     packet = u64 { data: low 32 bits, flag: high 32 } |
 *   | sentinel half 0: [from rank 0: P words]...[from rank N-1]   (pre-filled with SENTINEL_WORD)  |
 *   |          half 1: same                                                                       |
 *   | lines    half 0: L lines x 32 int32 [counter | 31 f32 data words]   (zero-filled)            |
 *   |          half 1: same                                                                       |
 *   | staging  W int32 (oneshot-barrier publishes its chunk here)                                  |
 *   | signature half 0: [from rank 0: 2 packets]...[from rank N-1]   (u64 LL8 packets, zero-filled) |
 *   |           half 1: same       (the call signature: signature.ts, src/protocol/call-signature.ts) |
 *   +-------------------------------------------------------------------------------------------+
 *   W = bufferBytes / 4 payload words per half; P = floor(W / N) slots per peer; L = ceil(W / 31).
 * Halves alternate by epoch parity (double buffering).
 */

import { SENTINEL_WORD } from '../../dtype/sentinels.js'
import { LlcommError } from '../../errors.js'

export const CONTROL_STRIDE_WORDS = 32
/** Named control words of each rank (index within its 32-word control block). */
export const CONTROL = {
  /** This rank's epoch: advanced only by the rank itself, read by others only for timeout diagnostics. */
  EPOCH: 0,
  /** Bumped (Atomics.add) and notified by every writer after writing into this rank's buffers. */
  DOORBELL: 1,
  /** Count of barriers this rank has arrived at (epoch barrier of oneshot-barrier). */
  BARRIER_ARRIVALS: 2,
  /** 1 while a per-rank view is attached to this rank (compareExchange 0 -> 1; a second attach is BUSY). */
  ATTACHED: 3,
  /** Rank 0's block only: 1 once the owning communicator is closed (per-rank views then fail with CLOSED). */
  CHANNEL_CLOSED: 4,
  /**
   * 1 while this rank is (about to be) blocked in Atomics.wait on its doorbell, else 0. Writers notify only when
   * they see 1: a futex wake costs microseconds, and most waits end while still spinning (see RankControl).
   */
  SLEEPING: 5,
  /**
   * While SLEEPING is 1: the one peer whose write can end this rank's wait, or -1 (any writer). Writers other
   * than that peer skip the notify: a futex wake on a machine with fewer cores than ranks costs a context switch
   * of a rank that would only go back to sleep (see RankControl.ringDoorbells).
   */
  AWAITED_PEER: 6,
  /**
   * Rank 0's block only (high indices, apart from the per-rank words): a failed call poisons the channel. The
   * failing rank stores POISON_RANK, then POISONED = a POISON_KIND (Atomics, sequentially consistent) and notifies
   * every doorbell; every wait checks POISONED and CHANNEL_CLOSED (RankControl.checkAbort) and stops at once, and no
   * call returns data while POISONED is set. Cleared only by recovery, with every rank idle.
   */
  POISON_RANK: 28,
  POISONED: 29,
  /** Rank 0's block only: arrivals at the per-rank view's recovery barrier (two per rank per recovery; only grows). */
  RECOVERY_ARRIVALS: 30,
} as const

/** Values of CONTROL.POISONED: what failed (0: nothing). */
/** What poisoned a channel (CONTROL.POISONED); PEER_FAILED stores the dead peer in POISON_RANK, the others the rank
 * whose call failed. */
export const POISON_KIND = { TIMEOUT: 1, MISMATCH: 2, WORKER_FAILED: 3, OTHER: 4, PEER_FAILED: 5 } as const

export const LINE_WORDS = 32
export const LINE_PAYLOAD_WORDS = 31

export interface ChannelLayout {
  readonly ranks: number
  readonly bufferBytes: number
  /** Payload words per half. */
  readonly wordsPerHalf: number
  /** LL8 / sentinel slots per peer per half. */
  readonly slotsPerPeer: number
  /** LL128 lines per half. */
  readonly linesPerHalf: number
  readonly controlBytes: number
  readonly regionBytes: number
  /** Byte offsets inside a rank's region. */
  readonly ll8Offset: number
  readonly sentinelOffset: number
  readonly linesOffset: number
  readonly stagingOffset: number
  /** The call-signature packets (signature.ts): 2 halves x ranks x SIGNATURE_PACKETS u64. */
  readonly signatureOffset: number
  readonly totalBytes: number
}

export const MIN_BUFFER_BYTES = 256
/** LL8 packets per sender in the signature region: one per signature word. */
export const SIGNATURE_PACKETS = 2

export function computeChannelLayout(ranks: number, bufferBytes: number): ChannelLayout {
  if (!Number.isInteger(ranks) || ranks < 1 || ranks > 1024) {
    throw new LlcommError('INVALID_ARGUMENT', `ranks must be an integer in 1..1024, got ${ranks}`, { ranks })
  }
  if (!Number.isInteger(bufferBytes) || bufferBytes < MIN_BUFFER_BYTES || bufferBytes % 4 !== 0) {
    throw new LlcommError('INVALID_ARGUMENT', `bufferBytes must be a multiple of 4, at least ${MIN_BUFFER_BYTES}`, {
      bufferBytes,
    })
  }
  const wordsPerHalf = bufferBytes / 4
  const slotsPerPeer = Math.floor(wordsPerHalf / ranks)
  const linesPerHalf = Math.ceil(wordsPerHalf / LINE_PAYLOAD_WORDS)
  const controlBytes = ranks * CONTROL_STRIDE_WORDS * 4
  const ll8Offset = 0
  const sentinelOffset = ll8Offset + 2 * ranks * slotsPerPeer * 8
  const linesOffset = sentinelOffset + 2 * ranks * slotsPerPeer * 4
  const stagingOffset = linesOffset + 2 * linesPerHalf * LINE_WORDS * 4
  const signatureOffset = align8(stagingOffset + wordsPerHalf * 4)
  const regionBytes = signatureOffset + 2 * ranks * SIGNATURE_PACKETS * 8
  return {
    ranks,
    bufferBytes,
    wordsPerHalf,
    slotsPerPeer,
    linesPerHalf,
    controlBytes,
    regionBytes,
    ll8Offset,
    sentinelOffset,
    linesOffset,
    stagingOffset,
    signatureOffset,
    totalBytes: controlBytes + ranks * regionBytes,
  }
}

function align8(n: number): number {
  return Math.ceil(n / 8) * 8
}

/** Byte offset of rank r's region. */
export function regionBase(layout: ChannelLayout, rank: number): number {
  return layout.controlBytes + rank * layout.regionBytes
}

/** Index of a control word of `rank` in an Int32Array over the whole channel. */
export function controlIndex(rank: number, word: number): number {
  return rank * CONTROL_STRIDE_WORDS + word
}

/**
 * The memory a channel lives in: a SharedArrayBuffer between threads, or an ArrayBuffer over a mapping shared
 * between processes (src/ffi/shared-memory.ts; Atomics work on it except wait/notify, see WaitOptions.doorbell).
 */
export type ChannelMemory = SharedArrayBuffer | ArrayBuffer

/** Allocates a channel and writes its initial contents (all zero except armed sentinel slots). */
export function createChannelMemory(layout: ChannelLayout): SharedArrayBuffer {
  const sab = new SharedArrayBuffer(layout.totalBytes)
  initializeChannelMemory(layout, sab)
  return sab
}

/** Writes a channel's initial contents into zero-filled `memory` of layout.totalBytes (before any rank uses it). */
export function initializeChannelMemory(layout: ChannelLayout, memory: ChannelMemory): void {
  const i32 = new Int32Array(memory, 0, layout.totalBytes / 4)
  for (let r = 0; r < layout.ranks; r++) {
    const first = (regionBase(layout, r) + layout.sentinelOffset) / 4
    i32.fill(SENTINEL_WORD | 0, first, first + 2 * layout.ranks * layout.slotsPerPeer)
    // Line data words start at -0, the identity of IEEE addition (see atomic-lines.ts); counters at 0.
    const lines = (regionBase(layout, r) + layout.linesOffset) / 4
    for (let l = 0; l < 2 * layout.linesPerHalf; l++) {
      i32.fill(0x80000000 | 0, lines + l * LINE_WORDS + 1, lines + (l + 1) * LINE_WORDS)
    }
  }
}
