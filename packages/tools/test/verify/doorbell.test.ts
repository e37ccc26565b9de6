// The sleep/notify hand-off of the CPU backend (targeted doorbells): no interleaving of a waiter and two writers
// loses a wake-up, and each planted ordering bug is found with a trace.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { checkDoorbell, type DoorbellMutation, type DoorbellScenario } from '../../src/verify/index.js'

test('the hand-off as written loses no wake-up: named, any-writer and back-to-back waits', () => {
  for (const scenario of ['named', 'any', 'sequence'] as DoorbellScenario[]) {
    const r = checkDoorbell(scenario)
    assert.equal(r.violation, undefined, `${scenario}: ${r.violation?.message}\n${r.violation?.trace.join('\n')}`)
    assert.ok(r.statesExplored > 50, `${scenario}: ${r.statesExplored} states`)
  }
})

test('planted bugs lose a wake-up, with a trace that ends with the waiter blocked', () => {
  const expected: [DoorbellMutation, DoorbellScenario, boolean][] = [
    ['check-before-bell', 'named', true],
    ['check-before-bell', 'any', true],
    ['notify-named-only', 'any', true],
    ['notify-named-only', 'named', false], // the named writer still notifies
    ['no-sleeping-store', 'named', true],
    ['no-sleeping-store', 'any', true],
    ['check-before-bell', 'sequence', true],
    ['no-sleeping-store', 'sequence', true],
    ['stale-awaited', 'sequence', true],
    ['stale-awaited', 'named', false], // one wait: nothing to go stale
  ]
  for (const [mutation, scenario, found] of expected) {
    const r = checkDoorbell(scenario, mutation)
    assert.equal(r.violation !== undefined, found, `${mutation} / ${scenario}`)
    if (r.violation) {
      assert.match(r.violation.message, /lost wake-up/)
      assert.ok(
        r.violation.trace.some((line) => /r0 wait on DOORBELL = \d+: blocks/.test(line)),
        r.violation.trace.join('\n'),
      )
    }
  }
})
