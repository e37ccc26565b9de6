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

describe('decode claims per launch mode', () => {
  it('prices every decode claim in graph and eager mode, the launch term adding to the memory-only ITL', () => {
    const claims = loadSeedClaims()
    const decodeIds = claims.filter((c) => c.kind === 'itl-pair' || c.kind === 'throughput-without-allreduce')
    assert.ok(decodeIds.length >= 3)
    const modes = runSeedChecks(loadAlgorithmTable(), loadPlatformTable(), {}, ['none', 'graph', 'eager'])
    for (const claim of decodeIds) {
      const check = modes.find((c) => c.id === claim.id)
      assert.ok(check)
      const launches = new Set(check.figures.map((f) => f.launch))
      assert.deepEqual([...launches].sort(), ['eager', 'graph', 'none'])
      if (claim.kind === 'itl-pair') {
        const itl = (launch: string) =>
          check.figures.find((f) => f.launch === launch && f.what.startsWith(`ITL with ${claim.baseline}`))
            ?.predicted as number
        assert.ok(itl('graph') > itl('none'), `${claim.id}: graph ${itl('graph')} vs none ${itl('none')}`)
        assert.ok(itl('eager') >= itl('graph'), `${claim.id}: eager ${itl('eager')} vs graph ${itl('graph')}`)
      }
    }
  })
})
