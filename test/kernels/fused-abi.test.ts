/**
 * The fused kernels' host side without a GPU: fused_abi.cuh's structs compiled on the host against fused-abi.ts's
 * layouts (offsetof/sizeof, constants, declared fields), the packers, the instantiation lines, and the launch plans
 * (rows and buffers over blocks and launches, lanes never overfilled).
 */

import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import type { Dtype } from 'llcomm/internal'
import {
  ALLREDUCE_MANY_PARAMS_LAYOUT,
  deviceBufferLayout,
  FUSED_ABI_CONSTANTS,
  FUSED_ABI_STRUCTS,
  FUSED_CLUSTER_SIZES,
  FUSED_KERNELS,
  FUSED_NORM_PARAMS_LAYOUT,
  FUSED_SPLIT_MAX_ROWS,
  FUSED_SPLIT_MAX_UNITS,
  FUSED_SPLIT_TWOSHOT_PART_SLOTS,
  FUSED_SPLIT_VIRTUAL_THREADS,
  fusedRowsPerBlock,
  fusedSplitPairsFirst,
  fusedSplitPushes,
  fusedSplitRowsPerCluster,
  fusedSplitTwoshotFirst,
  fusedTwoshotFirst,
  kernelsDirectory,
  LLCOMM_MANY_MAX_BUFFERS,
  maxBlocksPerRank,
  packAllReduceManyParams,
  packFusedNormParams,
  parseFusedInstantiations,
  planAllReduceMany,
  planFusedNorm,
  planFusedSplit,
} from 'llcomm/internal'
import { findHostCxx, SKIP_NVCC } from './toolchain.js'

/** The 1 MiB receive buffer, the CUDA default until 2026-12-02 (the pinned lane facts and crossovers measured at it). */
const MIB = 1 << 20

test('fused-abi.ts layouts match offsetof/sizeof of fused_abi.cuh compiled on the host', (t) => {
  const cxx = findHostCxx()
  if (!cxx) {
    if (SKIP_NVCC) return t.skip('no host C++ compiler and LLCOMM_SKIP_NVCC=1')
    throw new Error('no C++ compiler for the fused ABI check')
  }
  const lines = ['#include <cstddef>', '#include <cstdio>', '#include "llcomm/fused_abi.cuh"', 'int main() {']
  for (const s of FUSED_ABI_STRUCTS) {
    lines.push(`  std::printf("S ${s.cName} %zu\\n", sizeof(${s.cName}));`)
    for (const f of s.fields)
      lines.push(
        `  std::printf("F ${s.cName} ${f.name} %zu %zu\\n", offsetof(${s.cName}, ${f.name}), sizeof(((${s.cName}*)0)->${f.name}));`,
      )
  }
  for (const name of Object.keys(FUSED_ABI_CONSTANTS))
    lines.push(`  std::printf("C ${name} %llu\\n", (unsigned long long)(${name}));`)
  lines.push('  return 0;', '}')
  const work = mkdtempSync(join(tmpdir(), 'llcomm-fused-abi-'))
  try {
    const src = join(work, 'fused_abi.cpp')
    const exe = join(work, 'fused_abi')
    writeFileSync(src, lines.join('\n'))
    const isNvcc = cxx.endsWith('nvcc')
    execFileSync(cxx, [...(isNvcc ? ['-x', 'c++'] : []), '-std=c++17', '-I', kernelsDirectory(), src, '-o', exe], {
      stdio: 'pipe',
    })
    const out = execFileSync(exe, { encoding: 'utf8' }).trim().split('\n')
    const sizes = new Map<string, number>()
    const fields = new Map<string, [number, number]>()
    const consts = new Map<string, number>()
    for (const l of out) {
      const w = l.split(' ')
      if (w[0] === 'S') sizes.set(w[1], Number(w[2]))
      else if (w[0] === 'F') fields.set(`${w[1]}.${w[2]}`, [Number(w[3]), Number(w[4])])
      else consts.set(w[1], Number(w[2]))
    }
    for (const s of FUSED_ABI_STRUCTS) {
      assert.equal(sizes.get(s.cName), s.bytes, `sizeof(${s.cName})`)
      for (const f of s.fields)
        assert.deepEqual(fields.get(`${s.cName}.${f.name}`), [f.offset, f.bytes], `${s.cName}.${f.name}`)
    }
    for (const [name, v] of Object.entries(FUSED_ABI_CONSTANTS)) assert.equal(consts.get(name), v, name)
    // Under 32764 bytes, the largest kernel parameter block CUDA 12.1+ takes.
    assert.ok(ALLREDUCE_MANY_PARAMS_LAYOUT.bytes <= 32764)
    assert.ok(FUSED_NORM_PARAMS_LAYOUT.bytes <= 4096, 'the fused RMSNorm params stay within the classic 4 KB')
  } finally {
    rmSync(work, { recursive: true, force: true })
  }
})

test("the split planner's limits are fused_split.cuh's (a plan past them makes the kernel return without writing)", () => {
  const header = readFileSync(join(kernelsDirectory(), 'llcomm', 'fused_split.cuh'), 'utf8')
  const define = (name: string) => {
    const m = new RegExp(`^#define ${name} (\\d+)u?\\s*$`, 'm').exec(header)
    assert.ok(m, `#define ${name} not found`)
    return Number(m[1])
  }
  assert.equal(define('LLCOMM_SPLIT_MAX_UNITS'), FUSED_SPLIT_MAX_UNITS)
  assert.equal(define('LLCOMM_SPLIT_MAX_ROWS'), FUSED_SPLIT_MAX_ROWS)
  assert.equal(define('LLC_SPLIT_TWO_SUM_SLOTS'), FUSED_SPLIT_TWOSHOT_PART_SLOTS)
})

test('fused_abi.cuh declares exactly the fields fused-abi.ts lays out, in order', () => {
  const header = readFileSync(join(kernelsDirectory(), 'llcomm', 'fused_abi.cuh'), 'utf8')
  const kinds: Record<string, string> = { llc_u8: 'u8', llc_u32: 'u32', llc_u64: 'u64' }
  for (const s of FUSED_ABI_STRUCTS) {
    const body = new RegExp(`struct ${s.cName} \\{([^}]*)\\};`).exec(header)?.[1]
    assert.ok(body, `struct ${s.cName} not found`)
    const declared: string[] = []
    for (const m of body.replace(/\/\/[^\n]*/g, '').matchAll(/(\w+)\s+(\w+)(?:\[[^\]]+\])*\s*;/g)) {
      const [, type, name] = m
      if (type === 'LlcommRegion') declared.push(`${name}.offset:u64`, `${name}.channelHalfBytes:u64`)
      else declared.push(`${name}:${kinds[type] ?? type}`)
    }
    assert.deepEqual(
      declared,
      s.fields.map((f) => `${f.name}:${f.kind}`),
    )
  }
})

test('the packers put pointers at their rank (and buffer) and refuse misaligned ones', () => {
  const L = deviceBufferLayout(2)
  const base = {
    recvBuf: [0x100000n, 0x200000n],
    scratch: [0x300000n, 0x400000n],
    errorWord: 0x500000n,
    timeoutNs: 1000n,
    sentinel: L.sentinel,
    nranks: 2,
    ranksInLaunch: 2,
    blocksPerRank: 3,
    launchRanks: [0, 1],
  }
  const norm = packFusedNormParams({
    ...base,
    input: [0x1000n, 0x2000n],
    residual: [0x3000n, 0x4000n],
    out: [0x5000n, 0x6000n],
    weight: [0x7000n, 0x8000n],
    rows: 5,
    hidden: 4096,
    epsBits: 0x3727c5ac,
    flags: 1,
  })
  const F = FUSED_NORM_PARAMS_LAYOUT.byName
  assert.equal(norm.readBigUInt64LE(F.residual.offset + 8), 0x4000n)
  assert.equal(norm.readUInt32LE(F.hidden.offset), 4096)
  assert.equal(norm.readUInt32LE(F.flags.offset), 1)
  assert.equal(norm.readUInt8(F.launchRanks.offset + 1), 1)
  assert.throws(
    () =>
      packFusedNormParams({
        ...base,
        input: [0x1008n, 0x2000n],
        residual: [0x3000n, 0x4000n],
        out: [0x5000n, 0x6000n],
        weight: [0x7000n, 0x8000n],
        rows: 1,
        hidden: 8,
        epsBits: 0,
        flags: 0,
      }),
    (e: Error & { code?: string }) => e.code === 'MISALIGNED_BUFFER',
  )
  const many = packAllReduceManyParams({
    ...base,
    inputs: [
      [0x1000n, 0x2000n],
      [0x3000n, 0x4000n],
    ],
    outputs: [
      [0x5000n, 0x6000n],
      [0x7000n, 0x8000n],
    ],
    counts: [10, 20],
  })
  const M = ALLREDUCE_MANY_PARAMS_LAYOUT.byName
  assert.equal(many.readBigUInt64LE(M.input.offset + (64 + 1) * 8), 0x4000n, 'input[1][1]')
  assert.equal(many.readBigUInt64LE(M.output.offset + 64 * 8), 0x7000n, 'output[1][0]')
  assert.equal(many.readBigUInt64LE(M.count.offset + 8), 20n)
  assert.equal(many.readUInt32LE(M.buffers.offset), 2)
  assert.throws(
    () => packAllReduceManyParams({ ...base, inputs: [], outputs: [], counts: [] }),
    (e: Error & { code?: string }) => e.code === 'INVALID_ARGUMENT',
  )
})

test('the LLCOMM_FUSED_VARIANT lines give every fused kernel in every dtype', () => {
  for (const kind of ['fused_rmsnorm_oneshot', 'fused_rmsnorm_twoshot', 'rmsnorm', 'allreduce_many'])
    for (const dtype of ['f32', 'f16', 'bf16'])
      assert.ok(
        FUSED_KERNELS.some((k) => k.kind === kind && k.dtype === dtype && k.kernelName === `llcomm_${kind}_${dtype}`),
        `${kind} ${dtype}`,
      )
  assert.throws(() => parseFusedInstantiations('LLCOMM_FUSED_VARIANT(nope, f32)'), /unknown fused kernel/)
})

test('planFusedNorm: every launch fits the lanes, rows are covered once, one-shot while it fits one launch', () => {
  const dtypes: Dtype[] = ['f32', 'f16', 'bf16']
  for (const nranks of [2, 3, 8, 16])
    for (const dtype of dtypes)
      for (const hidden of [8, 1000, 4096, 8192])
        for (const rows of [1, 2, 7, 16, 17, 64, 300]) {
          if ((hidden * (dtype === 'f32' ? 4 : 2)) % 16 !== 0) continue
          for (const alg of ['oneshot', 'twoshot', 'auto'] as const) {
            const k1 = fusedRowsPerBlock('oneshot', nranks, hidden, dtype)
            const k2 = fusedRowsPerBlock('twoshot', nranks, hidden, dtype)
            if (
              (alg === 'oneshot' && k1 === 0) ||
              (alg !== 'oneshot' && k2 === 0 && !(alg === 'auto' && k1 * maxBlocksPerRank(nranks) >= rows))
            ) {
              assert.throws(() => planFusedNorm(alg, nranks, rows, hidden, dtype), /does not fit/)
              continue
            }
            const plan = planFusedNorm(alg, nranks, rows, hidden, dtype)
            if (alg !== 'auto') assert.equal(plan.algorithm, alg)
            else
              assert.equal(
                plan.algorithm,
                k1 * maxBlocksPerRank(nranks) >= rows && !fusedTwoshotFirst(nranks, rows, hidden, dtype)
                  ? 'oneshot'
                  : 'twoshot',
              )
            const k = plan.algorithm === 'oneshot' ? k1 : k2
            let next = 0
            for (const l of plan.launches) {
              assert.equal(l.firstRow, next)
              assert.ok(l.blocksPerRank >= 1 && l.blocksPerRank <= maxBlocksPerRank(nranks))
              assert.ok(Math.ceil(l.rows / l.blocksPerRank) <= k, 'rows per block within the lane')
              next += l.rows
            }
            assert.equal(next, rows)
          }
        }
  // 8192 f32 at 8 ranks with a 1 MiB buffer: 32 KB rows do not fit a one-shot lane (8 KB) but fit the two-shot's 8
  // parts of 4 KB. With the 4 MiB default the one-shot lane is 32 KB: one row a block.
  assert.equal(fusedRowsPerBlock('oneshot', 8, 8192, 'f32', MIB), 0)
  assert.equal(fusedRowsPerBlock('twoshot', 8, 8192, 'f32', MIB), 1)
  assert.equal(planFusedNorm('auto', 8, 1, 8192, 'f32', MIB).algorithm, 'twoshot')
  assert.equal(fusedRowsPerBlock('oneshot', 8, 8192, 'f32'), 1)
  assert.equal(planFusedNorm('auto', 8, 1, 8192, 'f32').algorithm, 'oneshot')
  assert.throws(() => planFusedNorm('auto', 2, 1, 4095, 'bf16'), /multiple of 16/)
})

test("planFusedNorm 'auto' with the split kernels usable: the measured crossovers (bf16, one H200, 2026-12-01)", () => {
  // Measured with the 1 MiB buffer of the day (bench/results/cuda-h200-bench-fused-bf16-2026-12-01c.json).
  const auto = (nranks: number, rows: number, hidden: number) =>
    planFusedNorm('auto', nranks, rows, hidden, 'bf16', MIB, nranks, undefined, true)
  // 8 ranks, hidden 8192: the one-shot does not fit; split (one launch) beats the two-shot at batch 1-8
  // (6.1-9.6 against 11.7-12.5 us), the two-shot keeps batch 16 (split needs two launches: 19.3 against 14.0).
  // Since 2026-12-03 (the two-shot's spread path, fusedTwoshotFirst) batch 8 of 8192 takes the two-shot; since
  // 2026-12-07 batch 4-7 take the split two-shot (fusedSplitTwoshotFirst; its parts fit the 1 MiB buffer's lanes).
  for (const rows of [1, 2]) assert.equal(auto(8, rows, 8192).algorithm, 'split', `8r 8192 b${rows}`)
  assert.equal(auto(8, 4, 8192).algorithm, 'split-twoshot', '8r 8192 b4')
  for (const rows of [8, 16]) assert.equal(auto(8, rows, 8192).algorithm, 'twoshot', `8r 8192 b${rows}`)
  // 8 ranks, hidden 4096: split at batch 1-4 (5.7-6.5 against 6.4-6.8), the one-shot from batch 8 (7.0 against 7.4);
  // since the split push kernels (2026-12-07, one H100) split at batch 8 too (6.49 against the one-shot's 7.01 us,
  // bench/results/cuda-h100-split-push-ab-2026-12-07.txt).
  for (const rows of [1, 2, 4, 8]) assert.equal(auto(8, rows, 4096).algorithm, 'split', `8r 4096 b${rows}`)
  assert.equal(auto(8, 9, 4096).algorithm, 'oneshot')
  assert.equal(auto(32, 8, 4096).algorithm, 'twoshot', 'above 16 ranks not measured: the choice before (one launch)')
  assert.equal(auto(8, 16, 4096).algorithm, 'twoshot', 'the two-shot spread path since 2026-12-03')
  // 2 ranks: the one-shot at hidden 4096 (4.5 against 4.9 at batch 1), split at 8192 batch 1-4 (5.4-5.6 against 7.0).
  for (const rows of [1, 4, 16]) assert.equal(auto(2, rows, 4096).algorithm, 'oneshot', `2r 4096 b${rows}`)
  for (const rows of [1, 4]) assert.equal(auto(2, rows, 8192).algorithm, 'split', `2r 8192 b${rows}`)
  // The 4 MiB default (bench/results/cuda-h200-bench-fused-bf16-2026-12-02c-bb4M.json): the one-shot's lanes now hold
  // 8192-wide rows, but its one block per row loses to split at batch 8 (10.77 against 9.72 us); batch 16 keeps it
  // (14.24 against split's 15.05); 4096 as at 1 MiB.
  const autoDefault = (nranks: number, rows: number, hidden: number) =>
    planFusedNorm('auto', nranks, rows, hidden, 'bf16', undefined, nranks, undefined, true).algorithm
  // Since 2026-12-03 the two-shot's spread path takes 8192 batch 8-16 and 4096 batch 16-32 (fusedTwoshotFirst, below);
  // since 2026-12-07 the split two-shot takes 8192 batch 4-7 (fusedSplitTwoshotFirst, below).
  for (const rows of [1, 2]) assert.equal(autoDefault(8, rows, 8192), 'split', `8r 8192 b${rows}, 4 MiB`)
  assert.equal(autoDefault(8, 4, 8192), 'split-twoshot', '8r 8192 b4, 4 MiB')
  for (const rows of [8, 16]) assert.equal(autoDefault(8, rows, 8192), 'twoshot', `8r 8192 b${rows}, 4 MiB`)
  for (const rows of [1, 2, 4]) assert.equal(autoDefault(8, rows, 4096), 'split', `8r 4096 b${rows}, 4 MiB`)
  assert.equal(autoDefault(8, 8, 4096), 'split')
  assert.equal(autoDefault(8, 16, 4096), 'twoshot')
  // Without the split kernels (before sm_90, or not asked): the first rule.
  assert.equal(planFusedNorm('auto', 8, 1, 8192, 'bf16', MIB).algorithm, 'twoshot')
  assert.equal(planFusedNorm('auto', 8, 1, 4096, 'bf16', MIB).algorithm, 'oneshot')
})

test("planFusedNorm 'auto' takes the two-shot where its spread path serves the rows (one H200, 8 ranks, bf16, 2026-12-03)", () => {
  // bench/results/cuda-h200-bench-fused-bf16-v8-2026-12-03b.json (f1dd9b7: the fused two-shot's spread path), fused
  // two-shot against the choice before: 4096 batch 16 7.38 / 8.70 us (one-shot), 32 10.63 / 14.58; 8192 batch 8
  // 8.87 / 9.71 (split), 16 9.91 / 14.22 (one-shot). Not at 4096 batch 8 (6.69 / 6.64), nor at 8192 batch 32, whose
  // two rows a block make parts of 256 slots (the serial path), nor below 8 ranks (no spread path).
  const first = (nranks: number, rows: number, hidden: number) => fusedTwoshotFirst(nranks, rows, hidden, 'bf16')
  assert.deepEqual(
    [first(8, 16, 4096), first(8, 32, 4096), first(8, 8, 8192), first(8, 16, 8192)],
    [true, true, true, true],
  )
  assert.deepEqual(
    [
      first(8, 8, 4096),
      first(8, 4, 8192),
      first(8, 32, 8192),
      first(8, 64, 4096),
      first(2, 16, 4096),
      first(4, 32, 4096),
    ],
    [false, false, false, false, false, false],
  )
  // at 16 ranks (8 blocks a rank) at every batch while it spreads (…-2026-12-03c.json: 4096 batch 1 6.59 against
  // split's 7.07 us, batch 8 7.14 against the one-shot's 13.81): 4096 batch 16 is two rows a block, 16 parts of 64
  // slots (spread); 8192 batch 32 is four rows a block, parts of 256 slots (serial)
  assert.deepEqual(
    [first(16, 1, 4096), first(16, 8, 4096), first(16, 16, 4096), first(16, 4, 8192)],
    [true, true, true, true],
  )
  assert.equal(first(16, 32, 8192), false)
  // above 16 ranks not measured: the choice before stands
  assert.deepEqual([first(32, 16, 4096), first(64, 1, 4096)], [false, false])
  for (const [nranks, rows, hidden] of [
    [8, 16, 4096],
    [8, 16, 8192],
    [16, 16, 4096],
    [16, 1, 4096],
  ] as const) {
    const plan = planFusedNorm('auto', nranks, rows, hidden, 'bf16', undefined, nranks, undefined, true)
    assert.equal(plan.algorithm, 'twoshot')
    assert.equal(plan.launches.length, 1)
  }
})

test("planFusedNorm 'auto' takes the split two-shot at 8-15 ranks, hidden 8192 and more, batch 4-7 (one H100, 8 ranks, bf16, 2026-12-07)", () => {
  // bench/results/cuda-h100-split-twoshot-keep-ab-2026-12-07.txt: 8192 batch 4 7.47 us against split's 8.58 and the
  // two-shot's 8.34; not batch 1-2 or 16, nor hidden 4096, nor 2 ranks; not batch 8, where the TP 8 decode step
  // (bench/results/cuda-h100-v8-decode-70b-l20-b8-fused-2026-12-07.json) was faster with the fused two-shot.
  const auto = (nranks: number, rows: number, hidden: number, bufferBytes?: number) =>
    planFusedNorm('auto', nranks, rows, hidden, 'bf16', bufferBytes, nranks, undefined, true)
  for (const rows of [4, 5, 7]) {
    assert.equal(fusedSplitTwoshotFirst(8, rows, 8192), true)
    const plan = auto(8, rows, 8192)
    assert.equal(plan.algorithm, 'split-twoshot', `8r 8192 b${rows}`)
    assert.equal(plan.launches.length, 1)
    assert.ok(
      plan.launches.every((l) => (l.clusterBlocks ?? 1) > 1 && fusedSplitPushes(l)),
      'clusters of C > 1',
    )
  }
  // not at batch 2, 8 or 16, hidden 4096, 2 ranks, or 16 ranks (not measured)
  for (const [nranks, rows, hidden] of [
    [8, 2, 8192],
    [8, 16, 8192],
    [8, 8, 8192],
    [8, 4, 4096],
    [2, 8, 8192],
    [16, 4, 8192],
  ])
    assert.equal(fusedSplitTwoshotFirst(nranks, rows, hidden), false, `${nranks}r ${hidden} b${rows}`)
  // the 1 MiB buffer's two-shot lanes hold its parts too (4 rows a cluster of 2)
  assert.equal(auto(8, 6, 8192, MIB).algorithm, 'split-twoshot')
  // without the split kernels (before sm_90): never
  assert.equal(planFusedNorm('auto', 8, 4, 8192, 'bf16').algorithm, 'oneshot')
})

test('planFusedSplit takes a row per cluster of 2 at 8-15 ranks and 4-7 rows (one H100, 8 ranks, bf16, 2026-12-07)', () => {
  // bench/results/cuda-h100-split-cluster-size-ab-2026-12-07.txt: at 4 rows four clusters of 4 were the
  // slowest shape (split 5.90 us at hidden 4096, split-twoshot 7.49 at 8192); four clusters of 2 ran 5.75 / 7.30.
  for (const algorithm of ['split', 'split-twoshot'] as const)
    for (const [rows, hidden] of [
      [4, 4096],
      [4, 8192],
      [7, 8192],
    ] as const) {
      assert.equal(fusedSplitPairsFirst(8, rows), true)
      const plan = planFusedSplit(algorithm, 8, rows, hidden, 'bf16')
      assert.deepEqual(
        plan.launches.map((l) => [l.rows, l.blocksPerRank, l.clusterBlocks]),
        [[rows, 2 * rows, 2]],
        `${algorithm} 8r ${hidden} b${rows}`,
      )
    }
  // not at 1-3 or 8+ rows, below 8 or from 16 ranks: the byte target's choice (4096 x 2: two rows in a cluster of 4)
  for (const [nranks, rows] of [
    [8, 3],
    [8, 8],
    [2, 4],
    [16, 4],
  ])
    assert.equal(fusedSplitPairsFirst(nranks, rows), false, `${nranks}r b${rows}`)
  assert.deepEqual(
    planFusedSplit('split', 8, 2, 4096, 'bf16').launches.map((l) => [l.rows, l.blocksPerRank, l.clusterBlocks]),
    [[2, 8, 4]],
  )
})

test('planFusedNorm split / split-ll / split-twoshot: clusters within one rank, the rows of every cluster within its lanes and units, rows covered once, the cluster limit kept', () => {
  const dtypes: Dtype[] = ['f32', 'f16', 'bf16']
  const limits = [() => Number.POSITIVE_INFINITY, (c: number) => Math.floor(64 / c)]
  for (const nranks of [2, 3, 8, 16])
    for (const dtype of dtypes)
      for (const hidden of [8, 1000, 4096, 8192])
        for (const rows of [1, 2, 7, 16, 17, 64, 300])
          for (const alg of ['split', 'split-ll', 'split-twoshot'] as const)
            for (const limit of limits) {
              if ((hidden * (dtype === 'f32' ? 4 : 2)) % 16 !== 0) continue
              const fitsSomewhere = FUSED_CLUSTER_SIZES.some(
                (c) => fusedSplitRowsPerCluster(alg, nranks, hidden, dtype, c) > 0 && (c === 1 || limit(c) >= nranks),
              )
              if (!fitsSomewhere) {
                assert.throws(
                  () => planFusedNorm(alg, nranks, rows, hidden, dtype, undefined, nranks, limit),
                  /does not fit/,
                )
                continue
              }
              const plan = planFusedNorm(alg, nranks, rows, hidden, dtype, undefined, nranks, limit)
              assert.equal(plan.algorithm, alg)
              let next = 0
              for (const l of plan.launches) {
                const c = l.clusterBlocks ?? 1
                assert.equal(l.firstRow, next)
                assert.ok(FUSED_CLUSTER_SIZES.includes(c), `cluster size ${c}`)
                assert.equal(l.blocksPerRank % c, 0, 'a cluster never straddles two ranks')
                assert.ok(l.blocksPerRank >= 1 && l.blocksPerRank <= maxBlocksPerRank(nranks))
                const g = l.blocksPerRank / c
                const perCluster = Math.ceil(l.rows / g)
                assert.ok(
                  perCluster <= fusedSplitRowsPerCluster(alg, nranks, hidden, dtype, c),
                  'rows within the lanes',
                )
                assert.ok((perCluster * FUSED_SPLIT_VIRTUAL_THREADS) / c <= FUSED_SPLIT_MAX_UNITS, 'units')
                if (alg === 'split-twoshot')
                  assert.ok(c > 1 && fusedSplitPushes(l), 'a push launch (C > 1, its rows fit)')
                if (c > 1) assert.ok(nranks * g <= limit(c), 'co-resident clusters')
                next += l.rows
              }
              assert.equal(next, rows)
            }
  // A batch of one bf16 row of 4096 at 8 ranks: 8 KB on LL16 packets, one 1 KB block per 1 KB -> a cluster of 8.
  assert.deepEqual(
    planFusedNorm('split-ll', 8, 1, 4096, 'bf16').launches.map((l) => [l.blocksPerRank, l.clusterBlocks]),
    [[8, 8]],
  )
  // 8192 bf16 at 8 ranks, 1 MiB buffer: a 16 KB row does not fit one 8 KB sentinel lane, but half a row per block
  // does. The 4 MiB default's 32 KB lane holds two rows a block.
  assert.equal(fusedSplitRowsPerCluster('split', 8, 8192, 'bf16', 1, MIB), 0)
  assert.equal(fusedSplitRowsPerCluster('split', 8, 8192, 'bf16', 2, MIB), 1)
  assert.equal(fusedSplitRowsPerCluster('split', 8, 8192, 'bf16', 1), 2)
})

test('planAllReduceMany: pieces cover every buffer once, at most 8 per launch, within the lanes', () => {
  for (const nranks of [2, 8])
    for (const dtype of ['f32', 'bf16'] as Dtype[])
      for (const counts of [
        [1],
        [4096, 8192, 3, 0, 100],
        Array.from({ length: 19 }, (_, i) => 64 * i + 1),
        [3_000_000, 17],
      ]) {
        const plans = planAllReduceMany(counts, dtype, nranks)
        const eb = dtype === 'f32' ? 4 : 2
        const lane = Math.floor(Math.floor(deviceBufferLayout(nranks).sentinel.channelHalfBytes / nranks) / 16)
        const covered = counts.map(() => 0)
        for (const p of plans) {
          assert.ok(p.pieces.length >= 1 && p.pieces.length <= LLCOMM_MANY_MAX_BUFFERS)
          const slots = p.pieces.reduce((a, x) => a + Math.ceil((x.count * eb) / 16), 0)
          assert.ok(Math.ceil(slots / p.blocksPerRank) <= lane, 'channel slots within a lane')
          assert.ok(p.blocksPerRank <= maxBlocksPerRank(nranks))
          for (const x of p.pieces) {
            assert.equal(x.offset, covered[x.buffer], 'pieces in order, no gap')
            assert.equal((x.offset * eb) % 16, 0, 'pieces start on 16-byte boundaries')
            covered[x.buffer] += x.count
          }
        }
        assert.deepEqual(covered, counts)
        if (counts.length <= 8 && counts.every((c) => c < 10_000)) assert.equal(plans.length, 1, 'one launch')
      }
})
