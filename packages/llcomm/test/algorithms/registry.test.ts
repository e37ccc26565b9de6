// The registry is the one list of algorithms: every name of the public type appears once, the cpu backend
// implements exactly the registry's cpu entries, and the cpu rows of the shipped tuning table name cpu algorithms.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { loadTuningTable } from '../../src/algorithms/auto.js'
import { CPU_ALGORITHMS } from '../../src/algorithms/cpu/index.js'
import { ALGORITHM_REGISTRY, algorithmsForBackend } from '../../src/algorithms/registry.js'
import { ALL_ALGORITHMS, BARRIER_FREE_ALGORITHMS } from '../../src/api/types.js'

test('registry covers every algorithm once, with barrier-freedom as the public list says', () => {
  assert.deepEqual(ALGORITHM_REGISTRY.map((a) => a.name).sort(), [...ALL_ALGORITHMS].sort())
  assert.deepEqual(
    ALGORITHM_REGISTRY.filter((a) => a.barrierFree)
      .map((a) => a.name)
      .sort(),
    [...BARRIER_FREE_ALGORITHMS].sort(),
  )
})

test('the cpu backend implements exactly the registry cpu algorithms', () => {
  assert.deepEqual(Object.keys(CPU_ALGORITHMS).sort(), algorithmsForBackend('cpu').sort())
  for (const row of loadTuningTable().entries.filter((e) => e.backend === 'cpu')) {
    assert.ok(row.algorithm in CPU_ALGORITHMS, row.algorithm)
  }
})
