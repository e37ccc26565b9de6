// The host float64 decode reference (test/support/decode-reference.ts), the oracle of the GPU decode test: its
// hash-based uniform fill, bf16 rounding, and a tiny TP 2 step with and without AllReduce.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { planDecodeStep } from '../../src/decode/plan.js'
import { findModel, loadModelTable, type ModelArchitecture } from '../../src/model/decode-tables.js'
import { decodeReference, decodeUniform, roundBf16 } from '../support/decode-reference.js'

test('decodeUniform: values in [-1, 1), mean near 0, deterministic, different per seed', () => {
  const n = 100_000
  let sum = 0
  let sumSq = 0
  const bins = new Array<number>(10).fill(0)
  for (let i = 0; i < n; i++) {
    const u = decodeUniform(i, 12345)
    assert.ok(u >= -1 && u < 1, `u(${i}) = ${u}`)
    sum += u
    sumSq += u * u
    bins[Math.floor((u + 1) * 5)]++
  }
  const mean = sum / n
  // Uniform on [-1, 1): mean 0 (sd of the mean sqrt(1/3 / n) ≈ 0.0018), variance 1/3.
  assert.ok(Math.abs(mean) < 0.01, `mean ${mean}`)
  assert.ok(Math.abs(sumSq / n - 1 / 3) < 0.01, `variance ${sumSq / n}`)
  for (const [i, c] of bins.entries()) assert.ok(Math.abs(c - n / 10) < 0.05 * (n / 10), `bin ${i}: ${c}`)

  for (const i of [0, 1, 2, 1000, 2 ** 32 + 5, 2 ** 40])
    assert.equal(decodeUniform(i, 7), decodeUniform(i, 7), `deterministic at ${i}`)
  let differ = 0
  for (let i = 0; i < 1000; i++) if (decodeUniform(i, 1) !== decodeUniform(i, 2)) differ++
  assert.ok(differ > 990, `seeds 1 and 2 agree on ${1000 - differ} of 1000 indices`)
  // The high word of the index counts: i and i + 2^32 are different draws.
  assert.notEqual(decodeUniform(3, 9), decodeUniform(2 ** 32 + 3, 9))
  // Values are multiples of 2^-23 (24 random bits over [-1, 1)).
  for (let i = 0; i < 100; i++) assert.ok(Number.isInteger((decodeUniform(i, 3) + 1) * 2 ** 23))
})

test('roundBf16: round to nearest even, idempotent', () => {
  // Exactly representable values stay.
  for (const x of [0, 1, -1, 0.5, 2, 1.0078125, -3.5, 65280]) assert.equal(roundBf16(x), x)
  // bf16 keeps 7 fraction bits: near 1 the step is 2^-7.
  assert.equal(roundBf16(1 + 2 ** -8), 1, 'halfway, ties to the even mantissa (1.0)')
  assert.equal(roundBf16(1 + 3 * 2 ** -8), 1 + 2 ** -6, 'halfway, ties to the even mantissa (1 + 2^-6)')
  assert.equal(roundBf16(1 + 2 ** -8 + 2 ** -16), 1 + 2 ** -7, 'above halfway rounds up')
  assert.equal(roundBf16(1 + 2 ** -9), 1, 'below halfway rounds down')
  assert.equal(roundBf16(-(1 + 3 * 2 ** -8)), -(1 + 2 ** -6), 'sign is symmetric')
  assert.equal(roundBf16(Math.PI), 3.140625)
  assert.equal(roundBf16(0.1), 0.10009765625)
  for (let i = 0; i < 2000; i++) {
    const x = decodeUniform(i, 99) * 1000
    const r = roundBf16(x)
    assert.equal(roundBf16(r), r, `idempotent at ${x}`)
    assert.ok(Math.abs(r - x) <= Math.abs(x) * 2 ** -8, `${x} → ${r} is within half a bf16 step`)
  }
})

test('decodeReference on a tiny TP 2 model: AllReduce makes the ranks agree bitwise; without it they differ', () => {
  const llama8b = findModel(loadModelTable(), 'llama-3.1-8b')
  const tiny: ModelArchitecture = {
    ...llama8b,
    name: 'tiny',
    layers: 1,
    hiddenSize: 256,
    heads: 4,
    kvHeads: 2,
    intermediateSize: 512,
    vocabSize: 512,
  }
  const plan = planDecodeStep(tiny, { tp: 2, batch: 2, context: 5, smCount: 4 })
  assert.equal(plan.qHeads, 2)
  assert.equal(plan.kvHeads, 1)
  const reduced = decodeReference(plan, true)
  assert.equal(reduced.residual.length, 2)
  assert.equal(reduced.logits.length, 2)
  for (const r of [0, 1]) {
    assert.equal(reduced.residual[r].length, plan.batch * plan.hidden)
    assert.equal(reduced.logits[r].length, plan.batch * plan.vocabRows)
    assert.ok(
      reduced.residual[r].every((v) => Number.isFinite(v)),
      `rank ${r}: residual finite`,
    )
    assert.ok(
      reduced.logits[r].every((v) => Number.isFinite(v)),
      `rank ${r}: logits finite`,
    )
    assert.ok(
      reduced.residual[r].every((v) => Math.fround(v) === v),
      `rank ${r}: residual is f32`,
    )
  }
  assert.deepEqual(
    Buffer.from(reduced.residual[0].buffer),
    Buffer.from(reduced.residual[1].buffer),
    'with AllReduce both ranks hold the same residual bits',
  )
  assert.ok(
    reduced.residual[0].some((v) => v !== 0),
    'the residual is not all zero',
  )
  // Each rank's logits are its own vocabulary shard (a different LM head slice): they need not agree.
  assert.ok(reduced.logits[0].some((v, i) => v !== reduced.logits[1][i]))

  const own = decodeReference(plan, false)
  assert.ok(
    own.residual.every((res) => res.every((v) => Number.isFinite(v))),
    'finite without AllReduce',
  )
  const differing = own.residual[0].filter((v, i) => v !== own.residual[1][i]).length
  assert.ok(differing > 0.9 * own.residual[0].length, `without AllReduce only ${differing} values differ`)
  // The reference is deterministic.
  assert.deepEqual(decodeReference(plan, true).residual, reduced.residual)
})
