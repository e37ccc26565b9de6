import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { seedChecksText } from '../../src/cli/commands/model.js'
import { loadAlgorithmTable, loadPlatformTable } from '../../src/model/latency-tables.js'
import { loadSeedClaims, runSeedChecks } from '../../src/model/seed-checks.js'

describe("the model against the seeds' claims", () => {
  it('prices every claim and reports its error (printed; not tuned to pass)', () => {
    const checks = runSeedChecks(loadAlgorithmTable(), loadPlatformTable())
    assert.deepEqual(
      checks.map((c) => c.id),
      loadSeedClaims().map((c) => c.id),
    )
    for (const c of checks) {
      assert.ok(c.figures.length > 0)
      for (const f of c.figures) {
        assert.ok(Number.isFinite(f.predicted), `${c.id} ${f.what}`)
        assert.equal(f.relError, (f.predicted - f.claimed) / f.claimed)
      }
    }
    console.log(seedChecksText(checks))
  })
})
