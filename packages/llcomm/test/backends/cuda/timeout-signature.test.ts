// The host's second look at a device TIMEOUT (src/backends/cuda/timeout-signature.ts): given this rank's signature
// region as read after its kernels finished, MISMATCH when a peer published another signature for the failed launch,
// TIMEOUT otherwise, with the races (a packet stored between the reads, a peer that moved on, a torn packet). No GPU.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import fc from 'fast-check'
import { mismatchFromWord } from '../../../src/backends/cuda/error-word.js'
import {
  classifyTimeoutSignatures,
  type DeviceTimeout,
  reclassifyTimeout,
  SIGNATURE_REGION_WORDS,
  settleTimeoutSignatures,
  signaturePacketWordIndex,
} from '../../../src/backends/cuda/timeout-signature.js'
import { LlcommError } from '../../../src/errors.js'
import { encodeSignature } from '../../../src/protocol/call-signature.js'

const TWOSHOT_BF16 = encodeSignature({
  count: 262144,
  algorithm: 'twoshot-sentinel',
  dtype: 'bf16',
  op: 'sum',
  protocol: 'none',
  chunkIndex: 0,
  chunkCount: 1,
})
const ONESHOT_BF16 = encodeSignature({
  count: 262144,
  algorithm: 'oneshot-sentinel',
  dtype: 'bf16',
  op: 'sum',
  protocol: 'none',
  chunkIndex: 0,
  chunkCount: 1,
})
const TWOSHOT_SMALLER = encodeSignature({
  count: 131072,
  algorithm: 'twoshot-sentinel',
  dtype: 'bf16',
  op: 'sum',
  protocol: 'none',
  chunkIndex: 0,
  chunkCount: 1,
})

const region = () => new Uint32Array(SIGNATURE_REGION_WORDS)

/**
 * Stores a packet as the device does: [word0, epoch, word1, epoch] (two u64 {word | epoch << 32}), into the slot of
 * `epoch` (epoch & slotMask: 1 for the default current-epoch build, 3 for the deferred build).
 */
function put(
  r: Uint32Array,
  channel: number,
  sender: number,
  epoch: number,
  words: readonly [number, number],
  slotMask = 1,
): void {
  const i = signaturePacketWordIndex(channel, epoch & slotMask, sender)
  r.set([words[0], epoch, words[1], epoch], i)
}

function timeoutOf(rank: number, peer: number, epoch: number, channel = 0): DeviceTimeout {
  return { rank, peer, epoch, channel }
}

const classify = (t: DeviceTimeout, nranks: number, r: Uint32Array) =>
  classifyTimeoutSignatures(t, nranks, r, r.slice())

test('a peer that published another signature for the failed epoch: MISMATCH naming both ranks and signatures', () => {
  const r = region()
  put(r, 0, 0, 2, TWOSHOT_BF16) // this rank's own packet (sender = itself)
  put(r, 0, 1, 2, ONESHOT_BF16) // the peer's packet for this rank
  const c = classify(timeoutOf(0, 1, 2), 2, r)
  assert.deepEqual(c, { kind: 'mismatch', peer: 1, epoch: 2, channel: 0, mine: TWOSHOT_BF16, theirs: ONESHOT_BF16 })
  // The error: the device-recorded MISMATCH's message for the same pair, plus where it was found.
  const timeoutError = LlcommError.timeout({ rank: 0, peer: 1, epoch: 2, waitingFor: 'sentinel slot 3 on channel 0' })
  const e = reclassifyTimeout(timeoutError, { timeout: timeoutOf(0, 1, 2), nranks: 2, readRegion: () => r.slice() })
  const device = mismatchFromWord(
    Uint32Array.of(2, 0, 1, 2, TWOSHOT_BF16[1], ONESHOT_BF16[1], TWOSHOT_BF16[0], ONESHOT_BF16[0]),
  )
  assert.equal(e.code, 'MISMATCH')
  assert.equal(e.message, device.message)
  for (const k of ['rank', 'peer', 'epoch', 'mine', 'theirs', 'mineWords', 'theirsWords'])
    assert.deepEqual(e.details[k], device.details[k], k)
  assert.match(String(e.details.mine), /^twoshot-sentinel bf16 sum × 262144 \(chunk 1\/1\)$/)
  assert.match(String(e.details.theirs), /^oneshot-sentinel bf16 sum × 262144/)
  assert.match(String(e.details.detectedBy), /^host/)
  assert.deepEqual(e.details.deviceTimeout, timeoutError.details)
})

test('a peer that made the same call, or none, or is behind: the TIMEOUT stays, with the reason', () => {
  const t = timeoutOf(0, 1, 6)
  const same = region()
  put(same, 0, 0, 6, TWOSHOT_BF16)
  put(same, 0, 1, 6, TWOSHOT_BF16)
  const c1 = classify(t, 2, same)
  assert.equal(c1.kind, 'timeout')
  assert.match(c1.kind === 'timeout' ? c1.reason : '', /same signature for epoch 6/)

  const never = region()
  put(never, 0, 0, 6, TWOSHOT_BF16)
  const c2 = classify(t, 2, never)
  assert.equal(c2.kind, 'timeout')
  assert.match(c2.kind === 'timeout' ? c2.reason : '', /zero fill/)

  // Its packet of this parity is from epoch 4 (two launches ago), even one that differs: not this call's.
  const behind = region()
  put(behind, 0, 0, 6, TWOSHOT_BF16)
  put(behind, 0, 1, 4, ONESHOT_BF16)
  const c3 = classify(t, 2, behind)
  assert.equal(c3.kind, 'timeout')
  assert.match(c3.kind === 'timeout' ? c3.reason : '', /carries epoch 4\): it has not made this call/)

  // Its packet of the other parity (epoch 5 or 7) never counts for epoch 6.
  const otherHalf = region()
  put(otherHalf, 0, 0, 6, TWOSHOT_BF16)
  put(otherHalf, 0, 1, 7, ONESHOT_BF16)
  assert.equal(classify(t, 2, otherHalf).kind, 'timeout')

  const e = reclassifyTimeout(LlcommError.timeout({ rank: 0, peer: 1, epoch: 6 }), {
    timeout: t,
    nranks: 2,
    readRegion: () => never.slice(),
  })
  assert.equal(e.code, 'TIMEOUT')
  assert.equal(e.message, 'rank 0 timed out waiting for peer 1 at epoch 6')
  assert.match(String(e.details.signatureCheck), /rank 1 published no signature for epoch 6/)
})

test('a peer that moved past the epoch (its packet overwritten at e + 2): TIMEOUT, its signature for e is gone', () => {
  const r = region()
  put(r, 3, 0, 10, TWOSHOT_BF16)
  put(r, 3, 1, 12, ONESHOT_BF16)
  const c = classify(timeoutOf(0, 1, 10, 3), 2, r)
  assert.equal(c.kind, 'timeout')
  assert.match(c.kind === 'timeout' ? c.reason : '', /moved past epoch 10 on channel 3 .*epoch 12/)
})

test("this rank's own packet of the epoch is gone (a later launch overwrote it) or never stored: TIMEOUT", () => {
  const r = region()
  put(r, 0, 0, 9, TWOSHOT_BF16) // epoch 7 failed; a launch at 9 overwrote the own slot of that parity
  put(r, 0, 1, 7, ONESHOT_BF16)
  const c = classify(timeoutOf(0, 1, 7), 2, r)
  assert.equal(c.kind, 'timeout')
  assert.match(c.kind === 'timeout' ? c.reason : '', /own signature for epoch 7 on channel 0 is not there/)
  const barrier = region() // oneshot-barrier stores no packet into its own slot
  put(barrier, 0, 1, 7, ONESHOT_BF16)
  assert.equal(classify(timeoutOf(0, 1, 7), 2, barrier).kind, 'timeout')
})

test('a torn packet (one element of this epoch, the other not) decides nothing, even when its count differs', () => {
  const r = region()
  put(r, 0, 0, 4, TWOSHOT_BF16)
  const i = signaturePacketWordIndex(0, 0, 1)
  r.set([ONESHOT_BF16[0] + 1, 4, TWOSHOT_BF16[1], 2], i) // element a of epoch 4, element b still of epoch 2
  const c = classify(timeoutOf(0, 1, 4), 2, r)
  assert.equal(c.kind, 'timeout')
  assert.match(c.kind === 'timeout' ? c.reason : '', /incomplete/)
})

test('a packet stored between the two reads: unsettled, then decided on the next agreeing pair of reads', () => {
  const before = region()
  put(before, 0, 0, 2, TWOSHOT_BF16) // the peer's slot still holds the zero fill
  const after = before.slice()
  put(after, 0, 1, 2, TWOSHOT_SMALLER)
  const t = timeoutOf(0, 1, 2)
  assert.equal(classifyTimeoutSignatures(t, 2, before, after).kind, 'unsettled')
  const reads = [before, after, after]
  let n = 0
  const c = settleTimeoutSignatures({ timeout: t, nranks: 2, readRegion: () => reads[n++].slice() })
  assert.equal(n, 3)
  assert.deepEqual(c, { kind: 'mismatch', peer: 1, epoch: 2, channel: 0, mine: TWOSHOT_BF16, theirs: TWOSHOT_SMALLER })
  // A packet that changes on every read: bounded, then the TIMEOUT stays.
  let k = 0
  const flapping = settleTimeoutSignatures({
    timeout: t,
    nranks: 2,
    maxReads: 5,
    readRegion: () => (k++ % 2 === 0 ? before : after).slice(),
  })
  assert.equal(k, 5)
  assert.equal(flapping.kind, 'timeout')
  assert.match(flapping.kind === 'timeout' ? flapping.reason : '', /kept changing over 5 reads/)
})

test('the named peer agrees, another peer differs at the same channel and epoch: MISMATCH naming that peer', () => {
  const r = region()
  for (const q of [0, 1, 2]) put(r, 1, q, 3, TWOSHOT_BF16)
  put(r, 1, 3, 3, TWOSHOT_SMALLER)
  const c = classify(timeoutOf(1, 2, 3, 1), 4, r)
  assert.equal(c.kind, 'mismatch')
  assert.equal(c.kind === 'mismatch' ? c.peer : -1, 3)
  // A wait that names no peer (0xFFFFFFFF): every peer is looked at.
  const none = classify(timeoutOf(1, 0xffffffff, 3, 1), 4, r)
  assert.equal(none.kind === 'mismatch' ? none.peer : -1, 3)
})

test("the failed launch's other channels: a peer running fewer channels is caught on channel 0 at that channel's epoch", () => {
  // This rank's launch ran channels 0..3; channel epochs differ (earlier calls ran fewer channels): channel 0 at 9,
  // channels 1..3 at 5. The recorded wait is on channel 2, where the peer (one channel) published nothing.
  const r = region()
  put(r, 0, 0, 9, TWOSHOT_BF16)
  for (const ch of [1, 2, 3]) put(r, ch, 0, 5, TWOSHOT_BF16)
  put(r, 0, 1, 9, TWOSHOT_SMALLER)
  put(r, 2, 1, 3, TWOSHOT_BF16) // channel 2: the peer's packet of two launches ago
  const c = classify(timeoutOf(0, 1, 5, 2), 2, r)
  assert.deepEqual(c, { kind: 'mismatch', peer: 1, epoch: 9, channel: 0, mine: TWOSHOT_BF16, theirs: TWOSHOT_SMALLER })
  // The same peer packet beside an own packet of another launch (other words) is no evidence for this one.
  const other = region()
  put(other, 0, 0, 9, ONESHOT_BF16)
  for (const ch of [1, 2, 3]) put(other, ch, 0, 5, TWOSHOT_BF16)
  put(other, 0, 1, 9, TWOSHOT_SMALLER)
  assert.equal(classify(timeoutOf(0, 1, 5, 2), 2, other).kind, 'timeout')
})

test('epochs across the u32 wrap (0xFFFFFFFF then 2): later and earlier packets are told apart', () => {
  const r = region()
  put(r, 0, 0, 0xffffffff, TWOSHOT_BF16)
  put(r, 0, 1, 3, ONESHOT_BF16) // two launches after 0xFFFFFFFF (2, 3): same parity, later
  const c = classify(timeoutOf(0, 1, 0xffffffff), 2, r)
  assert.match(c.kind === 'timeout' ? c.reason : '', /moved past epoch 4294967295/)
  const w = region()
  put(w, 0, 0, 2, TWOSHOT_BF16)
  put(w, 0, 1, 0xfffffffe, ONESHOT_BF16) // the last even epoch before the wrap: earlier
  const d = classify(timeoutOf(0, 1, 2), 2, w)
  assert.match(d.kind === 'timeout' ? d.reason : '', /carries epoch 4294967294\): it has not made this call/)
})

test('inputs that locate no slot: TIMEOUT, never a throw', () => {
  const r = region()
  assert.equal(classify(timeoutOf(0, 1, 2, 16), 2, r).kind, 'timeout')
  assert.equal(classify(timeoutOf(0, 1, 0), 2, r).kind, 'timeout')
  assert.equal(classify(timeoutOf(2, 1, 2), 2, r).kind, 'timeout')
  assert.equal(classifyTimeoutSignatures(timeoutOf(0, 1, 2), 2, new Uint32Array(8), new Uint32Array(8)).kind, 'timeout')
})

test('property: MISMATCH exactly when some peer stored the same epoch with other words beside this rank (anchor row)', () => {
  const words = fc.tuple(fc.nat({ max: 3 }), fc.nat({ max: 3 })).map(([a, b]) => [1000 + a, 3 + (b << 21)] as const)
  fc.assert(
    fc.property(
      fc.integer({ min: 2, max: 6 }),
      fc.integer({ min: 1, max: 1000 }),
      words,
      fc.array(fc.tuple(fc.integer({ min: -2, max: 2 }), words), { minLength: 6, maxLength: 6 }),
      fc.nat(),
      (nranks, epoch, mine, peers, pick) => {
        const me = pick % nranks
        const r = region()
        put(r, 0, me, epoch, mine)
        let expected = false
        for (let q = 0; q < nranks; q++) {
          if (q === me) continue
          const [shift, theirs] = peers[q]
          const e = epoch + 2 * shift // same parity: this call's (0) or another one's
          if (e > 0) put(r, 0, q, e, theirs)
          if (shift === 0 && (theirs[0] !== mine[0] || theirs[1] !== mine[1])) expected = true
        }
        const c = classify(timeoutOf(me, (me + 1) % nranks, epoch), nranks, r)
        assert.equal(c.kind, expected ? 'mismatch' : 'timeout')
        if (c.kind === 'mismatch') {
          assert.notEqual(c.peer, me)
          assert.equal(c.epoch, epoch)
          assert.deepEqual(c.mine, [...mine])
        }
      },
    ),
    { numRuns: 300 },
  )
})

// The per-process communicator's use of it (process-communicator.ts, checkDeviceError), on a fake driver whose
// "device memory" is host arrays: the error word and this rank's scratch at the addresses the communicator holds.
test('per-process checkDeviceError: a device TIMEOUT with a differing peer packet throws MISMATCH, and keeps it', async () => {
  const { CudaProcessCommunicator } = await import('../../../src/backends/cuda/process-communicator.js')
  const { LLCOMM_SCRATCH_BYTES, LLCOMM_SCRATCH_SIGNATURE_OFFSET } = await import('../../../src/backends/cuda/abi.js')
  const { SIGNATURE_BLOCK, SIGNATURE_DEFERRED } = await import('../../../src/backends/cuda/kernel-table.js')
  // The slots the communicator's kernels use: epoch & 1 (the default build), epoch & 3 with LLCOMM_SIG_DEFERRED=1.
  const slotMask = SIGNATURE_DEFERRED ? 3 : 1
  const ERROR_AT = 0x1000
  const SCRATCH_AT = 0x100000
  const errorWord = new Uint32Array(8)
  const scratch = new Uint8Array(LLCOMM_SCRATCH_BYTES)
  const sig = new Uint32Array(scratch.buffer, LLCOMM_SCRATCH_SIGNATURE_OFFSET, SIGNATURE_REGION_WORDS)
  let copies = 0
  const driver = {
    copyDtoH(dst: ArrayBufferView, src: number, bytes: number = dst.byteLength) {
      copies++
      const out = new Uint8Array(dst.buffer, dst.byteOffset, bytes)
      if (src === ERROR_AT) out.set(new Uint8Array(errorWord.buffer).subarray(0, bytes))
      else if (src >= SCRATCH_AT && src + bytes <= SCRATCH_AT + scratch.byteLength)
        out.set(scratch.subarray(src - SCRATCH_AT, src - SCRATCH_AT + bytes))
      else throw new Error(`copy from unknown address 0x${src.toString(16)}`)
    },
  }
  const rendezvous = { rank: 0, worldSize: 2, deadPeer: undefined, pids: [process.pid, process.pid] }
  const make = () => {
    const comm = new CudaProcessCommunicator(rendezvous as never, {
      device: 0,
      timeoutMs: 1000,
      bufferBytes: 1 << 20,
      table: {} as never,
    })
    Object.assign(comm as unknown as Record<string, unknown>, { driver, errorWord: ERROR_AT })
    ;(comm as unknown as { scratch: number[] }).scratch[0] = SCRATCH_AT
    return comm
  }
  const thrown = (f: () => void): LlcommError => {
    try {
      f()
    } catch (e) {
      if (e instanceof LlcommError) return e
      throw e
    }
    throw new Error('nothing thrown')
  }
  // TIMEOUT {rank 0, peer 1, epoch 3, what 2 (sentinel slot), slot 17, channel 4}.
  errorWord.set([1, 0, 1, 3, 2, 17, 4, 0])
  put(sig, 4, 0, 3, TWOSHOT_BF16, slotMask)
  put(sig, 4, 1, 3, ONESHOT_BF16, slotMask)
  const comm = make()
  const e = thrown(() => comm.checkDeviceError())
  if (SIGNATURE_BLOCK) {
    // The signature-block build: its block compared the packets on the device, so the host reads none (one copy: the
    // error word) and a device TIMEOUT stays a TIMEOUT.
    assert.equal(e.code, 'TIMEOUT')
    assert.equal(copies, 1)
    return
  }
  assert.equal(e.code, 'MISMATCH')
  assert.equal(e.details.rank, 0)
  assert.equal(e.details.peer, 1)
  assert.equal(e.details.epoch, 3)
  assert.equal((e.details.deviceTimeout as Record<string, unknown>).waitingFor, 'sentinel slot 17 on channel 4')
  // The verdict is kept: a packet changing later does not turn it into another error, and nothing is re-read.
  const before = copies
  put(sig, 4, 1, 3, TWOSHOT_BF16, slotMask)
  assert.equal(
    thrown(() => comm.checkDeviceError()),
    e,
  )
  assert.equal(copies, before)
  // A peer that published the same signature: the TIMEOUT, with the reason.
  const same = make()
  const t = thrown(() => same.checkDeviceError())
  assert.equal(t.code, 'TIMEOUT')
  assert.equal(t.message, 'rank 0 timed out waiting for peer 1 at epoch 3 (sentinel slot 17 on channel 4)')
  assert.match(String(t.details.signatureCheck), /same signature for epoch 3/)
  // A clear error word: nothing thrown.
  errorWord.fill(0)
  make().checkDeviceError()
})
