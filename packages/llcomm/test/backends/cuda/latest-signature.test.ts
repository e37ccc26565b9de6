// The host's check of each channel's last launch (src/backends/cuda/latest-signature.ts; kernels built with
// LLCOMM_SIG_DEFERRED check epoch e - 1 in kernel e, so nobody on the device checks the last one): the decision on
// the rows read, its races (a packet stored between the reads, a peer's packet not visible yet), and the reading
// through a driver (offsets of the epoch words and rows, only the channels that moved). No GPU.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import fc from 'fast-check'
import {
  LLCOMM_MAX_CHANNELS,
  LLCOMM_MAX_RANKS,
  LLCOMM_SCRATCH_BYTES,
  LLCOMM_SCRATCH_EPOCHS_OFFSET,
  LLCOMM_SCRATCH_SIGNATURE_OFFSET,
  LLCOMM_SIG_SLOTS,
} from '../../../src/backends/cuda/abi.js'
import {
  channelsToCheck,
  checkLatestSignaturesOfRank,
  classifyLatestSignatures,
  DEFERRED_SIGNATURE_SLOT_MASK,
  type DeviceReader,
  type LatestChannelRows,
  latestMismatchError,
  SIGNATURE_ROW_WORDS,
  settleLatestSignatures,
  signatureRowScratchOffset,
} from '../../../src/backends/cuda/latest-signature.js'
import { signaturePacketWordIndex } from '../../../src/backends/cuda/timeout-signature.js'
import type { DevicePtr } from '../../../src/ffi/index.js'
import { encodeSignature } from '../../../src/protocol/call-signature.js'

const sig = (count: number, algorithm: 'oneshot-ll' | 'twoshot-sentinel' = 'oneshot-ll') =>
  encodeSignature({
    count,
    algorithm,
    dtype: 'bf16',
    op: 'sum',
    protocol: algorithm === 'oneshot-ll' ? 'll16' : 'none',
    chunkIndex: 0,
    chunkCount: 1,
  })
const A = sig(1000)
const B = sig(1001)
const C = sig(1000, 'twoshot-sentinel')

/** A row as the device leaves it: sender q's packet [word0, epoch, word1, epoch] at words 4q. */
function row(packets: ([number, number] | undefined)[], epochOf: (q: number) => number): Uint32Array {
  const r = new Uint32Array(SIGNATURE_ROW_WORDS)
  packets.forEach((w, q) => {
    if (w) r.set([w[0], epochOf(q), w[1], epochOf(q)], 4 * q)
  })
  return r
}
const rowsOf = (channel: number, epoch: number, r: Uint32Array): LatestChannelRows => ({
  channel,
  epoch,
  first: r,
  second: r.slice(),
})

test('the rows and the region agree on the layout: row (c, s) holds the packets of timeout-signature.ts at 4 slots', () => {
  assert.equal(LLCOMM_SIG_SLOTS, 4)
  assert.equal(DEFERRED_SIGNATURE_SLOT_MASK, LLCOMM_SIG_SLOTS - 1)
  for (const [c, s, q] of [
    [0, 0, 0],
    [3, 2, 5],
    [15, 3, 63],
  ]) {
    const rowWord = (signatureRowScratchOffset(c, s) - LLCOMM_SCRATCH_SIGNATURE_OFFSET) / 4
    assert.equal(rowWord + 4 * q, signaturePacketWordIndex(c, s, q))
  }
  // The last row ends at the end of the scratch (the region is the last thing in it).
  assert.equal(signatureRowScratchOffset(LLCOMM_MAX_CHANNELS - 1, 3) + LLCOMM_MAX_RANKS * 16, LLCOMM_SCRATCH_BYTES)
})

test('every peer published the same signature: match, every pair compared', () => {
  const r = row([A, A, A, A], () => 7)
  const c = classifyLatestSignatures(1, 4, [rowsOf(2, 7, r)], false)
  assert.deepEqual(c, { kind: 'match', compared: 3, unpublished: [] })
})

test('a peer published another signature for the epoch: MISMATCH naming it, the epoch, the channel and both words', () => {
  const c = classifyLatestSignatures(
    0,
    3,
    [
      rowsOf(
        5,
        6,
        row([A, A, B], () => 6),
      ),
    ],
    false,
  )
  assert.deepEqual(c, { kind: 'mismatch', peer: 2, epoch: 6, channel: 5, mine: A, theirs: B })
  const e = latestMismatchError(0, c as Extract<typeof c, { kind: 'mismatch' }>)
  assert.equal(e.code, 'MISMATCH')
  assert.equal(e.details.rank, 0)
  assert.equal(e.details.peer, 2)
  assert.equal(e.details.epoch, 6)
  assert.equal(e.details.channel, 5)
  assert.match(e.message, /rank 0 and rank 2 made different calls at epoch 6/)
  assert.match(String(e.details.mine), /× 1000 /)
  assert.match(String(e.details.theirs), /× 1001 /)
  // Another algorithm with the same count is caught too (word 1).
  const d = classifyLatestSignatures(
    2,
    3,
    [
      rowsOf(
        0,
        9,
        row([A, C, A], () => 9),
      ),
    ],
    false,
  )
  assert.equal(d.kind, 'mismatch')
  assert.equal(d.kind === 'mismatch' && d.peer, 1)
})

test("a peer's packet of the epoch not there yet: read again; on the last reads it stays undecided, not a MISMATCH", () => {
  // Rank 1's slot still holds its packet of epoch 3 (= 7 - 4, the same slot), with other words.
  const r = row([A, B, A], (q) => (q === 1 ? 3 : 7))
  assert.equal(classifyLatestSignatures(0, 3, [rowsOf(0, 7, r)], false).kind, 'unsettled')
  const c = classifyLatestSignatures(0, 3, [rowsOf(0, 7, r)], true)
  assert.equal(c.kind, 'match')
  assert.equal(c.kind === 'match' && c.compared, 1)
  assert.match(c.kind === 'match' ? c.unpublished[0] : '', /rank 1 has no packet of epoch 7 on channel 0/)
})

test('no own packet of the epoch (oneshot-barrier, the fused kernels) or epoch 0: nothing compared', () => {
  const r = row([undefined, B, A], () => 5)
  assert.deepEqual(classifyLatestSignatures(0, 3, [rowsOf(1, 5, r)], false), {
    kind: 'match',
    compared: 0,
    unpublished: [],
  })
  // An own packet of an older epoch in the slot (5 - 4) is not this launch's.
  const old = row([A, B, B], (q) => (q === 0 ? 1 : 5))
  assert.equal(classifyLatestSignatures(0, 3, [rowsOf(1, 5, old)], true).kind, 'match')
  assert.deepEqual(
    classifyLatestSignatures(
      0,
      3,
      [
        rowsOf(
          1,
          0,
          row([A, B, B], () => 0),
        ),
      ],
      true,
    ),
    {
      kind: 'match',
      compared: 0,
      unpublished: [],
    },
  )
})

test('a packet that changed between the two reads decides nothing: read again', () => {
  const first = row([A, A, A], () => 2)
  const second = row([A, A, B], () => 2)
  const c = classifyLatestSignatures(0, 3, [{ channel: 0, epoch: 2, first, second }], true)
  assert.equal(c.kind, 'unsettled')
  // Torn (the two elements of different epochs, read the same twice): not this epoch's packet.
  const torn = row([A, A, A], () => 2)
  torn[4 * 2 + 3] = 6 // rank 2's second element already of epoch 6
  assert.equal(classifyLatestSignatures(0, 3, [rowsOf(0, 2, torn)], false).kind, 'unsettled')
})

test('settle: a packet that appears at the third read is compared; one that never settles is left undecided', () => {
  let reads = 0
  const c = settleLatestSignatures({
    rank: 0,
    nranks: 2,
    channels: [{ channel: 4, epoch: 10 }],
    readRow: (channel, slot) => {
      assert.equal(channel, 4)
      assert.equal(slot, 10 & 3)
      reads++
      return row([A, B], (q) => (q === 1 && reads < 3 ? 6 : 10))
    },
  })
  assert.equal(c.kind, 'mismatch')
  assert.equal(reads, 4) // reads 3 and 4 agree
  let n = 0
  const never = settleLatestSignatures({
    rank: 0,
    nranks: 2,
    channels: [{ channel: 0, epoch: 10 }],
    readRow: () => row([A, n++ % 2 ? A : B], () => 10),
    maxReads: 3,
  })
  assert.equal(never.kind, 'match')
  assert.match(never.kind === 'match' ? never.unpublished[0] : '', /kept changing over 3 reads/)
})

test('property: MISMATCH exactly when some peer that published the epoch differs from this rank, naming such a peer', () => {
  const words = fc.constantFrom(A, B, C)
  fc.assert(
    fc.property(
      fc.integer({ min: 2, max: 8 }),
      fc.array(fc.tuple(fc.integer({ min: 0, max: 15 }), fc.integer({ min: 1, max: 1000 })), {
        minLength: 1,
        maxLength: 4,
      }),
      fc.array(fc.tuple(words, fc.boolean()), { minLength: 8 * 4, maxLength: 8 * 4 }),
      (nranks, chans, cells) => {
        const me = 0
        const list = [...new Map(chans).entries()] // one entry a channel
        let k = 0
        let expected: { channel: number; peer: number } | undefined
        const rows = list.map(([channel, epoch]) => {
          const packets: [number, number][] = []
          const published: boolean[] = []
          for (let q = 0; q < nranks; q++) {
            const [w, pub] = cells[k++ % cells.length]
            packets.push(w)
            published.push(q === me || pub)
          }
          for (let q = 1; q < nranks && !expected; q++)
            if (published[q] && (packets[q][0] !== packets[me][0] || packets[q][1] !== packets[me][1]))
              expected = { channel, peer: q }
          return rowsOf(
            channel,
            epoch,
            row(packets, (q) => (published[q] ? epoch : epoch > 4 ? epoch - 4 : 0)),
          )
        })
        const c = classifyLatestSignatures(me, nranks, rows, true)
        if (!expected) return c.kind === 'match'
        return c.kind === 'mismatch' && c.channel === expected.channel && c.peer === expected.peer
      },
    ),
    { numRuns: 300 },
  )
})

test('channelsToCheck: the channels whose epoch moved since the last check, none at epoch 0', () => {
  const epochs = new Uint32Array(LLCOMM_MAX_CHANNELS)
  epochs.set([5, 0, 7, 9])
  const checked = new Uint32Array(LLCOMM_MAX_CHANNELS)
  checked.set([5, 0, 6])
  assert.deepEqual(channelsToCheck(epochs, checked), [
    { channel: 2, epoch: 7 },
    { channel: 3, epoch: 9 },
  ])
})

/** A fake device memory of one rank's scratch, and a driver that copies from it, counting the copies. */
function fakeScratch(base: number) {
  const bytes = new Uint8Array(LLCOMM_SCRATCH_BYTES)
  const words = new Uint32Array(bytes.buffer)
  const copies: { offset: number; bytes: number }[] = []
  const driver: DeviceReader = {
    copyDtoH(dst, src, n = dst.byteLength) {
      const offset = (src as number) - base
      assert.ok(offset >= 0 && offset + n <= bytes.length, `copy of ${n} B at ${offset} is outside the scratch`)
      new Uint8Array(dst.buffer, dst.byteOffset, n).set(bytes.subarray(offset, offset + n))
      copies.push({ offset, bytes: n })
    },
  }
  const put = (channel: number, epoch: number, sender: number, w: readonly [number, number]) =>
    words.set(
      [w[0], epoch, w[1], epoch],
      signaturePacketWordIndex(channel, epoch & 3, sender) + LLCOMM_SCRATCH_SIGNATURE_OFFSET / 4,
    )
  const setEpoch = (channel: number, epoch: number) => {
    words[LLCOMM_SCRATCH_EPOCHS_OFFSET / 4 + channel] = epoch
  }
  return { driver, copies, put, setEpoch }
}

test('checkLatestSignaturesOfRank: reads the epoch words and the rows of the channels that moved; a MISMATCH once seen; nothing re-read after a match', () => {
  const base = 0x7f0000000000
  const s = fakeScratch(base)
  const checked = new Uint32Array(LLCOMM_MAX_CHANNELS)
  // Channels 0 and 3 ran epoch 6 on 3 ranks; this rank is 1.
  for (const ch of [0, 3]) {
    s.setEpoch(ch, 6)
    for (let q = 0; q < 3; q++) s.put(ch, 6, q, A)
  }
  assert.equal(checkLatestSignaturesOfRank(s.driver, base as DevicePtr, 1, 3, checked), undefined)
  assert.equal(checked[0], 6)
  assert.equal(checked[3], 6)
  assert.deepEqual(s.copies[0], { offset: LLCOMM_SCRATCH_EPOCHS_OFFSET, bytes: LLCOMM_MAX_CHANNELS * 4 })
  // Two reads of each of the two rows, 3 packets each, at slot 6 & 3 = 2.
  assert.deepEqual(
    s.copies.slice(1).map((c) => c.offset),
    [
      signatureRowScratchOffset(0, 2),
      signatureRowScratchOffset(3, 2),
      signatureRowScratchOffset(0, 2),
      signatureRowScratchOffset(3, 2),
    ],
  )
  assert.ok(s.copies.slice(1).every((c) => c.bytes === 3 * 16))
  // Nothing moved: the epoch words only.
  s.copies.length = 0
  assert.equal(checkLatestSignaturesOfRank(s.driver, base as DevicePtr, 1, 3, checked), undefined)
  assert.equal(s.copies.length, 1)
  // Channel 3 runs epoch 7, and rank 2 made another call there.
  s.setEpoch(3, 7)
  s.put(3, 7, 0, A)
  s.put(3, 7, 1, A)
  s.put(3, 7, 2, B)
  const e = checkLatestSignaturesOfRank(s.driver, base as DevicePtr, 1, 3, checked)
  assert.equal(e?.code, 'MISMATCH')
  assert.equal(e?.details.peer, 2)
  assert.equal(e?.details.epoch, 7)
  assert.equal(e?.details.channel, 3)
  assert.equal(checked[3], 6, 'a mismatched channel is not marked checked')
})
