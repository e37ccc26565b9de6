/**
 * The host's check of each channel's last launch (issue 18 item 1; kernels built with LLCOMM_SIG_DEFERRED,
 * kernels/llcomm/signature.cuh "The deferred check"). There, kernel e on a channel compares the call signatures of
 * the channel's previous epoch (every peer's packet against this rank's own), so the LAST launch on each channel is
 * checked by nobody on the device. checkDeviceError closes that: after the stream finished it reads this rank's
 * channel epoch words and, for each channel whose latest epoch E it has not checked yet, the packets of slot E & 3
 * in this rank's scratch (the peers store theirs there, and this rank its own), and reports MISMATCH, naming both
 * ranks and both signatures, when a peer published another signature for (channel, E). So every call is checked
 * either by the next kernel on its channel or here, before the host reports it: no call's data is reported as a
 * success after a mismatch. The decision is a pure function of the words read (classifyLatestSignatures); the
 * reading is a callback (settleLatestSignatures), as in timeout-signature.ts.
 *
 * What is read. Row (channel, slot) of this rank's signature region: the 16-byte packets of every sender q at
 * LLCOMM_SCRATCH_SIGNATURE_OFFSET + ((channel * LLCOMM_SIG_SLOTS + slot) * LLCOMM_MAX_RANKS + q) * 16, as u32s
 * [word0, epoch, word1, epoch] (timeout-signature.ts, readSignaturePacket). Only the rows of the channels to check.
 *
 * Ordering (why the words read mean what they say):
 *  1. This rank's epoch words and own packets were stored by its own kernels, which have all finished (the caller
 *     reads after the stream finished: kernel completion orders a kernel's stores before a copy issued after it).
 *     Epoch word c holds E: the last launch on channel c had epoch E, and its own packet (if that kernel stores one:
 *     oneshot-barrier and the fused kernels do not) is in slot E & 3.
 *  2. A peer's packet is stored by the peer's kernel at any time, concurrently with the copy; a DMA copy is not
 *     promised 8-byte single-copy atomicity, so each row is read twice and a packet counts only when both reads
 *     agree and its two elements carry the same epoch (timeout-signature.ts, 2).
 *  3. The peer's packet of epoch E is still in slot E & 3: a peer stores into that slot again at E + 4, and while
 *     this rank is idle after epoch E a peer stores packets of at most epoch E + 2 (its kernel E + 2 waits for this
 *     rank's packet of E + 1: the bound of signature.cuh). So the packet read is the peer's latest of that slot: it
 *     carries E (its signature for this call), or an older epoch (not visible yet: the store was issued at the start
 *     of the peer's kernel E, whose data this rank received; read again, bounded), and a differing pair carrying E
 *     is never stale (a slot is stored once per epoch).
 *  4. Nothing to compare: no own packet of E (kernel E stored none: oneshot-barrier checked itself in its barrier;
 *     the fused kernels publish nothing) or E = 0 (no launch on the channel since creation or recover()).
 * After a match the caller marks (channel, E) checked, so the next checkDeviceError reads only channels that moved.
 */
import type { LlcommError } from '../../errors.js'
import type { DevicePtr } from '../../ffi/index.js'
import {
  LLCOMM_MAX_CHANNELS,
  LLCOMM_MAX_RANKS,
  LLCOMM_SCRATCH_EPOCHS_OFFSET,
  LLCOMM_SCRATCH_SIGNATURE_OFFSET,
  LLCOMM_SIG_SLOTS,
} from './abi.js'
import { hostMismatchError, type PacketMismatch } from './timeout-signature.js'

/** Slot of epoch e in the deferred build (abi.cuh LLCOMM_SIG_EPOCH_MASK with LLCOMM_SIG_DEFERRED). */
export const DEFERRED_SIGNATURE_SLOT_MASK = 3
/** u32 words of one row: the packets of every sender for one (channel, slot). */
export const SIGNATURE_ROW_WORDS = LLCOMM_MAX_RANKS * 4
/** Reads of a row before a packet that keeps changing, or is not there, is given up on. */
export const DEFAULT_LATEST_READS = 4

/** Byte offset, inside one rank's scratch, of row (channel, slot) (kernels/llcomm/wait.cuh, llcSignatureSlot). */
export function signatureRowScratchOffset(channel: number, slot: number): number {
  return LLCOMM_SCRATCH_SIGNATURE_OFFSET + (channel * LLCOMM_SIG_SLOTS + slot) * LLCOMM_MAX_RANKS * 16
}

/** One channel to check: its latest epoch (this rank's epoch word) and two consecutive reads of its row. */
export interface LatestChannelRows {
  channel: number
  epoch: number
  first: Uint32Array
  second: Uint32Array
}

export type LatestClassification =
  /**
   * Every peer that published (channel, E) agrees (`compared`: the pairs compared); `unpublished`: peers whose packet
   * was not there (undecided).
   */
  | { kind: 'match'; compared: number; unpublished: string[] }
  | PacketMismatch
  /** A packet changed between the reads, or a peer's packet of E was not there yet: read again. */
  | { kind: 'unsettled'; reason: string }

interface Packet {
  word0: number
  epoch0: number
  word1: number
  epoch1: number
}

function packetAt(row: Uint32Array, sender: number): Packet {
  const i = sender * 4
  return { word0: row[i] >>> 0, epoch0: row[i + 1] >>> 0, word1: row[i + 2] >>> 0, epoch1: row[i + 3] >>> 0 }
}

/**
 * The decision (pure). `rank` is this rank; each entry of `channels` holds two reads of this rank's row for
 * (channel, epoch & 3). `final`: the last reads (a peer packet still not there is left undecided instead of read
 * again). Channels are decided in the order given, peers in rank order after this rank.
 */
export function classifyLatestSignatures(
  rank: number,
  nranks: number,
  channels: readonly LatestChannelRows[],
  final: boolean,
): LatestClassification {
  const me = rank >>> 0
  if (!Number.isInteger(nranks) || nranks < 2 || nranks > LLCOMM_MAX_RANKS || me >= nranks)
    return { kind: 'match', compared: 0, unpublished: [`no peers to compare with (rank ${me} of ${nranks})`] }
  const unpublished: string[] = []
  let compared = 0
  for (const { channel, epoch, first, second } of channels) {
    const e = epoch >>> 0
    if (e === 0 || channel < 0 || channel >= LLCOMM_MAX_CHANNELS) continue
    if (first.length < nranks * 4 || second.length < nranks * 4)
      return { kind: 'unsettled', reason: `the row of channel ${channel} read short` }
    // A packet counts only when both reads agree word for word (header, 2); undefined: it changed between them.
    const stable = (q: number): Packet | undefined => {
      const a = packetAt(first, q)
      const b = packetAt(second, q)
      return a.word0 === b.word0 && a.epoch0 === b.epoch0 && a.word1 === b.word1 && a.epoch1 === b.epoch1
        ? a
        : undefined
    }
    const own = stable(me)
    if (!own) return { kind: 'unsettled', reason: `this rank's own packet on channel ${channel} changed between reads` }
    if (own.epoch0 !== e || own.epoch1 !== e) continue // kernel E stored no own packet: nothing to compare (4)
    for (let k = 1; k < nranks; k++) {
      const q = (me + k) % nranks
      const p = stable(q)
      if (!p) return { kind: 'unsettled', reason: `rank ${q}'s packet on channel ${channel} changed between reads` }
      if (p.epoch0 === e && p.epoch1 === e) {
        if (p.word0 !== own.word0 || p.word1 !== own.word1) {
          return {
            kind: 'mismatch',
            peer: q,
            epoch: e,
            channel,
            mine: [own.word0, own.word1],
            theirs: [p.word0, p.word1],
          }
        }
        compared++
        continue
      }
      const why = `rank ${q} has no packet of epoch ${e} on channel ${channel} (its slot carries epochs ${p.epoch0}/${p.epoch1})`
      if (!final) return { kind: 'unsettled', reason: why }
      unpublished.push(why)
    }
  }
  return { kind: 'match', compared, unpublished }
}

/** How the host reads the rows of this rank (fresh copies per call). */
export interface LatestSignatureReader {
  rank: number
  nranks: number
  /** The channels to check and their latest epochs (this rank's epoch words, read after the stream finished). */
  channels: readonly { channel: number; epoch: number }[]
  /** A fresh copy of this rank's row (channel, slot): at least nranks * 4 u32. */
  readRow: (channel: number, slot: number) => Uint32Array
  /** At most this many reads of each row (default DEFAULT_LATEST_READS, at least 2). */
  maxReads?: number
}

/** Reads until no packet that matters changes between two consecutive reads and every peer's is there (bounded). */
export function settleLatestSignatures(r: LatestSignatureReader): Exclude<LatestClassification, { kind: 'unsettled' }> {
  const reads = Math.max(2, r.maxReads ?? DEFAULT_LATEST_READS)
  const readAll = () => r.channels.map((c) => r.readRow(c.channel, (c.epoch >>> 0) & DEFERRED_SIGNATURE_SLOT_MASK))
  let previous = readAll()
  let last = 'no read'
  for (let i = 1; i < reads; i++) {
    const next = readAll()
    const rows = r.channels.map((c, j) => ({ channel: c.channel, epoch: c.epoch, first: previous[j], second: next[j] }))
    const c = classifyLatestSignatures(r.rank, r.nranks, rows, i === reads - 1)
    if (c.kind !== 'unsettled') return c
    last = c.reason
    previous = next
  }
  // Packets that kept changing over every read: nothing decided for them (the next kernel on the channel, or the
  // next check, sees them settled).
  return { kind: 'match', compared: 0, unpublished: [`the packets kept changing over ${reads} reads (${last})`] }
}

/** The MISMATCH for a differing pair found here (the device's format, plus `channel` and `detectedBy`). */
export function latestMismatchError(rank: number, c: Extract<LatestClassification, { kind: 'mismatch' }>): LlcommError {
  return hostMismatchError(rank, c, {
    detectedBy: "host: the packets of the channel's last launch (latest-signature.ts)",
  })
}

/**
 * The channels to check on one rank: epoch word != 0 and != the epoch last checked there (`checked`, updated by
 * the caller after a match; recover() clears it with the epochs).
 */
export function channelsToCheck(epochs: Uint32Array, checked: Uint32Array): { channel: number; epoch: number }[] {
  const out: { channel: number; epoch: number }[] = []
  for (let c = 0; c < LLCOMM_MAX_CHANNELS; c++) {
    const e = epochs[c] >>> 0
    if (e !== 0 && e !== checked[c] >>> 0) out.push({ channel: c, epoch: e })
  }
  return out
}

/** What the check needs of the driver: a synchronous device-to-host copy (CudaDriver.copyDtoH). */
export interface DeviceReader {
  copyDtoH(dst: ArrayBufferView, src: DevicePtr, bytes?: number): void
}

/**
 * The check of one rank (the caller has made its context current and knows its stream finished): copies its 16
 * channel epoch words, then the rows of the channels not checked yet (`checked`, this rank's epoch last checked per
 * channel, updated here after a match), and returns the MISMATCH to throw, or undefined.
 */
export function checkLatestSignaturesOfRank(
  driver: DeviceReader,
  scratch: DevicePtr,
  rank: number,
  nranks: number,
  checked: Uint32Array,
): LlcommError | undefined {
  const epochs = new Uint32Array(LLCOMM_MAX_CHANNELS)
  driver.copyDtoH(epochs, (scratch + LLCOMM_SCRATCH_EPOCHS_OFFSET) as DevicePtr)
  const channels = channelsToCheck(epochs, checked)
  if (channels.length === 0) return undefined
  const c = settleLatestSignatures({
    rank,
    nranks,
    channels,
    readRow: (channel, slot) => {
      const row = new Uint32Array(nranks * 4)
      driver.copyDtoH(row, (scratch + signatureRowScratchOffset(channel, slot)) as DevicePtr)
      return row
    },
  })
  if (c.kind === 'mismatch') return latestMismatchError(rank, c)
  for (const { channel, epoch } of channels) checked[channel] = epoch
  return undefined
}
