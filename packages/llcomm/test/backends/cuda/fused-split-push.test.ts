// Which split launches run the push kernels (fused_split.cuh kPush): the host's rule must match what the kernel
// serves (clusters of more than one block, at most LLCOMM_SPLIT_MAX_UNITS q's a cluster), since the push kernel writes
// nothing on any other shape.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import {
  FUSED_SPLIT_MAX_UNITS,
  FUSED_SPLIT_VIRTUAL_THREADS,
  fusedSplitPushes,
  planFusedSplit,
} from '../../../src/backends/cuda/fused-launcher.js'
import { FUSED_KERNELS } from '../../../src/backends/cuda/kernel-table.js'

test('fusedSplitPushes: clusters of 2, 4 or 8 blocks whose rows q fit the array; never clusters of one', () => {
  const rowsFit = FUSED_SPLIT_MAX_UNITS / FUSED_SPLIT_VIRTUAL_THREADS // 8 rows a cluster at 512 threads
  assert.equal(rowsFit, 8)
  for (const c of [2, 4, 8]) {
    for (const g of [1, 2, 4]) {
      const at = (rows: number) => fusedSplitPushes({ firstRow: 0, rows, blocksPerRank: c * g, clusterBlocks: c })
      assert.equal(at(1), true, `C ${c}, G ${g}, 1 row`)
      assert.equal(at(rowsFit * g), true, `C ${c}, G ${g}: ${rowsFit} rows a cluster`)
      // llcPiece gives the first clusters ceil(rows / G) rows: one row more than fits in one cluster is refused
      assert.equal(at(rowsFit * g + 1), false, `C ${c}, G ${g}: ${rowsFit + 1} rows in the first cluster`)
    }
  }
  assert.equal(fusedSplitPushes({ firstRow: 0, rows: 1, blocksPerRank: 4, clusterBlocks: 1 }), false)
  assert.equal(fusedSplitPushes({ firstRow: 0, rows: 1, blocksPerRank: 4 }), false, 'no cluster attribute')
  // the emulator's smaller blocks: 32 threads, so 128 rows a cluster
  assert.equal(fusedSplitPushes({ firstRow: 0, rows: 64, blocksPerRank: 2, clusterBlocks: 2 }, 32), true)
})

test('every split kernel has its push kernel, in every dtype', () => {
  for (const kind of ['fused_rmsnorm_split', 'fused_rmsnorm_split_ll'] as const)
    for (const k of FUSED_KERNELS.filter((x) => x.kind === kind)) {
      const push = FUSED_KERNELS.find((x) => x.kind === `${kind}_push` && x.dtype === k.dtype)
      assert.ok(push, `${k.kernelName} has a push kernel`)
      assert.equal(push.kernelName, `llcomm_${kind}_push_${k.dtype}`)
      assert.equal(push.sourceFile, `allreduce/${kind}_push.cu`)
    }
})

test("the planner's split launches at 8 ranks, batch 1-16: every cluster of more than one block pushes", () => {
  // What the issue-21 bench measures (bf16, hidden 4096 / 8192): the push kernels serve every such launch, the
  // barrier kernels the clusters of one.
  for (const hidden of [4096, 8192])
    for (const rows of [1, 2, 4, 8, 16])
      for (const l of planFusedSplit('split', 8, rows, hidden, 'bf16').launches)
        assert.equal(fusedSplitPushes(l), (l.clusterBlocks ?? 1) > 1, `${rows} x ${hidden}: ${JSON.stringify(l)}`)
})
