// The LL-buffer primitives on one thread (a 1- or 2-rank channel driven by hand): flags carry the epoch, stale
// packets are never taken, sentinel slots are re-armed after a read and canonicalize the sentinel value, atomic
// lines complete at N arrivals, and every wait ends in a TIMEOUT that names rank, peer and epoch.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { F32_CANONICAL_NAN, SENTINEL_WORD } from '../../src/dtype/sentinels.js'
import { isLlcommError } from '../../src/errors.js'
import { computeChannelLayout, createChannelMemory, regionBase } from '../../src/protocol/cpu/layout.js'
import { RankProtocol } from '../../src/protocol/cpu/rank-protocol.js'

const WAIT = { timeoutMs: 60, spinIterations: 10 }

function channel(ranks: number, bufferBytes = 1024): { sab: SharedArrayBuffer; rank: (r: number) => RankProtocol } {
  const sab = createChannelMemory(computeChannelLayout(ranks, bufferBytes))
  return { sab, rank: (r) => new RankProtocol(sab, ranks, bufferBytes, r, WAIT) }
}

test('layout: regions do not overlap and sizes follow bufferBytes', () => {
  const l = computeChannelLayout(4, 4096)
  assert.equal(l.wordsPerHalf, 1024)
  assert.equal(l.slotsPerPeer, 256)
  assert.ok(l.sentinelOffset >= l.ll8Offset + 2 * 4 * 256 * 8)
  assert.ok(l.linesOffset >= l.sentinelOffset + 2 * 4 * 256 * 4)
  assert.ok(l.stagingOffset >= l.linesOffset + 2 * l.linesPerHalf * 128)
  assert.ok(l.linesPerHalf * 31 >= l.wordsPerHalf)
  assert.equal(regionBase(l, 1) - regionBase(l, 0), l.regionBytes)
  assert.throws(
    () => computeChannelLayout(4, 100),
    (e) => isLlcommError(e, 'INVALID_ARGUMENT'),
  )
})

test('ll8: a packet is taken only at the epoch it was sent for; stale packets time out naming rank, peer, epoch', () => {
  const { rank } = channel(2)
  const a = rank(0)
  const b = rank(1)
  a.advanceEpoch()
  b.advanceEpoch()
  a.ll8.send(1, 5, 0x12345678)
  assert.equal(b.ll8.recv(0, 5), 0x12345678)
  // Two epochs later the same half holds the epoch-1 packet: it must not be taken.
  b.advanceEpoch()
  b.advanceEpoch()
  const started = performance.now()
  assert.throws(
    () => b.ll8.recv(0, 5),
    (e) => isLlcommError(e, 'TIMEOUT') && e.details.rank === 1 && e.details.peer === 0 && e.details.epoch === 3,
  )
  assert.ok(performance.now() - started < 2000, 'the timeout honours its deadline')
  a.advanceEpoch()
  a.advanceEpoch()
  a.ll8.send(1, 5, 7)
  assert.equal(b.ll8.recv(0, 5), 7)
})

test('ll8 fault variant (flag without epoch) takes the stale packet: the check is load-bearing', () => {
  const sab = createChannelMemory(computeChannelLayout(2, 1024))
  const a = new RankProtocol(sab, 2, 1024, 0, WAIT)
  const broken = new RankProtocol(sab, 2, 1024, 1, WAIT, { ignoreEpochInFlag: true })
  a.advanceEpoch()
  broken.advanceEpoch()
  a.ll8.send(1, 0, 42)
  assert.equal(broken.ll8.recv(0, 0), 42)
  broken.advanceEpoch()
  broken.advanceEpoch()
  assert.equal(broken.ll8.recv(0, 0), 42, 'the broken variant returns stale data instead of waiting')
})

test('sentinel: the reader re-arms the slot; the sentinel value itself arrives as the canonical NaN', () => {
  const { sab, rank } = channel(2)
  const a = rank(0)
  const b = rank(1)
  a.advanceEpoch()
  b.advanceEpoch()
  a.sentinel.send(1, 3, SENTINEL_WORD)
  assert.equal(b.sentinel.recv(0, 3), F32_CANONICAL_NAN)
  const layout = b.layout
  const slotIndex =
    (regionBase(layout, 1) + layout.sentinelOffset) / 4 + 1 * 2 * layout.slotsPerPeer + 0 * layout.slotsPerPeer + 3
  assert.equal(Atomics.load(new Int32Array(sab), slotIndex), SENTINEL_WORD | 0, 're-armed')
  assert.throws(
    () => b.sentinel.recv(0, 3),
    (e) => isLlcommError(e, 'TIMEOUT') && e.details.peer === 0,
  )
})

test('sentinel fault variant (no re-arm) reads the old word again: the re-arm is load-bearing', () => {
  const sab = createChannelMemory(computeChannelLayout(2, 1024))
  const a = new RankProtocol(sab, 2, 1024, 0, WAIT)
  const broken = new RankProtocol(sab, 2, 1024, 1, WAIT, { skipRearm: true })
  a.advanceEpoch()
  broken.advanceEpoch()
  a.sentinel.send(1, 0, 99)
  assert.equal(broken.sentinel.recv(0, 0), 99)
  broken.advanceEpoch()
  broken.advanceEpoch()
  assert.equal(broken.sentinel.recv(0, 0), 99, 'the broken variant returns stale data instead of waiting')
})

test('recvReduce sums lanes in f32 in rank order (own word from the argument) and rounds once to the dtype', () => {
  const { rank } = channel(3)
  const ps = [rank(0), rank(1), rank(2)]
  for (const p of ps) {
    p.useDtype('bf16')
    p.advanceEpoch()
  }
  // bf16 1.0 = 0x3f80, 2^-8 = 0x3b80: 1 + 2^-8 + 2^-8 = 1.0078125 in f32, rounds to bf16 0x3f81.
  ps[0].ll8.send(2, 0, (0x4000 << 16) | 0x3f80)
  ps[1].ll8.send(2, 0, (0x3f80 << 16) | 0x3b80)
  const w = ps[2].ll8.recvReduce(0, (0x3f80 << 16) | 0x3b80)
  assert.equal(w & 0xffff, 0x3f81)
  assert.equal(w >>> 16, 0x4080) // 2 + 1 + 1 = 4
})

test('ll128 lines: complete at N arrivals, sum by CAS, re-armed to -0 and counter 0', () => {
  const { rank } = channel(2)
  const a = rank(0)
  const b = rank(1)
  a.advanceEpoch()
  b.advanceEpoch()
  a.lines.atomicAdd(1, 0, 0, 1.5)
  a.lines.arrive(1, 0)
  assert.throws(
    () => b.lines.waitComplete(0),
    (e) => isLlcommError(e, 'TIMEOUT') && e.details.rank === 1,
  )
  b.lines.atomicAdd(1, 0, 0, -0.25)
  b.lines.arrive(1, 0)
  b.lines.waitComplete(0)
  assert.equal(b.lines.read(0, 0), 1.25)
  assert.ok(Object.is(b.lines.read(0, 1), -0), 'untouched lanes hold -0, the identity of addition')
  b.lines.rearm(0, 31)
  assert.ok(Object.is(b.lines.read(0, 0), -0))
})

test('reset returns a rank to epoch 0 with its buffers re-armed', () => {
  const { rank } = channel(1)
  const a = rank(0)
  a.advanceEpoch()
  a.sentinel.send(0, 1, 5)
  a.ll8.send(0, 1, 6)
  a.reset()
  assert.equal(a.control.epoch, 0)
  a.advanceEpoch()
  assert.throws(
    () => a.sentinel.recv(0, 1),
    (e) => isLlcommError(e, 'TIMEOUT'),
  )
  assert.throws(
    () => a.ll8.recv(0, 1),
    (e) => isLlcommError(e, 'TIMEOUT'),
  )
})

test('resetRange re-arms only the given slots, in every peer region and both halves', () => {
  const { rank } = channel(2)
  const a = rank(0)
  const b = rank(1)
  a.advanceEpoch()
  b.advanceEpoch()
  for (let s = 0; s < 4; s++) {
    a.sentinel.send(1, s, 100 + s)
    a.ll8.send(1, s, 200 + s)
  }
  b.sentinel.resetRange(1, 2)
  b.ll8.resetRange(1, 2)
  assert.equal(b.sentinel.recv(0, 0), 100)
  assert.equal(b.sentinel.recv(0, 3), 103)
  assert.equal(b.ll8.recv(0, 3), 203)
  assert.throws(
    () => b.sentinel.recv(0, 1),
    (e) => isLlcommError(e, 'TIMEOUT'),
  )
  assert.throws(
    () => b.ll8.recv(0, 2),
    (e) => isLlcommError(e, 'TIMEOUT'),
  )
})
