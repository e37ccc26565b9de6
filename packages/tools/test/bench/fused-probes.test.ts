// The fused bench's probe table (scripts/bench-fused.mjs --probes) against the kernels that exist, and where the
// SPREAD candidate applies on the planner's shapes (its kernels write nothing on any other, so the rule must be right).
import assert from 'node:assert/strict'
import { test } from 'node:test'
import {
  FUSED_KERNELS,
  FUSED_PROBE_KERNELS,
  FUSED_PROBE_SOURCE,
  fusedSplitSpreadApplies,
  planFusedSplit,
} from 'llcomm/internal'
import { FUSED_BENCH_CANDIDATES, FUSED_BENCH_PROBES } from '../../src/bench/fused.js'

test('every probe column names a kernel of the probe source or a shipped split kernel in its own source', () => {
  for (const [name, p] of Object.entries(FUSED_BENCH_PROBES)) {
    if (p.sourceFile === undefined) {
      assert.ok(FUSED_PROBE_KERNELS.includes(p.kernel), `${name}: ${p.kernel} is not in ${FUSED_PROBE_SOURCE}`)
    } else {
      const k = FUSED_KERNELS.find((x) => x.kernelName === p.kernel)
      assert.ok(k, `${name}: ${p.kernel} is no shipped kernel`)
      assert.equal(k.sourceFile, p.sourceFile, name)
      assert.equal(k.dtype, 'bf16', name)
      assert.ok(k.kind === 'fused_rmsnorm_split' || k.kind === 'fused_rmsnorm_split_ll', name)
    }
  }
  for (const c of FUSED_BENCH_CANDIDATES) assert.ok(c in FUSED_BENCH_PROBES, c)
  // the spread kernels are exactly the probes marked spread
  for (const p of Object.values(FUSED_BENCH_PROBES))
    assert.equal(p.spread === true, p.kernel.includes('spread'), p.kernel)
})

test('the SPREAD candidate applies at 8 ranks, 4096 bf16, batch 1-2 of the split-ll plan, nowhere else benched', () => {
  const applies = (ranks: number, hidden: number, batch: number) =>
    planFusedSplit('split-ll', ranks, batch, hidden, 'bf16').launches.every((l) =>
      fusedSplitSpreadApplies(ranks, hidden, 'bf16', l),
    )
  for (const batch of [1, 2]) assert.ok(applies(8, 4096, batch), `8 ranks 4096 × ${batch}`)
  for (const batch of [4, 8, 16, 32]) assert.ok(!applies(8, 4096, batch), `8 ranks 4096 × ${batch}`)
  for (const batch of [1, 2, 4, 8, 16]) assert.ok(!applies(8, 8192, batch), `8 ranks 8192 × ${batch}`)
  for (const batch of [1, 2, 4]) assert.ok(!applies(2, 4096, batch), `2 ranks 4096 × ${batch}`) // < 8 ranks: no spread
  // the rule's edges: 64 units per block at most (C = 8, one row), at least 4 thread groups
  assert.ok(fusedSplitSpreadApplies(8, 4096, 'bf16', { firstRow: 0, rows: 1, blocksPerRank: 8, clusterBlocks: 8 }))
  assert.ok(!fusedSplitSpreadApplies(8, 4096, 'bf16', { firstRow: 0, rows: 2, blocksPerRank: 8, clusterBlocks: 8 }))
  assert.ok(!fusedSplitSpreadApplies(8, 4096, 'bf16', { firstRow: 0, rows: 1, blocksPerRank: 4, clusterBlocks: 4 }))
  assert.ok(fusedSplitSpreadApplies(8, 2048, 'f32', { firstRow: 0, rows: 1, blocksPerRank: 8, clusterBlocks: 8 }))
})
