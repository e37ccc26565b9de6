// The call signature on the CPU backend (issue 18 item 1), per-rank view in user workers: every way of making
// different calls on different ranks ends every rank of that call with MISMATCH naming both ranks and both
// signatures (never data), and a rank that never calls is a TIMEOUT naming it. After each case every rank resets
// (test barrier around reset()) and a matching call proves the channel is usable again.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { runRankPlans } from './rank-plans.js'
import type { RankStep } from './signature-worker.js'

const RANKS = 4
const ODD = 3 // the rank that makes the other call

interface Case {
  name: string
  common: RankStep
  odd: RankStep[] // the odd rank's calls in place of `common` (an extra call: two of them)
  /** Substrings each side's signature must show. */
  commonShows: string
  oddShows: string
}

const call = (over: Partial<Extract<RankStep, { kind: 'allreduce' }>>): RankStep => ({
  kind: 'allreduce',
  algorithm: 'oneshot-ll',
  dtype: 'f32',
  count: 1000,
  seed: 5,
  ...over,
})

const CASES: Case[] = [
  {
    name: 'dtype of equal byte size (f32 x 1000 against bf16 x 2000)',
    common: call({ algorithm: 'oneshot-sentinel' }),
    odd: [call({ algorithm: 'oneshot-sentinel', dtype: 'bf16', count: 2000 })],
    commonShows: 'f32 sum × 1000',
    oddShows: 'bf16 sum × 2000',
  },
  {
    name: 'count 1001 against 1000',
    common: call({ algorithm: 'twoshot-sentinel' }),
    odd: [call({ algorithm: 'twoshot-sentinel', count: 1001 })],
    commonShows: '× 1000',
    oddShows: '× 1001',
  },
  {
    name: 'zero length on one rank',
    common: call({ algorithm: 'ring' }),
    odd: [call({ algorithm: 'ring', count: 0 })],
    commonShows: '× 1000',
    oddShows: 'empty call',
  },
  {
    name: 'ring on one rank, oneshot-ll on the others',
    common: call({ algorithm: 'oneshot-ll' }),
    odd: [call({ algorithm: 'ring' })],
    commonShows: 'oneshot-ll ll8',
    oddShows: 'ring f32',
  },
  {
    name: 'twoshot-sentinel on one rank, oneshot-sentinel on the others',
    common: call({ algorithm: 'oneshot-sentinel' }),
    odd: [call({ algorithm: 'twoshot-sentinel' })],
    commonShows: 'oneshot-sentinel',
    oddShows: 'twoshot-sentinel',
  },
  {
    name: 'twoshot-atomic on one rank, oneshot-barrier on the others',
    common: call({ algorithm: 'oneshot-barrier' }),
    odd: [call({ algorithm: 'twoshot-atomic' })],
    commonShows: 'oneshot-barrier',
    oddShows: 'twoshot-atomic',
  },
  {
    name: 'chunk count: 3 chunks against 1 (same first chunk length)',
    common: call({ algorithm: 'oneshot-ll', count: 4096 }), // 4096 words per peer: one chunk at 4 ranks, 64 KB
    odd: [call({ algorithm: 'oneshot-ll', count: 3 * 4096 })],
    commonShows: '(chunk 1/1)',
    oddShows: '(chunk 1/3)',
  },
  {
    name: 'an extra call of another size on one rank',
    common: call({ algorithm: 'oneshot-sentinel' }),
    odd: [call({ algorithm: 'oneshot-sentinel', count: 500 }), call({ algorithm: 'oneshot-sentinel' })],
    commonShows: '× 1000',
    oddShows: '× 500',
  },
]

test('mismatch matrix: every rank of a mismatched call throws MISMATCH naming both ranks and signatures', async () => {
  const plans: RankStep[][] = Array.from({ length: RANKS }, () => [])
  const firstCallIndex: number[][] = [] // per case, per rank: the step index of its first call of the case
  const checkIndex: number[][] = [] // per case, per rank: the matching call after the reset
  for (const c of CASES) {
    firstCallIndex.push(plans.map((p) => p.length))
    for (let r = 0; r < RANKS; r++) {
      if (r === ODD) plans[r].push(...c.odd)
      else plans[r].push(c.common)
    }
    for (const p of plans) p.push({ kind: 'reset' })
    checkIndex.push(plans.map((p) => p.length))
    for (const p of plans) p.push(call({ algorithm: 'oneshot-sentinel', count: 257, seed: 9 }))
    for (const p of plans) p.push({ kind: 'reset' })
  }
  const results = await runRankPlans(plans)
  CASES.forEach((c, k) => {
    for (let r = 0; r < RANKS; r++) {
      const res = results[r][firstCallIndex[k][r]]
      assert.equal(res.bits, undefined, `${c.name}: rank ${r} returned data`)
      assert.equal(res.error?.code, 'MISMATCH', `${c.name}: rank ${r}: ${JSON.stringify(res.error)}`)
      // Within the deadline: found when the peer's signature arrives, not when the 2 s wait runs out.
      assert.ok((res.ms ?? 0) < 2_000, `${c.name}: rank ${r} took ${res.ms} ms`)
      const d = res.error?.details as Record<string, unknown>
      assert.equal(d.rank, r)
      if (r !== ODD) assert.equal(d.peer, ODD, `${c.name}: rank ${r} names the odd rank: ${JSON.stringify(res.error)}`)
      else assert.notEqual(d.peer, ODD)
      const mine = String(d.mine)
      const theirs = String(d.theirs)
      const [own, other] = r === ODD ? [c.oddShows, c.commonShows] : [c.commonShows, c.oddShows]
      assert.ok(mine.includes(own), `${c.name}: rank ${r} own signature "${mine}" shows "${own}"`)
      assert.ok(theirs.includes(other), `${c.name}: rank ${r} peer signature "${theirs}" shows "${other}"`)
      assert.match(res.error?.message ?? '', new RegExp(`rank ${r} and rank ${d.peer} made different calls`))
    }
    // After the reset every rank's matching call succeeds with the same bits.
    const after = results.map((perRank, r) => perRank[checkIndex[k][r]])
    for (const a of after) assert.ok(a.bits, `${c.name}: after reset: ${JSON.stringify(a.error)}`)
    for (const a of after) assert.deepEqual(a.bits, after[0].bits)
  })
})

test('a rank that never calls: its peers throw TIMEOUT naming it (not MISMATCH, not data)', async () => {
  const plans: RankStep[][] = [0, 1, 2].map((r) =>
    r === 2 ? [{ kind: 'skip' }] : [call({ algorithm: 'oneshot-sentinel', count: 100 })],
  )
  const results = await runRankPlans(plans, { timeoutMs: 500 })
  for (const r of [0, 1]) {
    const e = results[r][0].error
    assert.equal(e?.code, 'TIMEOUT', JSON.stringify(results[r][0]))
    assert.equal(e?.details.peer, 2)
    assert.match(String(e?.details.waitingFor), /call signature of rank 2/)
  }
})

// A call one rank refuses (a typed error there before anything runs) still takes its epoch with a refused
// signature: without it the refusing rank, carrying on, met its peers' call with its next one (the same shape: no
// signature differed) and every rank returned data mixed from two calls without an error.
test('a call refused on one rank that carries on: its peers throw MISMATCH naming the refusal, no rank returns data; refused alike on every rank: typed errors, the next call exact', async () => {
  const a = call({ algorithm: 'oneshot-sentinel', count: 256, seed: 11 })
  const b = call({ algorithm: 'oneshot-sentinel', count: 256, seed: 12 })
  const refusedA = call({ algorithm: 'oneshot-sentinel', count: 256, seed: 11, refused: true })
  const one = await runRankPlans([
    [a, b, { kind: 'reset' }, b],
    [a, b, { kind: 'reset' }, b],
    [refusedA, b, { kind: 'reset' }, b],
  ])
  for (const r of [0, 1]) {
    const e = one[r][0].error
    assert.equal(e?.code, 'MISMATCH', `rank ${r}: ${JSON.stringify(one[r][0])}`)
    assert.match(String(e?.message), /refused/, `rank ${r}: ${e?.message}`)
  }
  assert.equal(one[2][0].error?.code, 'UNSUPPORTED_DTYPE', JSON.stringify(one[2][0]))
  for (const r of [0, 1, 2])
    assert.ok(one[r][1].error, `rank ${r}: the next call returned data: ${JSON.stringify(one[r][1])}`)
  for (const r of [0, 1, 2]) assert.ok(one[r][3].bits, `rank ${r}, after reset: ${JSON.stringify(one[r][3].error)}`)
  for (const r of [1, 2]) assert.deepEqual(one[r][3].bits, one[0][3].bits)
  const all = await runRankPlans([
    [refusedA, b],
    [refusedA, b],
    [refusedA, b],
  ])
  for (const r of [0, 1, 2]) {
    assert.equal(all[r][0].error?.code, 'UNSUPPORTED_DTYPE', JSON.stringify(all[r][0]))
    assert.ok(all[r][1].bits, `rank ${r}: the next call: ${JSON.stringify(all[r][1].error)}`)
    assert.deepEqual(all[r][1].bits, one[0][3].bits, `rank ${r}: the next call's bits`)
  }
})

test('matching calls are unaffected: every algorithm, 0 elements on every rank included', async () => {
  const steps: RankStep[] = []
  for (const algorithm of [
    'oneshot-ll',
    'oneshot-sentinel',
    'twoshot-sentinel',
    'twoshot-atomic',
    'oneshot-barrier',
    'ring',
  ] as const) {
    for (const count of [0, 1, 3000]) steps.push(call({ algorithm, count, dtype: 'bf16', seed: steps.length }))
  }
  const results = await runRankPlans([steps, steps, steps])
  steps.forEach((s, i) => {
    for (const perRank of results)
      assert.ok(perRank[i].bits, `${JSON.stringify(s)}: ${JSON.stringify(perRank[i].error)}`)
    for (const perRank of results) assert.deepEqual(perRank[i].bits, results[0][i].bits)
  })
})
