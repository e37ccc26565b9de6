/**
 * Runs the fused kernels' device code on host threads (test/kernels/emulator/fused_emulator.cpp, emu.h) with launch
 * shapes from fused-launcher.ts and buffer layouts from kernel-table.ts:
 *  - fused AllReduce + residual add + RMSNorm, one-shot and two-shot, every dtype, residual in the dtype or f32, with
 *    and without a residual input, output in the dtype or FP8 e4m3: the residual exact against float64, the output within the dtype's rounding of
 *    the float64 RMSNorm, every rank bitwise equal, and bitwise equal to the unfused composition (the AllReduce sum,
 *    then the reference llcomm_rmsnorm_* kernel), over a sequence of calls on the same buffers (sentinel slots
 *    re-armed, channel epochs counted, no write past a buffer);
 *  - allReduceMany against one oneshot-sentinel call per buffer (bitwise) and the exact sum;
 *  - a rank that never arrives ends the fused launch with a TIMEOUT naming rank, peer and epoch.
 * It tests the logic, not the GPU memory model and not the speed.
 */

import assert from 'node:assert/strict'
import { execFile, execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, type TestContext, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import type { Dtype, ErrorWordFields, FusedNormLaunchPlan } from 'llcomm/internal'
import {
  allReduceManyLaunches,
  DTYPE_BYTES,
  decodeSignature,
  describeSignature,
  deviceBufferLayout,
  encodeFusedSignature,
  encodeManySignature,
  encodeRefusedSignature,
  encodeSignature,
  type FusedNormAlgorithm,
  f32Bits,
  fusedSplitPushes,
  fusedSplitRowsPerCluster,
  fusedSplitSpreadApplies,
  kernelsDirectory,
  LLCOMM_ERR_MISMATCH,
  LLCOMM_FUSED_NO_RESIDUAL_IN,
  LLCOMM_FUSED_OUT_E4M3,
  LLCOMM_FUSED_RESIDUAL_F32,
  mismatchFromWord,
  planFusedNorm,
} from 'llcomm/internal'
import { findHostCxx, SKIP_NVCC } from './toolchain.js'

const THREADS_PER_BLOCK = 32 // the kernels stride by blockDim; one warp keeps the emulated grid small
const WAIT_TIMEOUT_MS = 60_000
const CONCURRENCY = 2

let work = ''
let exe = ''
/** The per-process build (-DLLCOMM_FUSED_SIG_CLUSTER: the signature cluster), compiled by its first test. */
let perProcessExe = ''
let hostCxx = ''
const emulatorDir = fileURLToPath(new URL('../../test/kernels/emulator/', import.meta.url))
const emulatorBuildArgs = (out: string, defines: string[]) => [
  '-std=c++20',
  '-O1',
  '-pthread',
  ...defines,
  '-I',
  kernelsDirectory(),
  '-I',
  emulatorDir,
  join(emulatorDir, 'fused_emulator.cpp'),
  '-o',
  out,
]
function perProcessEmulator(): string {
  if (!perProcessExe) {
    const out = join(work, 'fused_emulator_per_process')
    execFileSync(hostCxx, emulatorBuildArgs(out, ['-DLLCOMM_FUSED_SIG_CLUSTER=1']), { stdio: 'pipe' })
    perProcessExe = out
  }
  return perProcessExe
}

before(() => {
  const cxx = findHostCxx()
  if (!cxx || cxx.endsWith('nvcc')) {
    if (SKIP_NVCC) return
    throw new Error('the fused kernel emulation test needs a C++20 host compiler (g++ >= 12 or clang++ with _Float16)')
  }
  work = mkdtempSync(join(tmpdir(), 'llcomm-fused-emu-'))
  hostCxx = cxx
  exe = join(work, 'fused_emulator')
  execFileSync(cxx, emulatorBuildArgs(exe, []), { stdio: 'pipe' })
})
after(() => {
  if (work) rmSync(work, { recursive: true, force: true })
})

/** The dtypes and flag sets the norm tests cycle through (the last: an FP8 e4m3 output with a per-tensor scale, the
 * emulator's 4, and an f32 residual). */
const dtypes: Dtype[] = ['bf16', 'f16', 'f32']
const flagSets = [
  0,
  LLCOMM_FUSED_RESIDUAL_F32,
  LLCOMM_FUSED_NO_RESIDUAL_IN,
  LLCOMM_FUSED_OUT_E4M3 | LLCOMM_FUSED_RESIDUAL_F32,
]

/** The error word as the harness prints it (the device struct's fields, abi.ts). */
type ErrorWord = ErrorWordFields
interface NormResult {
  ok: boolean
  residualMismatches: number
  outOutOfTolerance: number
  worstRelError: number
  crossRankDiffs: number
  diffsVsUnfused: number
  sentinelBytesNotArmed: number
  guardsBroken: number
  badEpochs: number
  /** Residual elements (all ranks) whose reference is NaN or +-Inf (LLCOMM_EMU_ADVERSARIAL runs). */
  nonFinite: number
  first: string
  error: ErrorWord
  /** Per process: residual and output bytes that differ from the in-process call's on the same inputs. */
  diffsVsInProcess: number
  /** Per process: every rank's own error word. */
  rankErrors: (ErrorWord & { reserved: number })[]
  /** Every rank's signature epoch word (one step per per-process launch). */
  sigEpochs: number[]
}
interface ManyResult {
  ok: boolean
  mismatches: number
  diffsVsPerBuffer: number
  crossRankDiffs: number
  nanChecked: number
  sentinelBytesNotArmed: number
  guardsBroken: number
  first: string
  error: ErrorWord
  /** Per process: output bytes that differ from the in-process call's. */
  diffsVsInProcess: number
  rankErrors: (ErrorWord & { reserved: number })[]
  sigEpochs: number[]
}

interface NormCase {
  kind: 'norm'
  algorithm: FusedNormAlgorithm
  dtype: Dtype
  nranks: number
  rows: number
  hidden: number
  flags: number
  calls: number
  bufferBytes?: number
  absentRank?: number
  timeoutMs?: number
  /** The split kernels: blocks per rank and cluster size instead of the planner's (shapes the planner's 512-thread
   * rules never give the emulator's 32-thread blocks). */
  shape?: { blocksPerRank: number; clusterBlocks: number }
  /** split-ll only: run a candidate kernel of the emulator ('split-ll-<candidate>') on the split-ll plan. */
  candidate?: 'late' | 'spread' | 'late-spread'
  /** The split kernels: run the push kernel ('<algorithm>-push', fused_split.cuh kPush) on the same launch. */
  push?: boolean
  /** Threads a block (default THREADS_PER_BLOCK): a power of two; the reference RMSNorm runs with as many. */
  threads?: number
  /** The kernel must refuse the launch (LLCOMM_EMU_EXPECT_NOOP: nothing written, no epoch step, no wait timing out). */
  expectNoop?: boolean
  /** Row 0 of x holds NaN, +-Inf, -0, subnormals, the largest finite value and the sentinel's bits
   * (LLCOMM_EMU_ADVERSARIAL: fused_emulator.cpp says which, and what is compared). */
  adversarial?: boolean
  /**
   * One launch per rank, at once, each with its own error word and the signature cluster (LLCOMM_EMU_PER_PROCESS, the
   * per-process build), then the same call in process; `odd`: that rank's launch has other rows or eps (one call).
   */
  perProcess?: { odd?: { rank: number; rows?: number; eps?: number } }
}
interface ManyCase {
  kind: 'many'
  dtype: Dtype
  nranks: number
  counts: number[]
  calls: number
  /**
   * One launch per rank, at once, each with its own error word and the signature block (LLCOMM_EMU_PER_PROCESS, the
   * per-process build), then the same call in process; `odd`: that rank's launch has another count for one buffer.
   */
  /**
   * `refused`: the odd rank's words are a refused call's (encodeRefusedSignature; give it count 0 on its only
   * buffer: the signature block alone, as process-communicator.ts refuseOnDevice launches); `allReduce`: the odd
   * rank makes a oneshot-sentinel AllReduce of buffer 0 instead.
   */
  perProcess?: { odd?: { rank: number; buffer: number; count: number; refused?: boolean; allReduce?: boolean } }
}
type Case = NormCase | ManyCase

function argsOf(c: Case): string[] {
  const L = deviceBufferLayout(c.nranks, c.kind === 'norm' ? c.bufferBytes : undefined)
  const common = [
    String(c.nranks),
    String(c.kind === 'norm' ? (c.threads ?? THREADS_PER_BLOCK) : THREADS_PER_BLOCK),
    String(c.kind === 'norm' ? (c.timeoutMs ?? WAIT_TIMEOUT_MS) : WAIT_TIMEOUT_MS),
    String(L.recvBufBytes),
    String(L.sentinel.offset),
    String(L.sentinel.channelHalfBytes),
  ]
  if (c.kind === 'many') {
    const plans = allReduceManyLaunches(c.counts, c.dtype, c.nranks, c.perProcess !== undefined)
    assert.equal(plans.length, 1, 'a case is one launch')
    return ['many', c.dtype, ...common, String(plans[0].blocksPerRank), String(c.calls), ...c.counts.map(String)]
  }
  const planned = planFusedNorm(c.algorithm, c.nranks, c.rows, c.hidden, c.dtype, c.bufferBytes)
  assert.equal(planned.launches.length, 1, 'a case is one launch')
  const plan = c.shape ? { launches: [{ ...planned.launches[0], ...c.shape }] } : planned
  // The split kernels: the LL region and the launch's cluster size (blocks per cluster).
  const split =
    c.algorithm === 'split' || c.algorithm === 'split-ll' || c.algorithm === 'split-twoshot'
      ? [String(L.ll.offset), String(L.ll.channelHalfBytes), String(plan.launches[0].clusterBlocks ?? 1)]
      : []
  return [
    'norm',
    c.candidate ? `split-ll-${c.candidate}` : c.push ? `${c.algorithm}-push` : c.algorithm,
    c.dtype,
    ...common,
    String(c.rows),
    String(c.hidden),
    String(plan.launches[0].blocksPerRank),
    String(c.flags),
    String(epsOf(c)),
    String(c.calls),
    ...split,
    ...(c.absentRank !== undefined ? [String(c.absentRank)] : []),
  ]
}

const epsOf = (c: NormCase) => (c.dtype === 'f16' ? 1e-3 : 1e-5)
/** fused_emulator.cpp's outScale of an e4m3 output. */
const EMU_OUT_SCALE = 4

/** Rank `rank`'s signature words in a per-process case (its own rows and eps where it is the odd rank). */
function rankSignature(c: NormCase, rank: number): [number, number] {
  const odd = c.perProcess?.odd?.rank === rank ? c.perProcess.odd : undefined
  const rows = odd?.rows ?? c.rows
  const l = caseLaunch({ ...c, rows })
  return encodeFusedSignature({
    launchRows: rows,
    callRows: rows,
    hidden: c.hidden,
    dtype: c.dtype,
    algorithm: c.algorithm,
    epsBits: f32Bits(odd?.eps ?? epsOf(c)),
    flags: c.flags,
    outScaleBits: f32Bits(EMU_OUT_SCALE),
    launchIndex: 0,
    launchCount: 1,
    blocksPerRank: l.blocksPerRank,
    clusterBlocks: l.clusterBlocks ?? 1,
  })
}

function perProcessEnv(c: NormCase): Record<string, string> {
  const odd = c.perProcess?.odd
  return {
    LLCOMM_EMU_PER_PROCESS: '1',
    LLCOMM_EMU_SIGNATURES: Array.from({ length: c.nranks }, (_, r) => rankSignature(c, r).join(',')).join(';'),
    ...(odd ? { LLCOMM_EMU_ODD_RANK: String(odd.rank) } : {}),
    ...(odd?.rows !== undefined ? { LLCOMM_EMU_ODD_ROWS: String(odd.rows) } : {}),
    ...(odd?.eps !== undefined ? { LLCOMM_EMU_ODD_EPS: String(odd.eps) } : {}),
  }
}

/** Rank `rank`'s signature words in a per-process many case (its own count for one buffer where it is the odd rank). */
function manyRankSignature(c: ManyCase, rank: number): [number, number] {
  const odd = c.perProcess?.odd?.rank === rank ? c.perProcess.odd : undefined
  if (odd?.refused) return encodeRefusedSignature()
  if (odd?.allReduce)
    return encodeSignature({
      count: c.counts[0],
      algorithm: 'oneshot-sentinel',
      dtype: c.dtype,
      op: 'sum',
      protocol: 'none',
      chunkIndex: 0,
      chunkCount: 1,
    })
  const counts = c.counts.map((n, b) => (odd && b === odd.buffer ? odd.count : n))
  const plans = allReduceManyLaunches(counts, c.dtype, c.nranks, true)
  assert.equal(plans.length, 1, 'a case is one launch')
  return encodeManySignature({
    dtype: c.dtype,
    pieces: plans[0].pieces,
    launchIndex: 0,
    launchCount: 1,
    blocksPerRank: plans[0].blocksPerRank,
  })
}

function manyPerProcessEnv(c: ManyCase): Record<string, string> {
  const odd = c.perProcess?.odd
  return {
    LLCOMM_EMU_PER_PROCESS: '1',
    LLCOMM_EMU_SIGNATURES: Array.from({ length: c.nranks }, (_, r) => manyRankSignature(c, r).join(',')).join(';'),
    ...(odd
      ? {
          LLCOMM_EMU_ODD_RANK: String(odd.rank),
          LLCOMM_EMU_ODD_BUFFER: String(odd.buffer),
          LLCOMM_EMU_ODD_COUNT: String(odd.count),
          ...(odd.allReduce ? { LLCOMM_EMU_ODD_ALLREDUCE: '1' } : {}),
        }
      : {}),
  }
}

function runCase<R>(c: Case): Promise<R> {
  return new Promise((resolve, reject) => {
    const env = {
      ...process.env,
      ...(c.kind === 'norm' && c.expectNoop ? { LLCOMM_EMU_EXPECT_NOOP: '1' } : {}),
      ...(c.kind === 'norm' && c.adversarial ? { LLCOMM_EMU_ADVERSARIAL: '1' } : {}),
      ...(c.kind === 'norm' && c.perProcess ? perProcessEnv(c) : {}),
      ...(c.kind === 'many' && c.perProcess ? manyPerProcessEnv(c) : {}),
    }
    const program = c.perProcess ? perProcessEmulator() : exe
    execFile(program, argsOf(c), { timeout: 300_000, maxBuffer: 1 << 20, env }, (err, stdout, stderr) => {
      if (err) return reject(new Error(`${program} ${argsOf(c).join(' ')} failed: ${err.message}\n${stderr}`))
      resolve(JSON.parse(stdout) as R)
    })
  })
}
async function runAll<R>(cases: Case[]): Promise<{ c: Case; r: R }[]> {
  const out: { c: Case; r: R }[] = []
  let next = 0
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < cases.length) {
        const c = cases[next++]
        out.push({ c, r: await runCase<R>(c) })
      }
    }),
  )
  return out
}
const label = (c: Case) => JSON.stringify(c)

/** The launch a norm case runs (the planner's, or its `shape`). */
function caseLaunch(c: NormCase): FusedNormLaunchPlan {
  const planned = planFusedNorm(c.algorithm, c.nranks, c.rows, c.hidden, c.dtype, c.bufferBytes).launches[0]
  return c.shape ? { ...planned, ...c.shape } : planned
}
/**
 * Each split case (no candidate) whose launch the product runs with the push kernel (fusedSplitPushes: clusters of
 * more than one block whose rows' q's fit) once more with that kernel: both kernels of a split algorithm on every
 * such shape (the barrier kernel still serves larger clusters' rows on the GPU, and every launch with
 * LLCOMM_FUSED_SPLIT_PUSH=0).
 */
function withPushCases(cases: NormCase[]): NormCase[] {
  const push = cases.filter(
    (c) =>
      (c.algorithm === 'split' || c.algorithm === 'split-ll') &&
      !c.candidate &&
      fusedSplitPushes(caseLaunch(c), c.threads ?? THREADS_PER_BLOCK),
  )
  return [...cases, ...push.map((c) => ({ ...c, push: true }))]
}

/**
 * Runs norm cases and checks each: no wait timed out, the residual exact, the RMSNorm output within rounding of the
 * float64 one, every rank bitwise equal and equal to AllReduce + llcomm_rmsnorm, sentinel slots re-armed, epochs
 * counting the calls, nothing written past a buffer.
 */
async function runNormCases(
  t: TestContext,
  what: string,
  cases: NormCase[],
): Promise<{ c: NormCase; r: NormResult }[]> {
  const started = Date.now()
  const results = (await runAll<NormResult>(cases)) as { c: NormCase; r: NormResult }[]
  t.diagnostic(`${cases.length} emulated ${what} runs in ${((Date.now() - started) / 1000).toFixed(1)} s`)
  for (const { c, r } of results) {
    assert.equal(r.error.code, 0, `${label(c)}: a wait timed out: ${JSON.stringify(r.error)}`)
    assert.equal(r.residualMismatches, 0, `${label(c)}: residual wrong, first: ${r.first}`)
    assert.equal(
      r.outOutOfTolerance,
      0,
      `${label(c)}: RMSNorm output off (worst ${r.worstRelError}), first: ${r.first}`,
    )
    assert.equal(r.crossRankDiffs, 0, `${label(c)}: ranks disagree bitwise`)
    assert.equal(r.diffsVsUnfused, 0, `${label(c)}: not bit-identical to AllReduce + llcomm_rmsnorm`)
    assert.equal(r.sentinelBytesNotArmed, 0, `${label(c)}: sentinel slots left unarmed`)
    assert.equal(r.badEpochs, 0, `${label(c)}: channel epochs do not count the calls`)
    assert.equal(r.guardsBroken, 0, `${label(c)}: a kernel wrote past a buffer`)
    assert.ok(r.ok, label(c))
  }
  return results
}

test('fused AllReduce + residual + RMSNorm: exact residual, RMSNorm within rounding, identical on all ranks and to the unfused composition', async (t) => {
  if (!exe) return t.skip('no host C++ compiler and LLCOMM_SKIP_NVCC=1')
  const cases: NormCase[] = []
  for (const algorithm of ['oneshot', 'twoshot'] as const)
    dtypes.forEach((dtype, i) => {
      for (const flags of flagSets)
        cases.push({ kind: 'norm', algorithm, dtype, nranks: 3, rows: 5, hidden: 264, flags, calls: 3 })
      // several rows per block (17 rows over 16 channels), an odd-looking hidden, 2 and 8 ranks
      cases.push({ kind: 'norm', algorithm, dtype, nranks: 2, rows: 17, hidden: 200, flags: flagSets[i], calls: 2 })
      cases.push({
        kind: 'norm',
        algorithm,
        dtype,
        nranks: 8,
        rows: 2,
        hidden: 1000,
        flags: flagSets[(i + 1) % 4],
        calls: 2,
      })
    })
  // A model-sized row: bf16 4096 at 4 ranks, one row (one block per rank, many slots per thread).
  for (const algorithm of ['oneshot', 'twoshot'] as const)
    cases.push({
      kind: 'norm',
      algorithm,
      dtype: 'bf16',
      nranks: 4,
      rows: 1,
      hidden: 4096,
      flags: LLCOMM_FUSED_RESIDUAL_F32,
      calls: 2,
    })
  // f32 8192 at 8 ranks: a row (32 KB) fills the two-shot's 8 parts of 4 KB exactly (no one-shot lane holds it).
  cases.push({ kind: 'norm', algorithm: 'twoshot', dtype: 'f32', nranks: 8, rows: 3, hidden: 8192, flags: 0, calls: 2 })
  // The two-shot's spread path (fused_rmsnorm_twoshot.cu, twoshot_sentinel.cu's rule: 8 ranks or more, 4 threads a
  // slot of a part and at least 4 thread groups; with 32 threads a block, parts of at most 8 slots): 8 ranks bf16 256
  // (parts of 4 slots, 8 groups for 7 peers), 264 (5 slots: 6 groups, so a thread serves two owners; a short part and
  // an empty one), 16 ranks f16 256 (2 slots, 15 groups), f32 64 at 8 ranks with an f32 residual (2 slots a part).
  const spreadCases: NormCase[] = [
    { kind: 'norm', algorithm: 'twoshot', dtype: 'bf16', nranks: 8, rows: 3, hidden: 256, flags: 0, calls: 3 },
    {
      kind: 'norm',
      algorithm: 'twoshot',
      dtype: 'bf16',
      nranks: 8,
      rows: 2,
      hidden: 264,
      flags: LLCOMM_FUSED_NO_RESIDUAL_IN,
      calls: 3,
    },
    { kind: 'norm', algorithm: 'twoshot', dtype: 'f16', nranks: 16, rows: 2, hidden: 256, flags: 0, calls: 2 },
    {
      kind: 'norm',
      algorithm: 'twoshot',
      dtype: 'f32',
      nranks: 8,
      rows: 4,
      hidden: 64,
      flags: LLCOMM_FUSED_RESIDUAL_F32,
      calls: 3,
    },
  ]
  for (const c of spreadCases) {
    // the kernel's rule on the block's message (one row a block here), so that these cases keep taking the path
    const eb = DTYPE_BYTES[c.dtype]
    const elems = c.hidden
    const partSlots = Math.ceil((Math.ceil(Math.ceil(elems / c.nranks) / (16 / eb)) * (16 / eb) * eb) / 16)
    const groups = Math.min(Math.floor(THREADS_PER_BLOCK / partSlots), c.nranks)
    assert.ok(c.nranks >= 8 && 4 * partSlots <= THREADS_PER_BLOCK && groups >= 4, `${label(c)} takes the spread path`)
    assert.equal(
      planFusedNorm(c.algorithm, c.nranks, c.rows, c.hidden, c.dtype).launches[0].blocksPerRank,
      c.rows,
      `${label(c)}: one row a block`,
    )
    cases.push(c)
  }
  await runNormCases(t, 'fused', cases)
})

test('split fused kernels (a row over the blocks of a cluster; sentinel and LL16): exact residual, RMSNorm within rounding, identical on all ranks and to the unfused composition', async (t) => {
  if (!exe) return t.skip('no host C++ compiler and LLCOMM_SKIP_NVCC=1')
  // The emulated blocks have 32 threads, so a row has 32 virtual threads split over the cluster (V = 32 / C) and a
  // slot index k up to ceil(slots / 32): the same code paths as 512 on the GPU (several slots per unit on several
  // lanes, holes past the row, clusters of 1 to 8), with the planner's launch shapes.
  const cases: NormCase[] = []
  for (const algorithm of ['split', 'split-ll'] as const)
    dtypes.forEach((dtype, i) => {
      for (const flags of flagSets)
        cases.push({ kind: 'norm', algorithm, dtype, nranks: 3, rows: 5, hidden: 264, flags, calls: 2 })
      // one model-sized row: clusters of 4 or 8 blocks (8 KB in bf16)
      cases.push({ kind: 'norm', algorithm, dtype, nranks: 2, rows: 1, hidden: 4096, flags: flagSets[i], calls: 2 })
      // 8 ranks, a row that leaves blocks of a cluster without slots
      cases.push({ kind: 'norm', algorithm, dtype, nranks: 8, rows: 2, hidden: 1000, flags: flagSets[i + 1], calls: 2 })
    })
  // A 3-rank split case of `hidden` 16-bit elements a row (half as many f32, the same row bytes), 2 calls.
  const splitCase = (
    algorithm: 'split' | 'split-ll',
    dtype: (typeof dtypes)[number],
    rows: number,
    hidden: number,
    flags: number,
    blocksPerRank: number,
    clusterBlocks: number,
    candidate?: 'late',
  ) =>
    cases.push({
      kind: 'norm',
      algorithm,
      ...(candidate ? { candidate } : {}),
      dtype,
      nranks: 3,
      rows,
      hidden: dtype === 'f32' ? hidden / 2 : hidden,
      flags,
      calls: 2,
      shape: { blocksPerRank, clusterBlocks },
    })
  // Every thread at most one slot (the LL16 kernel keeps the residual and weights in registers for the output; a
  // sentinel kernel that stages them early in shared memory, research/scripts/probe/fused-patches/split-early.patch,
  // takes its early path here): one slot per unit (64 bf16) and four slots of a unit on four lanes (1024 bf16),
  // clusters of 8; the sentinel kernel with every flag set.
  for (const [rows, hidden] of [
    [2, 64],
    [1, 1024],
  ])
    for (const dtype of dtypes) {
      splitCase('split-ll', dtype, rows, hidden, LLCOMM_FUSED_RESIDUAL_F32, 8, 8)
      for (const flags of flagSets) splitCase('split', dtype, rows, hidden, flags, 8, 8)
    }
  // Several clusters per rank on that path (4 of 4 blocks, a row each, one slot per unit with holes; 4 of 2 blocks,
  // two slots of a unit on two lanes): the split-late / split-push candidates (fused-patches/split-late.patch,
  // split-push.patch) keep the residual store and the q exchange per cluster there.
  for (const [rows, hidden, blocksPerRank, clusterBlocks] of [
    [4, 64, 16, 4],
    [4, 512, 8, 2],
  ])
    for (const dtype of dtypes)
      splitCase(
        'split',
        dtype,
        rows,
        hidden,
        dtype === 'f16' ? LLCOMM_FUSED_RESIDUAL_F32 : 0,
        blocksPerRank,
        clusterBlocks,
      )
  // The late-residual candidate (residual stored after the cluster barriers) on the same register-kept shapes,
  // with and without an f32 residual, and on a shape where it does not apply (several slots per thread).
  for (const [rows, hidden] of [
    [2, 64],
    [1, 1024],
  ])
    for (const dtype of dtypes)
      for (const flags of [0, LLCOMM_FUSED_RESIDUAL_F32])
        splitCase('split-ll', dtype, rows, hidden, flags, 8, 8, 'late')
  cases.push({
    kind: 'norm',
    algorithm: 'split-ll',
    candidate: 'late',
    dtype: 'bf16',
    nranks: 3,
    rows: 5,
    hidden: 264,
    flags: 0,
    calls: 2,
  })
  // The SPREAD candidates (peer-parallel exchange) on the shapes they take: 8 ranks, a row of exactly one slot per
  // virtual thread, clusters of 8 with one row each (4 units, 8 packets per block: 4 thread groups), every flag set;
  // the launcher's applicability rule must accept exactly these shapes.
  for (const candidate of ['spread', 'late-spread'] as const)
    for (const dtype of dtypes)
      for (const [flags, rows, blocksPerRank] of [
        [0, 1, 8],
        [LLCOMM_FUSED_RESIDUAL_F32, 2, 16],
        [LLCOMM_FUSED_NO_RESIDUAL_IN, 1, 8],
        [LLCOMM_FUSED_OUT_E4M3 | LLCOMM_FUSED_RESIDUAL_F32, 2, 16],
      ]) {
        const hidden = (THREADS_PER_BLOCK * 16) / DTYPE_BYTES[dtype]
        const launch = { firstRow: 0, rows, blocksPerRank, clusterBlocks: 8 }
        assert.ok(
          fusedSplitSpreadApplies(8, hidden, dtype, launch, THREADS_PER_BLOCK),
          `spread applies to ${JSON.stringify(launch)}`,
        )
        cases.push({
          kind: 'norm',
          algorithm: 'split-ll',
          candidate,
          dtype,
          nranks: 8,
          rows,
          hidden,
          flags,
          calls: 2,
          shape: { blocksPerRank, clusterBlocks: 8 },
        })
      }
  // bf16 8192 at 8 ranks: a 16 KB row over a cluster (no whole-row one-shot lane holds it), 2 rows
  for (const algorithm of ['split', 'split-ll'] as const)
    cases.push({ kind: 'norm', algorithm, dtype: 'bf16', nranks: 8, rows: 2, hidden: 8192, flags: 0, calls: 2 })
  const clusters = new Set(
    cases.map((c) => planFusedNorm(c.algorithm, c.nranks, c.rows, c.hidden, c.dtype).launches[0].clusterBlocks),
  )
  assert.deepEqual([...clusters].sort(), [1, 2, 4, 8], 'the cases cover every cluster size')
  const all = withPushCases(cases)
  const pushClusters = new Set(all.filter((c) => c.push).map((c) => caseLaunch(c).clusterBlocks))
  assert.deepEqual([...pushClusters].sort(), [2, 4, 8], 'the push kernels run every cluster size above one')
  await runNormCases(t, 'split', all)
})

test('blocks of several warps: the level-1 sums of the norm (q_l + q_{l+32} + ...) in the reference order, fused, split and unfused alike', async (t) => {
  if (!exe) return t.skip('no host C++ compiler and LLCOMM_SKIP_NVCC=1')
  // With one warp a block, every level-1 sum has a single term, so the level-1 sums are never exercised: a split
  // gather that dropped a warp's q passed the one-warp test above (planted in session 13), and fails here. Here 4
  // warps (128 threads; 2 for the model-sized row): each level-1 sum adds 4 partials, which the split kernels gather
  // from the q's of the cluster's blocks (fused_split.cuh) and the other kernels read in llcNormInverse, as the
  // reference does. What this cannot see: an order change of those adds. The emulator's data are multiples of 1/8,
  // so the sums are exact in any order; on the GPU, random data make a split kernel whose order disagrees with
  // llcNormInverse's differ from the unfused composition bitwise (the GPU test's check).
  const cases: NormCase[] = []
  for (const dtype of ['bf16', 'f32'] as const) {
    const flags = dtype === 'bf16' ? LLCOMM_FUSED_RESIDUAL_F32 : 0
    for (const algorithm of ['oneshot', 'twoshot'] as const)
      cases.push({ kind: 'norm', algorithm, dtype, nranks: 3, rows: 3, hidden: 1064, flags, calls: 2, threads: 128 })
    // 128 virtual threads a row over clusters of 2 and 4 (V = 64, 32): several slots a unit, holes past the row
    for (const algorithm of ['split', 'split-ll'] as const)
      for (const [blocksPerRank, clusterBlocks] of [
        [2, 2],
        [4, 4],
      ])
        cases.push({
          kind: 'norm',
          algorithm,
          dtype,
          nranks: 3,
          rows: 1,
          hidden: dtype === 'f32' ? 532 : 1064,
          flags,
          calls: 2,
          threads: 128,
          shape: { blocksPerRank, clusterBlocks },
        })
  }
  cases.push({
    kind: 'norm',
    algorithm: 'oneshot',
    dtype: 'bf16',
    nranks: 2,
    rows: 1,
    hidden: 4096,
    flags: 0,
    calls: 2,
    threads: 64,
  })
  await runNormCases(t, 'multi-warp', withPushCases(cases))
})

/**
 * A split-twoshot case of `hidden` 16-bit elements a row (half as many f32: the same row bytes) on the given launch
 * shape, whose rows the host would plan (fusedSplitRowsPerCluster with the emulator's block).
 */
function splitTwoshotCase(
  dtype: Dtype,
  nranks: number,
  rows: number,
  hidden: number,
  flags: number,
  blocksPerRank: number,
  clusterBlocks: number,
  threads = THREADS_PER_BLOCK,
  calls = 3,
): NormCase {
  const h = dtype === 'f32' ? hidden / 2 : hidden
  const perCluster = Math.ceil(rows / (blocksPerRank / clusterBlocks))
  assert.ok(
    perCluster <= fusedSplitRowsPerCluster('split-twoshot', nranks, h, dtype, clusterBlocks, undefined, threads),
    `split-twoshot ${nranks} ranks ${rows} x ${h} ${dtype}: a cluster's rows fit its parts`,
  )
  return {
    kind: 'norm',
    algorithm: 'split-twoshot',
    dtype,
    nranks,
    rows,
    hidden: h,
    flags,
    calls,
    shape: { blocksPerRank, clusterBlocks },
    ...(threads !== THREADS_PER_BLOCK ? { threads } : {}),
  }
}

test("the split two-shot (a row over a cluster, each block's slots exchanged two-shot): exact residual, RMSNorm within rounding, identical on all ranks and to the unfused composition", async (t) => {
  if (!exe) return t.skip('no host C++ compiler and LLCOMM_SKIP_NVCC=1')
  // fused_split.cuh kTwo. With 32 threads a block (32 virtual threads a row, V = 32 / C) the shapes below reach: a
  // unit's slots on several lanes (K = 2, 4, 16, 32) and walked in turn (K = 3), holes past the row, parts of more
  // slots than threads (P = 64 > 32: a thread reduces several), a last part shorter than the others and parts past
  // the message (M = 4 slots at 8 ranks: owners 4-7 reduce nothing), blocks whose slots are all holes, several rows
  // and clusters a rank, 2 to 16 ranks, every cluster size above one, every flag set, several warps a block, and
  // three calls (both epoch halves and the re-armed slots of the first).
  const cases: NormCase[] = []
  const add = (...args: Parameters<typeof splitTwoshotCase>) => cases.push(splitTwoshotCase(...args))
  dtypes.forEach((dtype, i) => {
    for (const flags of flagSets) add(dtype, 3, 5, 264, flags, 4, 2) // K = 2, a hole-ridden second slot
    add(dtype, 8, 2, 1000, flagSets[(i + 1) % 4], 8, 4) // K = 4, one row a cluster
    add(dtype, 2, 1, 4096, flagSets[i], 8, 8) // K = 16 on 16 lanes, V = 4
    add(dtype, 5, 3, 768, flagSets[(i + 2) % 4], 2, 2) // K = 3 walked in turn, P = 29, a short last part
    add(dtype, 8, 1, 64, flagSets[(i + 3) % 4], 8, 8) // M = 4 at 8 ranks: empty parts, blocks of holes only
  })
  add('bf16', 8, 2, 8192, 0, 4, 4) // K = 32 (a warp a unit), P = 64 > 32 threads
  add('bf16', 16, 2, 256, LLCOMM_FUSED_RESIDUAL_F32, 4, 2) // 16 ranks
  add('f16', 4, 8, 512, 0, 8, 2) // 8 rows a cluster (the push kernels' most at 512 threads)
  add('bf16', 3, 3, 1064, 0, 4, 4, 128) // 4 warps a block: the level-1 sums over the cluster
  add('f32', 3, 3, 1064, LLCOMM_FUSED_RESIDUAL_F32, 8, 8, 128)
  // The owner's spread reduce (8 ranks or more, parts without holes, at least 4 thread groups a part's slot): parts
  // of 4 slots (K = 1, 8 groups: one peer a poller), of 2 slots (K = 2 on two lanes, two clusters a rank), of 1 slot
  // at 16 ranks (16 groups), every dtype and flag set.
  dtypes.forEach((dtype, i) => {
    add(dtype, 8, 2, 256, flagSets[i], 2, 2)
    add(dtype, 8, 2, 512, flagSets[(i + 1) % 4], 8, 4)
  })
  add('bf16', 16, 1, 1024, LLCOMM_FUSED_OUT_E4M3 | LLCOMM_FUSED_RESIDUAL_F32, 8, 8)
  add('f16', 8, 2, 256, LLCOMM_FUSED_NO_RESIDUAL_IN, 2, 2)
  const clusters = new Set(cases.map((c) => c.shape?.clusterBlocks))
  assert.deepEqual([...clusters].sort(), [2, 4, 8], 'every cluster size above one')
  // fused_split.cuh's rule for the owner's reduce: spread (LlBuffer::spreadGroups(P) > 1 on a part without holes),
  // else serial; both must run.
  const spreadOwner = (c: NormCase) => {
    const threads = c.threads ?? THREADS_PER_BLOCK
    const cb = c.shape?.clusterBlocks ?? 1
    const slots = (c.hidden * DTYPE_BYTES[c.dtype]) / 16
    const rowsPerCluster = Math.ceil(c.rows / ((c.shape?.blocksPerRank ?? 1) / cb))
    const m = rowsPerCluster * Math.ceil(slots / threads) * (threads / cb)
    const part = Math.ceil(m / c.nranks)
    const groups = Math.min(Math.floor(threads / part), c.nranks)
    return (
      c.nranks >= 8 && slots % threads === 0 && part * c.nranks === m && 4 * m <= 2048 && part < threads && groups >= 4
    )
  }
  assert.ok(cases.filter(spreadOwner).length >= 8 && cases.filter((c) => !spreadOwner(c)).length >= 8, 'both reduces')
  await runNormCases(t, 'split-twoshot', cases)
})

test("adversarial values (NaN, +-Inf, -0, subnormals, overflow, the sentinel's bits) through every fused kernel: bitwise equal on all ranks and to oneshot-sentinel + RMSNorm, non-finite values kept by class", async (t) => {
  if (!exe) return t.skip('no host C++ compiler and LLCOMM_SKIP_NVCC=1')
  // Every fused kernel receives, reduces and re-sends data: a user value equal to the sentinel's bits must be
  // canonicalized on every send (else the receiver waits for it forever), and the owner of a two-shot part must send
  // the bits it adds itself. Row 0 of x carries the special values (fused_emulator.cpp LLCOMM_EMU_ADVERSARIAL); the
  // unfused composition is the emulated oneshot-sentinel AllReduce into the reference RMSNorm.
  const cases: NormCase[] = []
  dtypes.forEach((dtype, i) => {
    const h = (hidden: number) => (dtype === 'f32' ? hidden / 2 : hidden)
    for (const algorithm of ['oneshot', 'twoshot', 'split', 'split-ll'] as const)
      cases.push({ kind: 'norm', algorithm, dtype, nranks: 3, rows: 5, hidden: h(264), flags: flagSets[i], calls: 2 })
    for (const algorithm of ['split', 'split-ll'] as const) // clusters of 2 (the push kernels too, below)
      cases.push({
        kind: 'norm',
        algorithm,
        dtype,
        nranks: 3,
        rows: 5,
        hidden: h(264),
        flags: flagSets[(i + 3) % 4],
        calls: 2,
        shape: { blocksPerRank: 4, clusterBlocks: 2 },
      })
    cases.push(splitTwoshotCase(dtype, 3, 5, 264, flagSets[(i + 1) % 4], 4, 2, THREADS_PER_BLOCK, 2)) // serial, holes
    cases.push(splitTwoshotCase(dtype, 8, 2, 256, flagSets[(i + 2) % 4], 2, 2, THREADS_PER_BLOCK, 2)) // spread reduce
  })
  // the push kernels on the launches that take them (split / split-ll with clusters of 2-8 blocks)
  const all = withPushCases(cases).map((c) => ({ ...c, adversarial: true }))
  assert.ok(
    all.some((c) => c.push),
    'the push kernels run too',
  )
  for (const { c, r } of await runNormCases(t, 'adversarial', all))
    assert.ok(r.nonFinite > 0, `${label(c)}: no non-finite value reached the check`)
})

test('the push kernels refuse a launch the host never sends (one block a cluster, or more rows a cluster than their q area holds): nothing written, no epoch step, no hang', async (t) => {
  if (!exe) return t.skip('no host C++ compiler and LLCOMM_SKIP_NVCC=1')
  // fused_split.cuh returns at once when C = 1 or R * kVirtual > LLCOMM_SPLIT_MAX_UNITS, uniformly over the cluster
  // and the ranks. Without that return a C = 1 launch runs through (its mbarrier expects no bytes) and writes the
  // outputs, and too many rows overrun the q area: either way this test sees bytes written.
  const cases: NormCase[] = []
  for (const algorithm of ['split', 'split-ll'] as const)
    for (const dtype of ['bf16', 'f32'] as const) {
      const base = {
        kind: 'norm',
        algorithm,
        dtype,
        nranks: 2,
        flags: 0,
        calls: 2,
        push: true,
        expectNoop: true,
      } as const
      cases.push({ ...base, rows: 1, hidden: 256, shape: { blocksPerRank: 2, clusterBlocks: 1 } })
      // 256 virtual threads a row: 17 rows in one cluster need 4,352 q's, the array holds 4,096
      cases.push({ ...base, rows: 17, hidden: 64, threads: 256, shape: { blocksPerRank: 2, clusterBlocks: 2 } })
    }
  for (const c of cases)
    assert.equal(fusedSplitPushes(caseLaunch(c), c.threads ?? THREADS_PER_BLOCK), false, `${label(c)}: the host pushes`)
  // The split two-shot (a push kernel only) refuses the same two, and a part larger than its owner's shared copy of
  // the sums (LLC_SPLIT_TWO_SUM_SLOTS = 512: 2 ranks, one 32768-wide bf16 row over a cluster of 2, 1,024-slot parts);
  // the host never plans any of them (fusedSplitRowsPerCluster).
  const two = { kind: 'norm', algorithm: 'split-twoshot', nranks: 2, flags: 0, calls: 2, expectNoop: true } as const
  const twoCases: NormCase[] = [
    { ...two, dtype: 'bf16', rows: 1, hidden: 256, shape: { blocksPerRank: 2, clusterBlocks: 1 } },
    { ...two, dtype: 'f32', rows: 17, hidden: 64, threads: 256, shape: { blocksPerRank: 2, clusterBlocks: 2 } },
    { ...two, dtype: 'bf16', rows: 1, hidden: 32768, shape: { blocksPerRank: 2, clusterBlocks: 2 } },
  ]
  for (const c of twoCases) {
    const l = caseLaunch(c)
    const threads = c.threads ?? THREADS_PER_BLOCK
    assert.ok(
      Math.ceil(l.rows / (l.blocksPerRank / (l.clusterBlocks ?? 1))) >
        fusedSplitRowsPerCluster(
          'split-twoshot',
          c.nranks,
          c.hidden,
          c.dtype,
          l.clusterBlocks ?? 1,
          undefined,
          threads,
        ),
      `${label(c)}: the host would plan it`,
    )
    cases.push(c)
  }
  const results = await runAll<NormResult & { written: number }>(cases)
  for (const { c, r } of results) {
    assert.equal(r.error.code, 0, `${label(c)}: a wait timed out: ${JSON.stringify(r.error)}`)
    assert.equal(r.written, 0, `${label(c)}: the refused launch wrote ${r.written} bytes`)
    assert.equal(r.badEpochs, 0, `${label(c)}: a channel epoch stepped`)
    assert.equal(r.sentinelBytesNotArmed, 0, `${label(c)}: sentinel slots touched`)
    assert.equal(r.guardsBroken, 0, `${label(c)}: a kernel wrote past a buffer`)
    assert.ok(r.ok, label(c))
  }
})

test('allReduceMany: bit-identical to one oneshot-sentinel call per buffer, exact, NaN in -> NaN out', async (t) => {
  if (!exe) return t.skip('no host C++ compiler and LLCOMM_SKIP_NVCC=1')
  const cases: ManyCase[] = [
    { kind: 'many', dtype: 'bf16', nranks: 3, counts: [1, 7, 100, 4096, 33], calls: 2 },
    { kind: 'many', dtype: 'f16', nranks: 2, counts: [3000, 5, 8, 9, 10, 11, 12, 13], calls: 2 },
    { kind: 'many', dtype: 'f32', nranks: 8, counts: [1000, 1, 255], calls: 2 },
  ]
  for (const { c, r } of await runAll<ManyResult>(cases)) {
    assert.equal(r.error.code, 0, `${label(c)}: a wait timed out: ${JSON.stringify(r.error)}`)
    assert.equal(r.mismatches, 0, `${label(c)}: wrong elements, first: ${r.first}`)
    assert.equal(r.diffsVsPerBuffer, 0, `${label(c)}: differs from one call per buffer`)
    assert.equal(r.crossRankDiffs, 0, `${label(c)}: ranks disagree bitwise`)
    assert.ok(r.nanChecked > 0, `${label(c)}: the sentinel-as-data probe did not run`)
    assert.equal(r.sentinelBytesNotArmed, 0, `${label(c)}: sentinel slots left unarmed`)
    assert.equal(r.guardsBroken, 0, `${label(c)}: a kernel wrote past a buffer`)
    assert.ok(r.ok, label(c))
  }
})

test('fused RMSNorm with a rank that never arrives: the launch ends with a TIMEOUT naming the waiter, peer and epoch', async (t) => {
  if (!exe) return t.skip('no host C++ compiler and LLCOMM_SKIP_NVCC=1')
  // The two-shot at hidden 384: 768 elements make three equal parts, so every thread's first wait is a reduce-scatter
  // wait for the absent rank. At 256 the last part is 2 slots short, and the owner's threads past its part go straight
  // to the all-gather, whose first wait is for owner 0 (itself stuck behind the absent rank), with a deadline as early
  // as the reduce-scatter's: under load that wait timed out first and named peer 0 in 2 of 48 runs of the fused
  // emulator (a fresh-clone CI run failed so), against 0 of 48 at 384.
  const cases: NormCase[] = (['oneshot', 'twoshot', 'split', 'split-ll', 'split-twoshot'] as const).map(
    (algorithm) => ({
      kind: 'norm',
      algorithm,
      dtype: 'bf16',
      nranks: 3,
      rows: 2,
      hidden: algorithm === 'twoshot' ? 384 : 256,
      flags: 0,
      calls: 1,
      absentRank: 1,
      timeoutMs: 300,
    }),
  )
  for (const { c, r } of await runAll<NormResult>(cases)) {
    assert.equal(r.error.code, 1, `${label(c)}: no TIMEOUT recorded`)
    assert.notEqual(r.error.rank, 1, `${label(c)}: the absent rank cannot be the waiter`)
    assert.equal(r.error.peer, 1, `${label(c)}: the peer waited for`)
    assert.equal(r.error.epoch, 1, `${label(c)}: epoch of the first call`)
    assert.equal(
      r.error.what,
      (c as NormCase).algorithm === 'split-ll' ? 1 : 2,
      `${label(c)}: waiting for a sentinel slot / LL packet`,
    )
  }
})

// ---- Per process (issue 21): one launch per rank with its own error word and the fused signature cluster
// (kernels/llcomm/fused_signature.cuh; the build with -DLLCOMM_FUSED_SIG_CLUSTER) ----

const errorWords = (w: ErrorWord & { reserved: number }) =>
  Uint32Array.from([w.code, w.rank, w.peer, w.epoch, w.what, w.slot, w.channel, w.reserved])

/** A mismatched per-process run: every rank's word is MISMATCH naming itself, the odd rank and both signatures. */
function assertMismatchOnEveryRank(
  c: Case,
  r: { rankErrors: (ErrorWord & { reserved: number })[] },
  odd: number,
  signatureOf: (rank: number) => [number, number],
): void {
  const oddSig = describeSignature(decodeSignature(...signatureOf(odd)))
  const evenSig = describeSignature(decodeSignature(...signatureOf(odd === 0 ? 1 : 0)))
  assert.notEqual(oddSig, evenSig)
  r.rankErrors.forEach((w, rank) => {
    assert.equal(w.code, LLCOMM_ERR_MISMATCH, `${label(c)}: rank ${rank}: ${JSON.stringify(w)}`)
    assert.equal(w.rank, rank, `${label(c)}: rank ${rank}'s word names itself`)
    if (rank !== odd) assert.equal(w.peer, odd, `${label(c)}: rank ${rank} names the odd rank`)
    const e = mismatchFromWord(errorWords(w))
    assert.equal(e.code, 'MISMATCH')
    assert.ok(e.message.includes(oddSig) && e.message.includes(evenSig), `${label(c)}: rank ${rank}: ${e.message}`)
  })
}

test('per process: every fused kernel, launched rank by rank with the signature cluster, is bitwise equal to the in-process call', async (t) => {
  if (!exe) return t.skip('no host C++ compiler and LLCOMM_SKIP_NVCC=1')
  const cases: NormCase[] = []
  dtypes.forEach((dtype, i) => {
    for (const nranks of [2, 4]) {
      const base = { kind: 'norm', dtype, nranks, flags: flagSets[(i + nranks) % 4], calls: 2, perProcess: {} } as const
      cases.push({ ...base, algorithm: 'oneshot', rows: 3, hidden: 264 })
      cases.push({ ...base, algorithm: 'twoshot', rows: 2, hidden: 384 })
      // the split kernels: clusters of 2 and 4 (the signature cluster is then 2 or 4 blocks, the grid B + C)
      cases.push({ ...base, algorithm: 'split', rows: 2, hidden: 264, shape: { blocksPerRank: 4, clusterBlocks: 2 } })
      cases.push({
        ...base,
        algorithm: 'split-ll',
        rows: 3,
        hidden: 256,
        shape: { blocksPerRank: 4, clusterBlocks: 4 },
      })
      cases.push({
        ...base,
        algorithm: 'split-twoshot',
        rows: 2,
        hidden: 264,
        shape: { blocksPerRank: 4, clusterBlocks: 2 },
      })
    }
  })
  // the push kernels (the same signature: push and barrier kernels are one algorithm)
  cases.push({
    kind: 'norm',
    algorithm: 'split',
    push: true,
    dtype: 'bf16',
    nranks: 4,
    rows: 2,
    hidden: 264,
    flags: 0,
    calls: 2,
    shape: { blocksPerRank: 4, clusterBlocks: 2 },
    perProcess: {},
  })
  const results = await runNormCases(t, 'per-process', cases)
  for (const { c, r } of results) {
    assert.equal(r.diffsVsInProcess, 0, `${label(c)}: per process not bitwise equal to the in-process call`)
    for (const [rank, w] of r.rankErrors.entries())
      assert.equal(w.code, 0, `${label(c)}: rank ${rank}: ${JSON.stringify(w)}`)
    assert.deepEqual(r.sigEpochs, Array(c.nranks).fill(c.calls), `${label(c)}: one signature epoch per launch`)
  }
})

test('per process: a rank whose fused call differs (rows or eps) ends the call with MISMATCH on every rank, naming both signatures', async (t) => {
  if (!exe) return t.skip('no host C++ compiler and LLCOMM_SKIP_NVCC=1')
  const one = { kind: 'norm', flags: 0, calls: 1, timeoutMs: 20_000 } as const
  const cases: NormCase[] = [
    // a pair, rows 3 against 2: the odd rank sends fewer slots than its peer waits for (the data wait must end at
    // the MISMATCH its signature block records, long before the deadline)
    {
      ...one,
      algorithm: 'oneshot',
      dtype: 'bf16',
      nranks: 2,
      rows: 3,
      hidden: 264,
      perProcess: { odd: { rank: 1, rows: 2 } },
    },
    // 4 ranks, eps only: every data wait is satisfied, only the signature sees it
    {
      ...one,
      algorithm: 'split',
      dtype: 'f16',
      nranks: 4,
      rows: 2,
      hidden: 264,
      shape: { blocksPerRank: 4, clusterBlocks: 2 },
      perProcess: { odd: { rank: 2, eps: 0.5 } },
    },
    // 4 ranks, two-shot, rows 2 against 1 (an owner's part that never comes)
    {
      ...one,
      algorithm: 'twoshot',
      dtype: 'f32',
      nranks: 4,
      rows: 2,
      hidden: 384,
      perProcess: { odd: { rank: 0, rows: 1 } },
    },
    {
      ...one,
      algorithm: 'split-twoshot',
      dtype: 'bf16',
      nranks: 4,
      rows: 2,
      hidden: 264,
      shape: { blocksPerRank: 4, clusterBlocks: 2 },
      perProcess: { odd: { rank: 3, rows: 1 } },
    },
  ]
  for (const { c, r } of (await runAll<NormResult>(cases)) as { c: NormCase; r: NormResult }[])
    assertMismatchOnEveryRank(c, r, c.perProcess?.odd?.rank as number, (rank) => rankSignature(c, rank))
})

test('per process: allReduceMany launched rank by rank with the signature block is bitwise equal to the in-process call', async (t) => {
  if (!exe) return t.skip('no host C++ compiler and LLCOMM_SKIP_NVCC=1')
  const cases: ManyCase[] = [
    { kind: 'many', dtype: 'bf16', nranks: 2, counts: [1, 7, 100, 4096, 33], calls: 2, perProcess: {} },
    { kind: 'many', dtype: 'f16', nranks: 4, counts: [3000, 5, 8, 9, 10, 11, 12, 13], calls: 2, perProcess: {} },
    { kind: 'many', dtype: 'f32', nranks: 4, counts: [1000, 1, 255], calls: 2, perProcess: {} },
    { kind: 'many', dtype: 'bf16', nranks: 2, counts: [0, 17], calls: 2, perProcess: {} },
    // empty calls on every rank: the signature block alone, one signature epoch per call
    { kind: 'many', dtype: 'f16', nranks: 3, counts: [0, 0], calls: 3, perProcess: {} },
  ]
  for (const { c, r } of (await runAll<ManyResult>(cases)) as { c: ManyCase; r: ManyResult }[]) {
    assert.equal(r.error.code, 0, `${label(c)}: a wait timed out: ${JSON.stringify(r.error)}`)
    assert.equal(r.mismatches, 0, `${label(c)}: wrong elements, first: ${r.first}`)
    assert.equal(r.diffsVsPerBuffer, 0, `${label(c)}: differs from one call per buffer`)
    assert.equal(r.crossRankDiffs, 0, `${label(c)}: ranks disagree bitwise`)
    assert.equal(r.diffsVsInProcess, 0, `${label(c)}: per process not bitwise equal to the in-process call`)
    assert.equal(r.sentinelBytesNotArmed, 0, `${label(c)}: sentinel slots left unarmed`)
    assert.equal(r.guardsBroken, 0, `${label(c)}: a kernel wrote past a buffer`)
    for (const [rank, w] of r.rankErrors.entries())
      assert.equal(w.code, 0, `${label(c)}: rank ${rank}: ${JSON.stringify(w)}`)
    assert.deepEqual(r.sigEpochs, Array(c.nranks).fill(c.calls), `${label(c)}: one signature epoch per launch`)
    assert.ok(r.ok, label(c))
  }
})

test('per process: a rank whose allReduceMany has another count for one buffer, is empty, is refused, or is an AllReduce ends the call with MISMATCH on every rank, naming both signatures', async (t) => {
  if (!exe) return t.skip('no host C++ compiler and LLCOMM_SKIP_NVCC=1')
  const odd = (
    dtype: Dtype,
    nranks: number,
    counts: number[],
    rank: number,
    buffer: number,
    count: number,
  ): ManyCase => ({
    kind: 'many',
    dtype,
    nranks,
    counts,
    calls: 1,
    perProcess: { odd: { rank, buffer, count } },
  })
  const cases: ManyCase[] = [
    // a pair, one buffer shorter on the odd rank: it sends fewer slots than its peer waits for
    odd('bf16', 2, [100, 37, 4096], 1, 1, 20),
    // 4 ranks, one buffer longer on the odd rank
    odd('f16', 4, [3000, 5, 8], 2, 2, 9),
    // 4 ranks, f32, one element more on the first buffer (its tail slot is one more slot)
    odd('f32', 4, [64, 64], 0, 0, 65),
    // the odd rank's only buffer is empty: its launch is the signature block alone, and it still meets the others'
    odd('bf16', 3, [300], 1, 0, 0),
    // the reverse: the others' call is empty, the odd rank's is not
    odd('f32', 2, [0], 0, 0, 40),
    // a call refused on the odd rank: the refused words through the signature block alone
    { ...odd('bf16', 3, [300], 2, 0, 0), perProcess: { odd: { rank: 2, buffer: 0, count: 0, refused: true } } },
    // the odd rank makes an AllReduce (oneshot-sentinel) where the others make the allReduceMany
    { ...odd('f32', 3, [256], 1, 0, 256), perProcess: { odd: { rank: 1, buffer: 0, count: 256, allReduce: true } } },
  ]
  for (const { c, r } of (await runAll<ManyResult>(cases)) as { c: ManyCase; r: ManyResult }[])
    assertMismatchOnEveryRank(c, r, c.perProcess?.odd?.rank as number, (rank) => manyRankSignature(c, rank))
})
