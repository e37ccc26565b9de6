import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { type CallAlgorithm, checkProtocol, PROTOCOL_MODELS } from '../../src/verify/index.js'

// Every schedule of the correct protocols: no stale read, lost write, mixed-epoch reduction, wrong result
// or deadlock, for 2-4 ranks and 3-4 consecutive calls (4 ranks x 4 calls is the largest: ~3 s).
const SIZES: [number, number][] = [
  [2, 3],
  [2, 4],
  [3, 3],
  [3, 4],
  [4, 4],
]

describe('correct protocols pass every interleaving', () => {
  for (const model of PROTOCOL_MODELS) {
    for (const [ranks, calls] of SIZES) {
      test(`${model}: ${ranks} ranks x ${calls} calls`, () => {
        const r = checkProtocol(model, { ranks, calls })
        assert.deepEqual(r.violations, [], r.counterexample?.trace.join('\n'))
        assert.equal(r.complete, true)
        assert.equal(r.ok, true)
        assert.equal(r.deadlockStates, 0)
        // Every schedule ends in the one final state: all ranks finished, every buffer slot consumed.
        assert.equal(r.terminalStates, 1)
        assert.ok(r.schedulesCovered > 100n, `only ${r.schedulesCovered} schedules`)
        assert.ok(r.transitionsExplored >= r.statesExplored - 1)
      })
    }
  }
})

// Calls that switch algorithm on the same buffer (what auto does when sizes change between calls).
const SEQUENCES: CallAlgorithm[][] = [
  ['oneshot', 'twoshot', 'oneshot', 'twoshot'],
  ['twoshot', 'oneshot', 'twoshot', 'oneshot'],
  ['oneshot', 'oneshot', 'twoshot', 'twoshot'],
  ['twoshot', 'twoshot', 'oneshot', 'twoshot'],
]

describe('switching between one-shot and two-shot sentinel calls passes every interleaving', () => {
  for (const sequence of SEQUENCES) {
    for (const ranks of [2, 3]) {
      test(`${sequence.join(' > ')}: ${ranks} ranks`, () => {
        const r = checkProtocol('mixed-sentinel', { ranks, calls: sequence.length, sequence })
        assert.deepEqual(r.violations, [], r.counterexample?.trace.join('\n'))
        assert.equal(r.ok, true)
        assert.equal(r.terminalStates, 1)
      })
    }
  }
})

// Two-shot calls whose chunk has fewer words than ranks: only owners 0..m-1 have a segment, the others
// exchange nothing in that call. Checked with the double buffer and with a single one (see docs/interleavings.md).
const ACTIVE_OWNERS: number[][] = [
  [3, 1, 3, 1],
  [1, 3, 1, 3],
  [2, 1, 3, 2],
]

describe('two-shot calls with empty owner segments pass every interleaving', () => {
  for (const activeOwners of ACTIVE_OWNERS) {
    for (const mutation of ['none', 'single-buffer'] as const) {
      test(`owners per call ${activeOwners.join(', ')} (3 ranks), ${mutation === 'none' ? 'double' : 'single'} buffer`, () => {
        const r = checkProtocol('twoshot-sentinel', { ranks: 3, calls: activeOwners.length, mutation, activeOwners })
        assert.deepEqual(r.violations, [], r.counterexample?.trace.join('\n'))
        assert.equal(r.ok, true)
        assert.equal(r.terminalStates, 1)
      })
    }
  }

  test('an owner without a segment still exposes a missing re-arm', () => {
    const r = checkProtocol('twoshot-sentinel', {
      ranks: 3,
      calls: 4,
      mutation: 'no-rearm',
      activeOwners: [3, 1, 3, 1],
      stopOnFirstViolation: true,
    })
    assert.equal(r.counterexample?.kind, 'stale-read')
  })
})
