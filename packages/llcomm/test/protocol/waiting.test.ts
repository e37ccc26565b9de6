// The waiting machinery on one thread, driven by hand: a sleeper names the peer it waits for and only that peer's
// ring notifies it; a wait for several peers blocks on the latest one first; sentinel ranges are released by their
// last slot; the default spin follows the core count.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { defaultSpinIterations } from '../../src/backends/cpu/communicator.js'
import { SENTINEL_WORD } from '../../src/dtype/sentinels.js'
import { isLlcommError } from '../../src/errors.js'
import { CONTROL, computeChannelLayout, controlIndex, createChannelMemory } from '../../src/protocol/cpu/layout.js'
import { RankProtocol } from '../../src/protocol/cpu/rank-protocol.js'

const WAIT = { timeoutMs: 60, spinIterations: 10 }

function ranks(n: number): { i32: Int32Array; rank: (r: number) => RankProtocol } {
  const sab = createChannelMemory(computeChannelLayout(n, 4096))
  return { i32: new Int32Array(sab), rank: (r) => new RankProtocol(sab, n, 4096, r, WAIT) }
}

/** Counts Atomics.notify calls made while `fn` runs. */
function countNotifies(fn: () => void): number {
  const original = Atomics.notify
  let calls = 0
  Atomics.notify = ((...args: Parameters<typeof Atomics.notify>) => {
    calls++
    return original(...args)
  }) as typeof Atomics.notify
  try {
    fn()
  } finally {
    Atomics.notify = original
  }
  return calls
}

test('a sleeper is notified only by the peer it names (or by anyone when it names -1)', () => {
  const { i32, rank } = ranks(3)
  const writer1 = rank(1)
  const writer2 = rank(2)
  // Rank 0 is asleep waiting for peer 1 (the words a waiter stores before Atomics.wait).
  Atomics.store(i32, controlIndex(0, CONTROL.AWAITED_PEER), 1)
  Atomics.store(i32, controlIndex(0, CONTROL.SLEEPING), 1)
  const bell = () => Atomics.load(i32, controlIndex(0, CONTROL.DOORBELL))
  const before = bell()
  writer2.control.markWritten(0)
  assert.equal(
    countNotifies(() => writer2.control.ringDoorbells()),
    0,
    "peer 2's write cannot end a wait for peer 1",
  )
  assert.equal(bell(), before + 1, 'the doorbell is still bumped (a waiter about to sleep then returns at once)')
  writer1.control.markWritten(0)
  assert.equal(
    countNotifies(() => writer1.control.ringDoorbells()),
    1,
  )
  Atomics.store(i32, controlIndex(0, CONTROL.AWAITED_PEER), -1)
  writer2.control.markWritten(0)
  assert.equal(
    countNotifies(() => writer2.control.ringDoorbells()),
    1,
    'a wait for any writer is notified by every writer',
  )
  Atomics.store(i32, controlIndex(0, CONTROL.SLEEPING), 0)
  writer1.control.markWritten(0)
  assert.equal(
    countNotifies(() => writer1.control.ringDoorbells()),
    0,
    'nobody asleep, no notify',
  )
})

test('waitForAll blocks on the missing peer with the smallest epoch first, and skips arrived peers', () => {
  const { rank } = ranks(4)
  const me = rank(0)
  const peers = [rank(1), rank(2), rank(3)]
  me.advanceEpoch()
  me.advanceEpoch()
  // Peer 1 is at epoch 2, peer 2 at epoch 1 (behind), peer 3 at epoch 2 and already arrived.
  peers[0].advanceEpoch()
  peers[0].advanceEpoch()
  peers[1].advanceEpoch()
  peers[2].advanceEpoch()
  peers[2].advanceEpoch()
  const arrived = new Set([3])
  const blockedOn: number[] = []
  me.control.waitForAll(
    [0, 1, 2, 3],
    -1,
    (p) => arrived.has(p),
    (p) => {
      blockedOn.push(p)
      arrived.add(p)
    },
  )
  assert.deepEqual(blockedOn, [2, 1])
})

test('a sentinel range is released by its last slot: earlier slots are plain stores, the last one is read first', () => {
  const { rank } = ranks(2)
  const a = rank(0)
  const b = rank(1)
  a.advanceEpoch()
  b.advanceEpoch()
  const words = Int32Array.from([1, 2, 3, 4, SENTINEL_WORD | 0])
  a.sentinel.sendRange(1, 0, words)
  const out = new Int32Array(5)
  b.sentinel.recvRange(0, 0, out)
  assert.deepEqual([...out.subarray(0, 4)], [1, 2, 3, 4])
  assert.notEqual(out[4], SENTINEL_WORD | 0, 'a sentinel-valued last word is canonicalized, so it never hangs')
  // Re-armed: the same half two epochs later waits (and times out, naming the last slot) until a new send.
  a.advanceEpoch()
  b.advanceEpoch()
  a.advanceEpoch()
  b.advanceEpoch()
  assert.throws(
    () => b.sentinel.recvRange(0, 0, out),
    (e) => isLlcommError(e, 'TIMEOUT') && String(e.details.waitingFor).includes('slot 4'),
  )
})

test('default spin: long when every rank has a core, none when ranks outnumber cores', () => {
  assert.equal(defaultSpinIterations(2, 2), 20_000)
  assert.equal(defaultSpinIterations(8, 16), 20_000)
  assert.equal(defaultSpinIterations(3, 2), 0)
  assert.equal(defaultSpinIterations(4, 2), 0)
})
