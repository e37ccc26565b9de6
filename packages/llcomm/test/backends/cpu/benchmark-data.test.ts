// RankBenchmarkData: outputs are checked by a word compare against the last verified output of their input set,
// else against the float64 reference; above the cache limit a changed output is checked only when allowed.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { RankBenchmarkData } from '../../../src/backends/cpu/benchmark-data.js'
import { DTYPE_CODECS } from '../../../src/dtype/codec.js'

/** The correct f32 sum of every rank's input of one set, as the ranks would produce it (any order within tolerance). */
function sumOfSet(count: number, ranks: number, seed: number, set: number): Int32Array {
  const acc = new Float64Array(count)
  for (let r = 0; r < ranks; r++) {
    const d = new RankBenchmarkData('f32', count, ranks, r, seed)
    d.inputs[set].forEach((w, i) => {
      acc[i] += DTYPE_CODECS.f32.decodeLane(w)
    })
  }
  return Int32Array.from(acc, (x) => DTYPE_CODECS.f32.encodeLane(x))
}

test('a correct output passes, a wrong one is counted, a repeat is a word compare', () => {
  const data = new RankBenchmarkData('f32', 100, 3, 0, 7)
  const good = sumOfSet(100, 3, 7, 1)
  assert.equal(data.countWrong(good, 1), 0)
  const bad = good.slice()
  bad[5] = DTYPE_CODECS.f32.encodeLane(1e6)
  assert.equal(data.countWrong(bad, 1), 1)
  assert.equal(data.countWrong(good.slice(), 1), 0)
})

test('above the cache limit, changed bits are checked only when a recompute is allowed', () => {
  const count = (1 << 16) + 1
  const data = new RankBenchmarkData('f32', count, 2, 0, 3)
  const good = sumOfSet(count, 2, 3, 0)
  assert.equal(data.countWrong(good, 0), 0) // first use: always checked
  const bad = good.slice()
  bad[0] = DTYPE_CODECS.f32.encodeLane(1e6)
  assert.equal(data.countWrong(bad, 0, false), undefined, 'not checked: counts as unchecked, not as correct')
  assert.equal(data.countWrong(bad, 0, true), 1)
})
