import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { isLlcommError } from 'llcomm/internal'
import {
  buildProtocolProgram,
  checkProtocol,
  createInterpreter,
  exploreInterleavings,
  MUTATIONS_BY_MODEL,
  PROTOCOL_MODELS,
  type ProtocolModelName,
  type ProtocolMutation,
  type ProtocolProgram,
  type ViolationKind,
} from '../../src/verify/index.js'
import { inputValue, SENTINEL_VALUE } from '../../src/verify/symbolic-values.js'

/** Two ranks, each owning one sentinel cell; `programs` decides the order of their store and poll. */
function twoCellProgram(order: 'store-first' | 'poll-first'): ProtocolProgram {
  const programs = [0, 1].map((rank) => {
    const peer = 1 - rank
    const store = {
      op: 'store' as const,
      cell: peer,
      source: { kind: 'constant' as const, value: inputValue(rank, 0, 2) },
      llEpoch: 0,
      label: `send to r${peer}`,
    }
    const poll = {
      op: 'poll-read' as const,
      cell: rank,
      until: 'not-sentinel' as const,
      epoch: 1,
      call: 0,
      update: { register: 0, mode: 'accumulate' as const },
      label: `recv from r${peer}`,
    }
    return order === 'store-first' ? [store, poll] : [poll, store]
  })
  return {
    model: 'oneshot-sentinel',
    mutation: 'none',
    ranks: 2,
    calls: 1,
    chunks: 1,
    memoryCells: 2,
    initialMemory: [SENTINEL_VALUE, SENTINEL_VALUE],
    cellNames: ['r0.slot', 'r1.slot'],
    cellOwners: [0, 1],
    registersPerRank: 1,
    registerNames: ['acc'],
    programs,
  }
}

/**
 * Reference search, independent of the explorer's layering and reduction: depth-first over every enabled step.
 * memo = false enumerates every schedule one by one; memo = true counts them per state (paths from a state do
 * not depend on how it was reached), which makes larger references affordable. Returns kinds seen, schedule count.
 */
function referenceSearch(program: ProtocolProgram, memo: boolean): { schedules: bigint; kinds: Set<ViolationKind> } {
  const it = createInterpreter(program)
  const kinds = new Set<ViolationKind>()
  const counted = new Map<string, bigint>()
  const visit = (s: Int32Array): bigint => {
    const key = memo ? Buffer.from(s.buffer).toString('latin1') : ''
    const known = memo ? counted.get(key) : undefined
    if (known !== undefined) return known
    let schedules = 0n
    let stepped = false
    for (let rank = 0; rank < program.ranks; rank++) {
      if (!it.isEnabled(s, rank)) continue
      stepped = true
      const { next, violations } = it.step(s, rank)
      for (const v of violations) kinds.add(v.kind)
      schedules += visit(next)
    }
    if (!stepped) {
      schedules = 1n
      const finished = [...Array(program.ranks).keys()].every((rank) => it.isFinished(s, rank))
      if (!finished) kinds.add('deadlock')
      else if (it.hasUnreadData(s)) kinds.add('lost-write')
    }
    if (memo) counted.set(key, schedules)
    return schedules
  }
  const schedules = visit(it.initial())
  return { schedules, kinds }
}

describe('interleaving explorer', () => {
  test('two ranks that send then receive: 4 schedules, no violation', () => {
    const r = exploreInterleavings(twoCellProgram('store-first'))
    assert.equal(r.ok, true)
    assert.equal(r.schedulesCovered, 4n) // orders of s0,p0,s1,p1 with s0<p0, s1<p1, s1<p0, s0<p1
    assert.equal(r.terminalStates, 1)
    assert.equal(r.deadlockStates, 0)
  })

  test('two ranks that receive before sending deadlock, and the report names both polls', () => {
    const r = exploreInterleavings(twoCellProgram('poll-first'))
    assert.equal(r.ok, false)
    assert.equal(r.deadlockStates, 1)
    assert.equal(r.violations.length, 1)
    const [v] = r.violations
    assert.equal(v.kind, 'deadlock')
    assert.match(v.message, /r0 \(recv from r1\) polls r0\.slot = sentinel/)
    assert.match(v.message, /r1 \(recv from r0\) polls r1\.slot = sentinel/)
    assert.deepEqual(v.trace, [])
  })

  // The memoized, layered, reduced search must count the same schedules as a plain depth-first search
  // (without reduction) and find the same kinds (with and without reduction). memo: false enumerates every
  // schedule one at a time, affordable only for the smallest configurations.
  const references: [ProtocolModelName, number, number, ProtocolMutation, boolean][] = [
    ['oneshot-ll', 2, 2, 'none', false],
    ['oneshot-ll', 2, 3, 'single-buffer', true],
    ['oneshot-sentinel', 2, 2, 'none', false],
    ['oneshot-sentinel', 2, 3, 'no-rearm', true],
    ['oneshot-sentinel', 2, 2, 'single-buffer', false],
    ['twoshot-sentinel', 2, 1, 'none', false],
    ['oneshot-ll', 2, 3, 'll-ignore-epoch', true],
    ['oneshot-ll', 3, 2, 'none', true],
    ['oneshot-sentinel', 2, 3, 'rearm-after-ack', true],
    ['oneshot-sentinel', 3, 3, 'single-buffer', true],
    ['twoshot-sentinel', 2, 3, 'none', true],
    ['twoshot-sentinel', 3, 2, 'none', true],
    ['twoshot-sentinel', 2, 3, 'rearm-after-ack', true],
    ['twoshot-sentinel', 2, 2, 'uncanonicalized-sentinel-input', true],
  ]
  for (const [model, ranks, calls, mutation, memo] of references) {
    test(`matches a ${memo ? 'memoized ' : ''}depth-first reference: ${model} ${mutation} ${ranks}x${calls}`, () => {
      const program = buildProtocolProgram(model, ranks, calls, mutation)
      const reference = referenceSearch(program, memo)
      const full = exploreInterleavings(program, { partialOrder: false })
      const reduced = exploreInterleavings(program)
      assert.equal(full.schedulesCovered, reference.schedules)
      assert.deepEqual(new Set(full.violations.map((v) => v.kind)), reference.kinds)
      assert.deepEqual(new Set(reduced.violations.map((v) => v.kind)), reference.kinds)
      assert.ok(reduced.statesExplored <= full.statesExplored)
    })
  }

  test('partial-order reduction finds the same kinds as the full search for every model and mutation (2 ranks x 3 calls)', () => {
    for (const model of PROTOCOL_MODELS) {
      for (const mutation of MUTATIONS_BY_MODEL[model]) {
        const full = checkProtocol(model, { ranks: 2, calls: 3, mutation, partialOrder: false })
        const reduced = checkProtocol(model, { ranks: 2, calls: 3, mutation })
        const kinds = (r: typeof full) => r.violations.map((v) => v.kind).sort()
        assert.deepEqual(kinds(reduced), kinds(full), `${model} ${mutation}`)
        assert.equal(reduced.ok, full.ok, `${model} ${mutation}`)
      }
    }
  })

  test('stopOnFirstViolation stops with one counterexample and an incomplete search', () => {
    const r = checkProtocol('oneshot-sentinel', {
      ranks: 3,
      calls: 3,
      mutation: 'single-buffer',
      stopOnFirstViolation: true,
    })
    assert.equal(r.ok, false)
    assert.equal(r.complete, false)
    assert.equal(r.violations.length, 1)
  })

  test('maxStates bounds the search and an incomplete search is never ok', () => {
    const r = checkProtocol('oneshot-ll', { ranks: 3, calls: 3, maxStates: 50 })
    assert.equal(r.complete, false)
    assert.equal(r.ok, false)
    assert.equal(r.statesExplored, 50)
  })

  test('rejects configurations it cannot model with INVALID_ARGUMENT', () => {
    const invalid = (f: () => unknown) => assert.throws(f, (e) => isLlcommError(e, 'INVALID_ARGUMENT'))
    invalid(() => checkProtocol('oneshot-ll', { ranks: 3, calls: 3, mutation: 'no-rearm' }))
    invalid(() => checkProtocol('oneshot-sentinel', { ranks: 3, calls: 3, mutation: 'll-ignore-epoch' }))
    invalid(() => checkProtocol('oneshot-ll', { ranks: 5, calls: 4 }))
    invalid(() => checkProtocol('oneshot-ll', { ranks: 1, calls: 3 }))
    invalid(() => checkProtocol('twoshot-sentinel', { ranks: 2, calls: 0 }))
  })
})
