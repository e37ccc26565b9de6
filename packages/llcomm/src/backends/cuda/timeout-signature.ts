/**
 * A device TIMEOUT that is really a MISMATCH (issue 18; kernels/llcomm/signature.cuh, "What is left as a TIMEOUT").
 * One process per rank gives every rank an error word of its own, and some data waits are not armed (they never
 * look at the signature: register caps), so a rank whose peer made another call, and never sends what the rank
 * waits for, records TIMEOUT, while the peer's own check records MISMATCH in the peer's word. The host closes that
 * gap after the fact, at no cost in the kernels: before it reports a device TIMEOUT it reads the signature packets
 * that its peers stored into its own scratch and, when a peer published another signature for the same channel and
 * epoch as this rank, it reports MISMATCH naming both ranks and both signatures, in the words and the message of a
 * MISMATCH the device records. A peer that published nothing for that epoch (it never made the call) stays a
 * TIMEOUT. The decision is a pure function of the words read (classifyTimeoutSignatures); the reading is a callback.
 *
 * What is read. Sender q stores its packet for this rank into THIS rank's scratch, at LLCOMM_SCRATCH_SIGNATURE_OFFSET
 * + ((channel * LLCOMM_SIG_SLOTS + half) * LLCOMM_MAX_RANKS + q) * 16 (half = the epoch's parity: the default
 * kernels use 2 of the 4 slots), and each kernel also stores its own packet into its own slot
 * (q = this rank; signature.cuh, llcBlockPublishSignature; oneshot-barrier excepted). A packet is two little-endian
 * u64 {word0 | epoch << 32, word1 | epoch << 32}: as u32s [word0, epoch, word1, epoch]. So the whole evidence is this
 * rank's own 64 KB signature region (no peer memory is read), copied with a synchronous cuMemcpyDtoH.
 *
 * Ordering (why the words read mean what they say):
 *  1. This rank's own packets were stored by this rank's kernels, which have all finished: the caller reads the
 *     error word only after the stream finished (checkDeviceError's contract), and kernel completion orders a
 *     kernel's stores before a copy issued after it. Nothing else writes the own slots, so they do not change.
 *  2. A peer's packet is stored by the peer's kernel at any time, concurrently with the copy: nothing orders the two.
 *     The device reads each 8-byte element single-copy atomically (st/ld .relaxed.sys.v2.u64); a DMA copy is not
 *     promised that, so the region is read twice and a packet counts only when both reads agree word for word and
 *     its two elements carry the same epoch. A packet being stored during or between the reads differs between
 *     them: it is read again (at most maxReads reads; then no decision, and the TIMEOUT stays). One 16-byte store
 *     completes in far less time than one copy of the region, so two agreeing reads hold a value the slot had.
 *  3. A peer's slot of one (channel, half) is stored once per epoch of that parity, in increasing epoch order (the
 *     peer's channel epoch advances by one per kernel on the channel; channel.cuh). So the packet read is the peer's
 *     latest of that parity: carrying epoch e, it is exactly the peer's signature for epoch e (the next store there
 *     carries e + 2); an older epoch (or 0, the zero fill): the peer had not published epoch e when it was read (it
 *     never made the call, or makes it later than this rank's whole deadline: TIMEOUT, and the peer's own check
 *     reports MISMATCH: the race left); a later epoch: the peer has moved past epoch e (it ran two more launches on
 *     the channel before this read: it was aborted itself and went on with calls queued behind, or this rank had
 *     queued launches behind the failed one), and its signature for epoch e is gone: TIMEOUT, unless another row
 *     below shows a differing signature.
 *  4. A differing pair is never stale: a launch of this rank that ended without an error compared every peer's
 *     packet of its channels and epochs with its own and found them equal (the kernel does not end before its
 *     checkers; signature.cuh), and a slot is never stored again with the same epoch. So where this rank's packet
 *     and a peer's carry the same epoch and differ, this rank's launch there failed or stopped because one failed:
 *     it is the failed launch or one queued behind it. (Before the first failure the ranks' launches agree one for
 *     one: equal signatures mean equal launch shapes, so equal channel epochs. recover() re-writes the scratch, and
 *     a per-process communicator does not recover.)
 * Rows used. The anchor: the channel and epoch of the recorded wait, with this rank's own packet of that epoch (the
 * failed launch's words); the peer the wait names first, then every other peer. Then every other (channel, half)
 * whose own packet carries the anchor's words (the failed launch's other channels: a peer that runs fewer channels
 * publishes on channel 0 while the wait recorded may be on a channel it does not run). No anchor (this rank's own
 * packet of epoch e is gone: two later launches of this rank on that channel, as in a call of three or more chunks,
 * or oneshot-barrier, which does not store into its own slot): the TIMEOUT stays.
 */
import { LlcommError, mismatchError } from '../../errors.js'
import { decodeSignature, describeSignature } from '../../protocol/call-signature.js'
import { LLCOMM_MAX_CHANNELS, LLCOMM_MAX_RANKS, LLCOMM_SCRATCH_SIGNATURE_BYTES, LLCOMM_SIG_SLOTS } from './abi.js'

/** u32 words of one rank's signature region (LLCOMM_SCRATCH_SIGNATURE_BYTES). */
export const SIGNATURE_REGION_WORDS = LLCOMM_SCRATCH_SIGNATURE_BYTES / 4
/** Reads of the region before a packet that keeps changing is given up on (the TIMEOUT stays). */
export const DEFAULT_SIGNATURE_READS = 8

/** One 16-byte packet as stored: word0 with its epoch, word1 with its epoch. */
export interface SignaturePacket {
  word0: number
  epoch0: number
  word1: number
  epoch1: number
}

/** Index of the first u32 of sender `sender`'s packet for (channel, half) in a signature region (wait.cuh). */
export function signaturePacketWordIndex(channel: number, half: number, sender: number): number {
  return ((channel * LLCOMM_SIG_SLOTS + half) * LLCOMM_MAX_RANKS + sender) * 4
}

export function readSignaturePacket(
  region: Uint32Array,
  channel: number,
  half: number,
  sender: number,
): SignaturePacket {
  const i = signaturePacketWordIndex(channel, half, sender)
  return {
    word0: region[i] >>> 0,
    epoch0: region[i + 1] >>> 0,
    word1: region[i + 2] >>> 0,
    epoch1: region[i + 3] >>> 0,
  }
}

/** The recorded wait: the error word's rank (this rank), the peer it waited for, the epoch and the channel. */
export interface DeviceTimeout {
  rank: number
  /** 0xFFFFFFFF (or -1): the wait named no peer. */
  peer: number
  epoch: number
  channel: number
}

/** A peer's packet that differs from this rank's own for the same channel and epoch (words 0 and 1 of each). */
export interface PacketMismatch {
  kind: 'mismatch'
  peer: number
  epoch: number
  channel: number
  mine: [number, number]
  theirs: [number, number]
}

export type TimeoutClassification =
  | PacketMismatch
  | { kind: 'timeout'; reason: string }
  /** A packet that matters differed between the two reads (being stored): read again. */
  | { kind: 'unsettled'; reason: string }

const carries = (p: SignaturePacket, epoch: number): boolean => p.epoch0 === epoch && p.epoch1 === epoch
const sameWords = (a: SignaturePacket, b: SignaturePacket): boolean => a.word0 === b.word0 && a.word1 === b.word1

/** Where epoch `x` lies against `e` on one channel (for the reason only; serial arithmetic across the u32 wrap). */
function epochRelation(x: number, e: number): 'never' | 'earlier' | 'later' {
  if (x === 0) return 'never'
  return ((x - e) | 0) > 0 ? 'later' : 'earlier'
}

/**
 * The decision (pure): `first` and `second` are two reads, one after the other, of this rank's signature region
 * (SIGNATURE_REGION_WORDS u32 each), taken after this rank's kernels finished. See the header for what counts.
 */
export function classifyTimeoutSignatures(
  timeout: DeviceTimeout,
  nranks: number,
  first: Uint32Array,
  second: Uint32Array,
  slotMask = 1,
): TimeoutClassification {
  const me = timeout.rank >>> 0
  const e = timeout.epoch >>> 0
  const c0 = timeout.channel >>> 0
  const named = timeout.peer >>> 0
  if (first.length < SIGNATURE_REGION_WORDS || second.length < SIGNATURE_REGION_WORDS)
    return { kind: 'timeout', reason: 'the signature region read was short' }
  if (!Number.isInteger(nranks) || nranks < 2 || nranks > LLCOMM_MAX_RANKS || me >= nranks)
    return { kind: 'timeout', reason: `no peers to compare with (rank ${me} of ${nranks})` }
  if (c0 >= LLCOMM_MAX_CHANNELS || e === 0)
    return { kind: 'timeout', reason: `the wait's channel ${c0} / epoch ${e} locates no signature slot` }
  // A packet counts only when both reads agree (header, 2); undefined: it changed between them.
  const stable = (channel: number, half: number, sender: number): SignaturePacket | undefined => {
    const a = readSignaturePacket(first, channel, half, sender)
    const b = readSignaturePacket(second, channel, half, sender)
    return a.word0 === b.word0 && a.epoch0 === b.epoch0 && a.word1 === b.word1 && a.epoch1 === b.epoch1 ? a : undefined
  }
  const h0 = e & slotMask // the epoch's slot: its parity (default kernels), epoch & 3 (LLCOMM_SIG_DEFERRED)
  const own = stable(c0, h0, me)
  if (!own) return { kind: 'unsettled', reason: `this rank's own packet on channel ${c0} changed between reads` }
  if (!carries(own, e)) {
    return {
      kind: 'timeout',
      reason: `this rank's own signature for epoch ${e} on channel ${c0} is not there (its slot carries epochs ${own.epoch0}/${own.epoch1}): nothing to compare with`,
    }
  }
  const peers: number[] = []
  if (named < nranks && named !== me) peers.push(named)
  for (let q = 0; q < nranks; q++) if (q !== me && q !== named) peers.push(q)
  const mismatch = (
    q: number,
    p: SignaturePacket,
    o: SignaturePacket,
    epoch: number,
    channel: number,
  ): TimeoutClassification => ({
    kind: 'mismatch',
    peer: q,
    epoch,
    channel,
    mine: [o.word0, o.word1],
    theirs: [p.word0, p.word1],
  })
  // The anchor: the recorded wait's channel and epoch.
  for (const q of peers) {
    const p = stable(c0, h0, q)
    if (!p) return { kind: 'unsettled', reason: `rank ${q}'s packet on channel ${c0} changed between reads` }
    if (carries(p, e) && !sameWords(p, own)) return mismatch(q, p, own, e, c0)
  }
  // The failed launch's other channels (and later launches with its words): own packet with the anchor's words.
  for (let channel = 0; channel < LLCOMM_MAX_CHANNELS; channel++) {
    for (let half = 0; half <= slotMask; half++) {
      if (channel === c0 && half === h0) continue
      const o = stable(channel, half, me)
      if (!o) return { kind: 'unsettled', reason: `this rank's own packet on channel ${channel} changed between reads` }
      if (o.epoch0 === 0 || !carries(o, o.epoch0) || !sameWords(o, own)) continue
      for (const q of peers) {
        const p = stable(channel, half, q)
        if (!p) return { kind: 'unsettled', reason: `rank ${q}'s packet on channel ${channel} changed between reads` }
        if (carries(p, o.epoch0) && !sameWords(p, o)) return mismatch(q, p, o, o.epoch0, channel)
      }
    }
  }
  return { kind: 'timeout', reason: namedPeerReason(named < nranks && named !== me ? named : -1, stable, c0, h0, e) }
}

/** Why the named peer's packet decides nothing (the TIMEOUT's `signatureCheck` detail). */
function namedPeerReason(
  q: number,
  stable: (channel: number, half: number, sender: number) => SignaturePacket | undefined,
  c0: number,
  h0: number,
  e: number,
): string {
  if (q < 0) return `the wait names no peer, and no peer published another signature for epoch ${e}`
  const p = stable(c0, h0, q) as SignaturePacket // stable: checked in the anchor loop
  if (p.epoch0 !== p.epoch1)
    return `rank ${q}'s packet on channel ${c0} is incomplete (epochs ${p.epoch0}/${p.epoch1}); no differing signature found`
  if (carries(p, e)) return `rank ${q} published the same signature for epoch ${e}: it made this call`
  const relation = epochRelation(p.epoch0, e)
  if (relation === 'later')
    return `rank ${q} has moved past epoch ${e} on channel ${c0} (its packet carries epoch ${p.epoch0}): its signature for epoch ${e} is gone`
  return `rank ${q} published no signature for epoch ${e} on channel ${c0} (${relation === 'never' ? 'its slot holds the zero fill' : `its packet carries epoch ${p.epoch0}`}): it has not made this call`
}

/** How the host reads this rank's signature region (a fresh copy per call). */
export interface SignatureRegionReader {
  timeout: DeviceTimeout
  nranks: number
  readRegion: () => Uint32Array
  /** At most this many reads (default DEFAULT_SIGNATURE_READS, at least 2). */
  maxReads?: number
  /** Slot of an epoch: epoch & slotMask (1: the default kernels; 3: LLCOMM_SIG_DEFERRED). */
  slotMask?: number
}

/** Reads until no packet that matters changes between two consecutive reads (bounded), then decides. */
export function settleTimeoutSignatures(
  r: SignatureRegionReader,
): Exclude<TimeoutClassification, { kind: 'unsettled' }> {
  const reads = Math.max(2, r.maxReads ?? DEFAULT_SIGNATURE_READS)
  let previous = r.readRegion()
  let last = 'no read'
  for (let i = 1; i < reads; i++) {
    const next = r.readRegion()
    const c = classifyTimeoutSignatures(r.timeout, r.nranks, previous, next, r.slotMask ?? 1)
    if (c.kind !== 'unsettled') return c
    last = c.reason
    previous = next
  }
  return { kind: 'timeout', reason: `the packets kept changing over ${reads} reads (${last})` }
}

/**
 * The error to report for a device TIMEOUT: MISMATCH (the device's format, plus `detectedBy` and the device's
 * `deviceTimeout`) when a peer published another signature for the failed launch, else the TIMEOUT itself with the
 * reason in `details.signatureCheck`.
 */
export function reclassifyTimeout(timeoutError: LlcommError, r: SignatureRegionReader): LlcommError {
  const c = settleTimeoutSignatures(r)
  if (c.kind === 'timeout') {
    return new LlcommError('TIMEOUT', timeoutError.message, { ...timeoutError.details, signatureCheck: c.reason })
  }
  return hostMismatchError(r.timeout.rank, c, {
    detectedBy: 'host: the signature packets read after a device TIMEOUT (timeout-signature.ts)',
    deviceTimeout: timeoutError.details,
  })
}

/**
 * A MISMATCH the host found in the signature packets (after a device TIMEOUT, or in the last launch of a channel:
 * latest-signature.ts): the device's format for `rank` against the differing peer, plus `channel` and `extra`
 * (which says who found it).
 */
export function hostMismatchError(rank: number, c: PacketMismatch, extra: Record<string, unknown>): LlcommError {
  const base = mismatchError({
    rank: rank >>> 0,
    peer: c.peer,
    epoch: c.epoch,
    mine: describeSignature(decodeSignature(c.mine[0], c.mine[1])),
    theirs: describeSignature(decodeSignature(c.theirs[0], c.theirs[1])),
    mineWords: c.mine,
    theirsWords: c.theirs,
  })
  return new LlcommError('MISMATCH', base.message, { ...base.details, channel: c.channel, ...extra })
}
