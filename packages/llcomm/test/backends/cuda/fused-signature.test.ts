// The per-process fused call's signature (issue 21; kernels/llcomm/fused_signature.cuh) without a GPU: the words
// (encodeFusedSignature: every field the ranks must agree on changes them; never equal to an all-reduce's), the
// planner's co-residency bound with the extra cluster per launch, and the launcher's launches over a stand-in driver:
// per process (a launch group of one rank, signatureCluster) every fused launch is R x B + C blocks with the
// signature words in its params; in process the grid and params are those without the signature cluster. The same
// for allReduceMany (encodeManySignature, code 10; its launches take one signature block: R x B + 1).
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { f32Bits } from '../../../src/backends/cuda/abi.js'
import {
  processAllReduceManyCalls,
  processDeviceAllReduceCalls,
  processFusedNormCalls,
} from '../../../src/backends/cuda/eager-calls.js'
import {
  ALLREDUCE_MANY_PARAMS_LAYOUT,
  FUSED_NORM_PARAMS_LAYOUT,
  packAllReduceManyParams,
  packFusedNormParams,
} from '../../../src/backends/cuda/fused-abi.js'
import {
  allReduceManyLaunches,
  type FusedLauncher,
  type FusedLauncherOptions,
  type FusedManyCall,
  type FusedNormCall,
  planAllReduceMany,
  planFusedNorm,
  planFusedSplit,
} from '../../../src/backends/cuda/fused-launcher.js'
import { SIGNATURE_BLOCK } from '../../../src/backends/cuda/kernel-table.js'
import { CudaProcessCommunicator } from '../../../src/backends/cuda/process-communicator.js'
import type { CuStream, DevicePtr, PreparedLaunch } from '../../../src/ffi/index.js'
import {
  ALGORITHM_CODES,
  decodeSignature,
  describeSignature,
  encodeFusedSignature,
  encodeManyGroupSignature,
  encodeManySignature,
  encodeRefusedSignature,
  encodeSignature,
  FUSED_SIGNATURE_CODE,
  type FusedCallSignature,
  MANY_SIGNATURE_CODE,
  type ManyCallSignature,
} from '../../../src/protocol/call-signature.js'
import { standInFusedLauncher } from '../../support/stand-in-fused-launcher.js'

const BASE: FusedCallSignature = {
  launchRows: 4,
  callRows: 4,
  hidden: 4096,
  dtype: 'bf16',
  algorithm: 'split',
  epsBits: f32Bits(1e-6),
  flags: 0,
  outScaleBits: f32Bits(1),
  launchIndex: 0,
  launchCount: 1,
  blocksPerRank: 16,
  clusterBlocks: 4,
}

/** Each change of `base` gives words that differ from base's and from every other change's. */
function assertEveryChangeDiffers<S>(encode: (s: S) => [number, number], base: S, changed: Partial<S>[]): void {
  const [w0, w1] = encode(base)
  const seen = new Set([`${w0}|${w1}`])
  for (const c of changed) {
    const [a, b] = encode({ ...base, ...c })
    assert.ok(a !== w0 || b !== w1, `changing ${JSON.stringify(c)} changes the signature`)
    seen.add(`${a}|${b}`)
  }
  assert.equal(seen.size, changed.length + 1, 'every change gives another signature')
}

/** Word 1's algorithm code is no all-reduce algorithm's (an all-reduce of `count` elements never matches it). */
function assertNoAllReduceCode([, w1]: [number, number], count: number): void {
  for (const algorithm of Object.keys(ALGORITHM_CODES) as (keyof typeof ALGORITHM_CODES)[]) {
    const [, a1] = encodeSignature({
      count,
      algorithm,
      dtype: 'bf16',
      op: 'sum',
      protocol: 'none',
      chunkIndex: 0,
      chunkCount: 1,
    })
    assert.notEqual(a1 & 0xf, w1 & 0xf)
  }
}

test('encodeFusedSignature: code 9, every field the ranks must agree on changes the words', () => {
  const [w0, w1] = encodeFusedSignature(BASE)
  assert.equal(w0, 4 * 4096)
  assert.equal(w1 & 0xf, FUSED_SIGNATURE_CODE)
  const changed: Partial<FusedCallSignature>[] = [
    { launchRows: 3 },
    { callRows: 5 },
    { hidden: 2048 },
    { dtype: 'f16' },
    { dtype: 'f32' },
    { algorithm: 'split-ll' },
    { algorithm: 'oneshot' },
    { algorithm: 'twoshot' },
    { algorithm: 'split-twoshot' },
    { epsBits: f32Bits(1e-5) },
    { flags: 1 },
    { flags: 2 },
    { flags: 4 },
    { outScaleBits: f32Bits(2) },
    { launchIndex: 1 },
    { launchCount: 2 },
    { blocksPerRank: 8 },
    { clusterBlocks: 2 },
  ]
  assertEveryChangeDiffers(encodeFusedSignature, BASE, changed)
})

test('a fused signature never equals an all-reduce signature (algorithm code 9 is no all-reduce code)', () => {
  assert.ok(!Object.values(ALGORITHM_CODES).includes(FUSED_SIGNATURE_CODE))
  assertNoAllReduceCode(encodeFusedSignature(BASE), 4 * 4096)
})

test('decodeSignature / describeSignature name a fused signature', () => {
  const [w0, w1] = encodeFusedSignature(BASE)
  const d = decodeSignature(w0, w1)
  assert.equal(d.algorithm, 'fused-rmsnorm split')
  assert.equal(d.dtype, 'bf16')
  assert.equal(d.count, 4 * 4096)
  assert.match(describeSignature(d), /^fused-rmsnorm split bf16 × 16384 \(call 0x[0-9a-f]{6}\)$/)
})

test('packFusedNormParams: the signature words at the end of the struct (zero when absent)', () => {
  const base = {
    input: [16n],
    residual: [16n],
    out: [16n],
    weight: [16n],
    recvBuf: [0n],
    scratch: [0n],
    errorWord: 0n,
    timeoutNs: 1n,
    sentinel: { offset: 0, channelHalfBytes: 0 },
    rows: 1,
    hidden: 8,
    epsBits: 0,
    flags: 0,
    nranks: 1,
    ranksInLaunch: 1,
    blocksPerRank: 1,
    launchRanks: [0],
  }
  const at = FUSED_NORM_PARAMS_LAYOUT.byName.signature.offset
  assert.equal(at + 8, FUSED_NORM_PARAMS_LAYOUT.bytes, 'appended last (every other field keeps its offset)')
  const v = (b: Buffer) => new DataView(b.buffer, b.byteOffset, b.byteLength)
  const none = v(packFusedNormParams(base))
  assert.deepEqual([none.getUint32(at, true), none.getUint32(at + 4, true)], [0, 0])
  const signed = v(packFusedNormParams({ ...base, signature: [0x1234, 0xabcd0009] }))
  assert.deepEqual([signed.getUint32(at, true), signed.getUint32(at + 4, true)], [0x1234, 0xabcd0009])
})

test('planFusedSplit with the signature cluster: ranksPerDevice x (G + 1) clusters within the cluster limit', () => {
  for (const algorithm of ['split', 'split-ll', 'split-twoshot'] as const)
    for (const nranks of [2, 4, 8])
      for (const limit of [8, 16, 24, 33, 64])
        for (const rows of [1, 2, 4, 7, 8, 16, 33])
          for (const hidden of [2048, 4096, 8192]) {
            const clusterLimit = (c: number) => (c === 1 ? Number.POSITIVE_INFINITY : limit)
            let plan: ReturnType<typeof planFusedSplit>
            try {
              plan = planFusedSplit(algorithm, nranks, rows, hidden, 'bf16', 1 << 22, nranks, clusterLimit, true)
            } catch {
              continue // no shape fits (INVALID_ARGUMENT), with or without the cluster
            }
            for (const l of plan.launches) {
              const c = l.clusterBlocks ?? 1
              if (c === 1) continue
              const g = l.blocksPerRank / c
              assert.ok(
                nranks * (g + 1) <= limit,
                `${algorithm} ${nranks} ranks ${rows}x${hidden} limit ${limit}: ${nranks} x (${g} + 1) clusters of ${c}`,
              )
            }
          }
})

test('planFusedSplit: the signature cluster takes one cluster per rank off the limit, and nothing without it', () => {
  // 8 ranks, 4 rows of 8192 (clusters of 2: fusedSplitPairsFirst), at most 24 clusters of each size on the device: 3
  // clusters a rank without the signature cluster, 2 with it (8 x (2 + 1) = 24)
  const limit = (c: number) => (c === 1 ? Number.POSITIVE_INFINITY : 24)
  const shape = (signed: boolean) =>
    planFusedSplit('split', 8, 4, 8192, 'bf16', 1 << 22, 8, limit, signed).launches.map((l) => [
      l.blocksPerRank,
      l.clusterBlocks,
    ])
  assert.deepEqual(shape(false), [[6, 2]])
  assert.deepEqual(shape(true), [[4, 2]])
  // planFusedNorm passes it on to the split planner ('auto' with the split kernels; a forced split algorithm)
  const auto = (signed: boolean) => planFusedNorm('auto', 8, 4, 8192, 'bf16', 1 << 22, 8, limit, true, signed)
  assert.deepEqual(
    auto(true).launches.map((l) => l.blocksPerRank / (l.clusterBlocks ?? 1)),
    auto(false).launches.map((l) => l.blocksPerRank / (l.clusterBlocks ?? 1) - 1),
  )
  const forced = planFusedNorm('split', 8, 4, 8192, 'bf16', 1 << 22, 8, limit, false, true)
  assert.deepEqual(
    forced.launches.map((l) => [l.blocksPerRank, l.clusterBlocks]),
    [[4, 2]],
  )
})

// ---- the launcher over a stand-in driver ----

const NRANKS = 2
const ptr = (n: number) => (0x7e0000000000 + n * 0x100000) as DevicePtr

interface Recorded {
  kernel: string
  grid: number
  cluster: number
  params: DataView
  stream: number
}

/** A FusedLauncher launching `ranks` of NRANKS (per process: [1]), recording each launch's kernel, grid and params. */
function standIn(ranks: number[], options: FusedLauncherOptions) {
  const launches: Recorded[] = []
  const kernels: string[] = []
  let launcher: FusedLauncher | undefined
  const configsOf = (l: FusedLauncher) => (l as unknown as { configs: Map<string, PreparedLaunch> }).configs
  const driver = {
    setCurrent() {},
    occupancyMaxActiveBlocksPerSm: () => 4,
    occupancyMaxActiveClusters: () => 64,
    error: (call: string, rc: number) => new Error(`${call} ${rc}`),
    cuLaunchKernelExRaw(config: number, f: number, kernelParams: number) {
      const entry = [...configsOf(launcher as FusedLauncher).entries()].find(([, l]) => l.snapshot().address === config)
      if (!entry) throw new Error('a launch of an unknown config')
      const [key, launch] = entry
      const { address, bytes } = launch.snapshot()
      const v = new DataView(bytes.buffer)
      const paramsAt = Number(v.getBigUint64(kernelParams - address, true)) - address
      // launchFor's key: kernel|group|grid|cooperative|pdl|cluster
      const parts = key.split('|')
      launches.push({
        kernel: kernels[f - 1],
        grid: Number(parts[2]),
        cluster: Number(parts[5]),
        params: new DataView(bytes.buffer.slice(paramsAt, paramsAt + launch.paramBytes)),
        stream: Number(v.getBigUint64(config - address + 32, true)), // CUlaunchConfig.hStream
      })
      return 0
    },
  }
  const standIn = standInFusedLauncher({
    driver,
    kernels,
    ranks: ranks,
    nranks: NRANKS,
    bufferBytes: 1 << 22,
    recvBuf: [0x7f0000000000 as DevicePtr, 0x7f0000800000 as DevicePtr],
    scratch: [0x7f0001000000 as DevicePtr, 0x7f0001100000 as DevicePtr],
    errorWord: 0x7f0001200000 as DevicePtr,
    launcherOptions: options,
  })
  launcher = standIn.launcher

  return { launcher, launches }
}

/** A call whose pointer lists hold only `ranks`' entries (the others 0, as the per-process communicator passes). */
function call(ranks: number[], over: Partial<FusedNormCall> = {}): FusedNormCall {
  const list = (base: number) => Array.from({ length: NRANKS }, (_, r) => (ranks.includes(r) ? ptr(base + r) : 0))
  return {
    inputs: list(0) as DevicePtr[],
    residuals: list(10) as DevicePtr[],
    outputs: list(20) as DevicePtr[],
    weights: list(30) as DevicePtr[],
    rows: 4,
    hidden: 4096,
    eps: 1e-6,
    dtype: 'bf16',
    ...over,
  }
}

const F = FUSED_NORM_PARAMS_LAYOUT.byName
const sigWords = (v: DataView) => [v.getUint32(F.signature.offset, true), v.getUint32(F.signature.offset + 4, true)]

test('per process: every fused launch is R x B + C blocks (one more cluster) and carries its signature words', () => {
  const perProcess = standIn([1], { perProcess: true, signatureCluster: true })
  const inProcess = standIn([0, 1], {})
  for (const algorithm of ['oneshot', 'twoshot', 'split', 'split-ll', 'split-twoshot'] as const) {
    for (const rows of [1, 4, 8]) {
      const from = perProcess.launches.length
      const p = perProcess.launcher.prepareNorm(call([1], { algorithm, rows }), false)
      p.issue([0x4000 as CuStream])
      const mine = perProcess.launches.slice(from)
      assert.equal(mine.length, p.launches, `${algorithm} ${rows} rows: one launch per planned launch`)
      // the same plan as in process with every rank on one device (ranksPerDevice = nranks)
      const fromIn = inProcess.launches.length
      const q = inProcess.launcher.prepareNorm(call([0, 1], { algorithm, rows }), false)
      q.issue([0x4000 as CuStream])
      const theirs = inProcess.launches.slice(fromIn)
      assert.equal(theirs.length, mine.length)
      mine.forEach((l, i) => {
        const blocks = l.params.getUint32(F.blocksPerRank.offset, true)
        assert.equal(l.params.getUint32(F.ranksInLaunch.offset, true), 1)
        assert.equal(l.grid, blocks + l.cluster, `${algorithm} ${rows} rows launch ${i}: B + C blocks`)
        assert.equal(l.grid % l.cluster, 0, 'a whole number of clusters')
        const [w0, w1] = sigWords(l.params)
        const d = decodeSignature(w0, w1)
        assert.equal(d.algorithm, `fused-rmsnorm ${p.algorithm}`)
        assert.equal(d.count, l.params.getUint32(F.rows.offset, true) * 4096)
        // in process: the data blocks only, no signature words
        const t = theirs[i]
        assert.equal(t.grid, 2 * t.params.getUint32(F.blocksPerRank.offset, true), 'in process: R x B')
        assert.deepEqual(sigWords(t.params), [0, 0])
        assert.equal(t.params.getUint32(F.blocksPerRank.offset, true), blocks, 'the same plan')
        assert.equal(t.cluster, l.cluster)
      })
    }
  }
})

test("per process: the other ranks' pointers are not read, this rank's are checked (typed errors)", () => {
  const { launcher } = standIn([1], { perProcess: true, signatureCluster: true })
  assert.doesNotThrow(() => launcher.prepareNorm(call([1]), false))
  const bad = call([1])
  assert.throws(
    () => launcher.prepareNorm({ ...bad, inputs: [bad.inputs[0], (bad.inputs[1] + 8) as DevicePtr] }, false),
    (e: Error & { code?: string }) => e.code === 'MISALIGNED_BUFFER',
  )
  assert.throws(
    () => launcher.prepareNorm({ ...bad, weights: [ptr(1), 0 as DevicePtr] }, false),
    (e: Error & { code?: string }) => e.code === 'INVALID_ARGUMENT',
  )
  assert.throws(
    () => launcher.prepareNorm(call([1], { rows: 0 }), false),
    (e: Error & { code?: string }) => e.code === 'INVALID_ARGUMENT',
  )
  assert.throws(
    () => launcher.prepareNorm(call([1], { eps: -1 }), false),
    (e: Error & { code?: string }) => e.code === 'INVALID_ARGUMENT',
  )
})

// ---- allReduceMany (issue 21 item 2): encodeManySignature, code 10, one signature block per launch ----

const MANY_BASE: ManyCallSignature = {
  dtype: 'bf16',
  pieces: [
    { buffer: 0, offset: 0, count: 4096 },
    { buffer: 1, offset: 0, count: 37 },
    { buffer: 2, offset: 0, count: 300 },
  ],
  launchIndex: 0,
  launchCount: 1,
  blocksPerRank: 4,
}

test('encodeManySignature: code 10, word 0 the launch total, every field the ranks must agree on changes the words', () => {
  const [w0, w1] = encodeManySignature(MANY_BASE)
  assert.equal(w0, 4096 + 37 + 300)
  assert.equal(w1 & 0xf, MANY_SIGNATURE_CODE)
  assert.equal((w1 >>> 4) & 3, 2, 'bf16')
  const piece = (i: number, over: Partial<ManyCallSignature['pieces'][number]>) =>
    MANY_BASE.pieces.map((p, j) => (j === i ? { ...p, ...over } : p))
  const changed: Partial<ManyCallSignature>[] = [
    { dtype: 'f16' },
    { dtype: 'f32' },
    { pieces: piece(1, { count: 38 }) },
    // the same total, the elements moved between buffers: only the hash sees it
    { pieces: piece(1, { count: 36 }).map((p, j) => (j === 2 ? { ...p, count: 301 } : p)) },
    { pieces: piece(2, { offset: 300 }) },
    { pieces: piece(2, { buffer: 3 }) },
    { pieces: MANY_BASE.pieces.slice(0, 2) },
    { pieces: [...MANY_BASE.pieces, { buffer: 3, offset: 0, count: 0 }] },
    { pieces: piece(0, { offset: 2 ** 32 }) },
    { launchIndex: 1 },
    { launchCount: 2 },
    { blocksPerRank: 5 },
  ]
  assertEveryChangeDiffers(encodeManySignature, MANY_BASE, changed)
})

test('an allReduceMany signature never equals an all-reduce or a fused signature (code 10 is neither)', () => {
  assert.ok(!Object.values(ALGORITHM_CODES).includes(MANY_SIGNATURE_CODE))
  assert.notEqual(MANY_SIGNATURE_CODE, FUSED_SIGNATURE_CODE)
  const [, w1] = encodeManySignature(MANY_BASE)
  assertNoAllReduceCode([0, w1], 4433)
  assert.notEqual(encodeFusedSignature(BASE)[1] & 0xf, w1 & 0xf)
})

test('decodeSignature / describeSignature name an allReduceMany signature', () => {
  const [w0, w1] = encodeManySignature(MANY_BASE)
  const d = decodeSignature(w0, w1)
  assert.equal(d.algorithm, 'allreduce-many')
  assert.equal(d.dtype, 'bf16')
  assert.equal(d.count, 4433)
  assert.match(describeSignature(d), /^allreduce-many bf16 × 4433 \(call 0x[0-9a-f]{6}\)$/)
})

test('packAllReduceManyParams: the signature words at the end of the struct (zero when absent)', () => {
  const base = {
    inputs: [[16n]],
    outputs: [[16n]],
    counts: [8],
    recvBuf: [0n],
    scratch: [0n],
    errorWord: 0n,
    timeoutNs: 1n,
    sentinel: { offset: 0, channelHalfBytes: 0 },
    nranks: 1,
    ranksInLaunch: 1,
    blocksPerRank: 1,
    launchRanks: [0],
  }
  const at = ALLREDUCE_MANY_PARAMS_LAYOUT.byName.signature.offset
  assert.equal(at + 8, ALLREDUCE_MANY_PARAMS_LAYOUT.bytes, 'appended last (every other field keeps its offset)')
  const v = (b: Buffer) => new DataView(b.buffer, b.byteOffset, b.byteLength)
  const none = v(packAllReduceManyParams(base))
  assert.deepEqual([none.getUint32(at, true), none.getUint32(at + 4, true)], [0, 0])
  const signed = v(packAllReduceManyParams({ ...base, signature: [0x1234, 0xabcd000a] }))
  assert.deepEqual([signed.getUint32(at, true), signed.getUint32(at + 4, true)], [0x1234, 0xabcd000a])
})

/** A many call whose pointer lists hold only `ranks`' entries (the others 0, as the per-process communicator passes). */
function manyCall(ranks: number[], counts: number[], over: Partial<FusedManyCall> = {}): FusedManyCall {
  const list = (base: number) => Array.from({ length: NRANKS }, (_, r) => (ranks.includes(r) ? ptr(base + r) : 0))
  return {
    inputs: counts.map((_, b) => list(100 + 4 * b) as DevicePtr[]),
    outputs: counts.map((_, b) => list(200 + 4 * b) as DevicePtr[]),
    counts,
    dtype: 'bf16',
    ...over,
  }
}

const M = ALLREDUCE_MANY_PARAMS_LAYOUT.byName
const manySigWords = (v: DataView) => [v.getUint32(M.signature.offset, true), v.getUint32(M.signature.offset + 4, true)]

test('per process: every allReduceMany launch is R x B + 1 blocks (one signature block) and carries its signature words', () => {
  const perProcess = standIn([1], { perProcess: true, signatureCluster: true })
  const inProcess = standIn([0, 1], {})
  // one launch; more than LLCOMM_MANY_MAX_BUFFERS buffers (two launches); buffers larger than a launch (split pieces)
  for (const counts of [
    [4096, 1, 37, 8192, 300],
    [1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
    [3_000_000, 17],
    [0, 5, 0],
  ]) {
    for (const dtype of ['bf16', 'f16', 'f32'] as const) {
      const plans = planAllReduceMany(counts, dtype, NRANKS, 1 << 22).filter((l) => l.pieces.some((p) => p.count > 0))
      const from = perProcess.launches.length
      const p = perProcess.launcher.prepareMany(manyCall([1], counts, { dtype }))
      p.issue([0x4000 as CuStream])
      const mine = perProcess.launches.slice(from)
      const what = `${dtype} ${counts.join(',')}`
      assert.equal(mine.length, plans.length, `${what}: one launch per planned launch`)
      assert.equal(p.launches, plans.length)
      const fromIn = inProcess.launches.length
      inProcess.launcher.prepareMany(manyCall([0, 1], counts, { dtype })).issue([0x4000 as CuStream])
      const theirs = inProcess.launches.slice(fromIn)
      assert.equal(theirs.length, mine.length)
      const words = new Set<string>()
      mine.forEach((l, i) => {
        const blocks = l.params.getUint32(M.blocksPerRank.offset, true)
        assert.equal(l.params.getUint32(M.ranksInLaunch.offset, true), 1)
        assert.equal(l.grid, blocks + 1, `${what} launch ${i}: B + 1 blocks`)
        assert.equal(l.cluster, 1, 'not a cluster launch')
        const pieces = plans[i].pieces.filter((q) => q.count > 0)
        const w = manySigWords(l.params)
        assert.deepEqual(
          w,
          encodeManySignature({ dtype, pieces, launchIndex: i, launchCount: plans.length, blocksPerRank: blocks }),
        )
        const d = decodeSignature(w[0], w[1])
        assert.equal(d.algorithm, 'allreduce-many')
        assert.equal(d.dtype, dtype)
        assert.equal(
          d.count,
          pieces.reduce((a, q) => a + q.count, 0),
        )
        words.add(w.join('|'))
        // in process: the data blocks only, no signature words, the same plan
        const t = theirs[i]
        assert.equal(t.grid, 2 * t.params.getUint32(M.blocksPerRank.offset, true), 'in process: R x B')
        assert.deepEqual(manySigWords(t.params), [0, 0])
        assert.equal(t.params.getUint32(M.blocksPerRank.offset, true), blocks, 'the same plan')
      })
      assert.equal(words.size, mine.length, `${what}: every launch of the call has its own words`)
    }
  }
})

test('per process: an allReduceMany without elements is one launch of the signature block alone (grid 1, no data block); in process, no launch', () => {
  const perProcess = standIn([1], { perProcess: true, signatureCluster: true })
  const inProcess = standIn([0, 1], {})
  for (const counts of [[0], [0, 0, 0]]) {
    for (const dtype of ['bf16', 'f32'] as const) {
      const what = `${dtype} ${counts.join(',')}`
      const from = perProcess.launches.length
      const p = perProcess.launcher.prepareMany(manyCall([1], counts, { dtype }))
      p.issue([0x4000 as CuStream])
      const mine = perProcess.launches.slice(from)
      assert.equal(mine.length, 1, `${what}: one launch`)
      assert.equal(p.launches, 1)
      const [l] = mine
      assert.equal(l.grid, 1, `${what}: the signature block alone`)
      assert.equal(l.params.getUint32(M.blocksPerRank.offset, true), 0, `${what}: no data block`)
      assert.equal(l.params.getUint32(M.buffers.offset, true), 0, `${what}: no piece`)
      const w = manySigWords(l.params)
      assert.deepEqual(w, encodeManySignature({ dtype, pieces: [], launchIndex: 0, launchCount: 1, blocksPerRank: 0 }))
      assert.equal(decodeSignature(w[0], w[1]).count, 0)
      // a peer whose call has an element never has these words
      const [one] = planAllReduceMany([1], dtype, NRANKS, 1 << 22)
      const peer = encodeManySignature({
        dtype,
        pieces: one.pieces,
        launchIndex: 0,
        launchCount: 1,
        blocksPerRank: one.blocksPerRank,
      })
      assert.notDeepEqual(w, peer)
      const fromIn = inProcess.launches.length
      const q = inProcess.launcher.prepareMany(manyCall([0, 1], counts, { dtype }))
      q.issue([0x4000 as CuStream])
      assert.equal(inProcess.launches.length, fromIn, `${what}: in process nothing is launched`)
      assert.equal(q.launches, 0)
    }
  }
})

test("per process: the host view's group signature is one launch of the signature block alone with the group's words, never a real launch's", () => {
  const perProcess = standIn([1], { perProcess: true, signatureCluster: true })
  for (const counts of [[64, 33], [64], [0, 5, 0], [4096, 1, 37, 8192, 300]]) {
    const from = perProcess.launches.length
    const p = perProcess.launcher.prepareManyGroupSignature(counts, 'f32')
    p.issue([0x4000 as CuStream])
    const [l, ...more] = perProcess.launches.slice(from)
    assert.equal(more.length, 0)
    assert.equal(l.grid, 1)
    assert.equal(l.params.getUint32(M.blocksPerRank.offset, true), 0)
    assert.equal(l.params.getUint32(M.buffers.offset, true), 0)
    const w = manySigWords(l.params)
    assert.deepEqual(w, encodeManyGroupSignature('f32', counts))
    // a real launch of the same buffers (launch count >= 1) never has the group's words
    const plans = allReduceManyLaunches(counts, 'f32', NRANKS, true, 1 << 22)
    for (const [i, plan] of plans.entries())
      assert.notDeepEqual(
        w,
        encodeManySignature({
          dtype: 'f32',
          pieces: plan.pieces,
          launchIndex: i,
          launchCount: plans.length,
          blocksPerRank: plan.blocksPerRank,
        }),
      )
  }
  // one buffer fewer, or another count, gives other words
  const base = encodeManyGroupSignature('f32', [64, 33])
  for (const other of [[64], [64, 34], [33, 64], [64, 33, 0]])
    assert.notDeepEqual(encodeManyGroupSignature('f32', other), base, other.join(','))
  assert.notDeepEqual(encodeManyGroupSignature('bf16', [64, 33]), base)
  // in process there is no signature block to launch
  assert.throws(
    () => standIn([0, 1], {}).launcher.prepareManyGroupSignature([1], 'f32'),
    (e: unknown) => (e as { code?: string }).code === 'INTERNAL',
  )
})

test("per process allReduceMany: the other ranks' pointers are not read, this rank's are checked (typed errors)", () => {
  const { launcher } = standIn([1], { perProcess: true, signatureCluster: true })
  assert.doesNotThrow(() => launcher.prepareMany(manyCall([1], [100, 7])))
  const good = manyCall([1], [100, 7])
  const code = (c: string) => (e: Error & { code?: string }) => e.code === c
  assert.throws(
    () => launcher.prepareMany({ ...good, inputs: [good.inputs[0], [0 as DevicePtr, (ptr(1) + 8) as DevicePtr]] }),
    code('MISALIGNED_BUFFER'),
  )
  assert.throws(
    () => launcher.prepareMany({ ...good, outputs: [good.outputs[0], [ptr(0), 0 as DevicePtr]] }),
    code('INVALID_ARGUMENT'),
  )
  assert.throws(() => launcher.prepareMany({ ...good, counts: [100] }), code('INVALID_ARGUMENT'))
  assert.throws(() => launcher.prepareMany({ ...good, counts: [100, -1] }), code('INVALID_ARGUMENT'))
  assert.throws(() => launcher.prepareMany({ ...good, counts: [100, 1.5] }), code('INVALID_ARGUMENT'))
  assert.throws(() => launcher.prepareMany(manyCall([1], [])), code('INVALID_ARGUMENT'))
})

/**
 * A per-process communicator stand-in (no GPU): the real CudaProcessCommunicator methods over rank 1 of 2, with the
 * stand-in FusedLauncher (its launches recorded) and an AllReduceLauncher that must not be reached.
 */
function processStandIn(busyStreams: Set<number> = new Set()) {
  const fused = standIn([1], { perProcess: true, signatureCluster: true })
  const comm = Object.create(CudaProcessCommunicator.prototype) as Record<string, unknown>
  Object.assign(comm, {
    driver: { streamQuery: (s: number) => !busyStreams.has(s) },
    rank: 1,
    size: NRANKS,
    state: 'open',
    broken: undefined,
    fusedRefusal: undefined,
    rv: { deadPeer: undefined },
    stream: 0x5000,
    fusedLauncher: fused.launcher,
    launcher: {
      prepare: () => assert.fail('a refused call reached the launcher'),
      prepareEmpty: () => assert.fail('a refused call reached the launcher'),
    },
    eagerCalls: processDeviceAllReduceCalls(4),
    eagerNormCalls: processFusedNormCalls(4),
    eagerManyCalls: processAllReduceManyCalls(4),
  })
  return { comm: comm as unknown as CudaProcessCommunicator & Record<string, unknown>, launches: fused.launches }
}

test('per process: a call refused on its rank launches the refused signature alone (grid 1) on its stream, then throws the refusal', (t) => {
  if (!SIGNATURE_BLOCK) return t.skip('LLCOMM_SIG_BLOCK=0: no signature block to launch')
  const p = ptr(1)
  const refusals: [string, string, (c: CudaProcessCommunicator) => unknown][] = [
    [
      'deviceAllReduce, count -1',
      'INVALID_ARGUMENT',
      (c) => c.deviceAllReduce({ input: p, output: p, count: -1, dtype: 'f32' }),
    ],
    [
      'deviceAllReduce, an unknown dtype',
      'UNSUPPORTED_DTYPE',
      (c) => c.deviceAllReduce({ input: p, output: p, count: 8, dtype: 'f64' as unknown as 'f32' }),
    ],
    [
      'deviceAllReduce, a misaligned input',
      'MISALIGNED_BUFFER',
      (c) => c.deviceAllReduce({ input: p + 4, output: p, count: 8, dtype: 'f32' }),
    ],
    [
      'deviceAllReduceRmsNorm, 0 rows',
      'INVALID_ARGUMENT',
      (c) =>
        c.deviceAllReduceRmsNorm({
          input: p,
          residual: p,
          output: p,
          weight: p,
          rows: 0,
          hidden: 4096,
          eps: 1e-6,
          dtype: 'bf16',
        }),
    ],
    [
      'deviceAllReduceMany, one count too few',
      'INVALID_ARGUMENT',
      (c) => c.deviceAllReduceMany({ inputs: [p, p], outputs: [p, p], counts: [4], dtype: 'bf16' }),
    ],
  ]
  for (const [what, code, call] of refusals) {
    const { comm, launches } = processStandIn()
    assert.throws(
      () => call(comm),
      (e: unknown) => (e as { code?: string }).code === code,
      what,
    )
    assert.equal(launches.length, 1, `${what}: one launch`)
    assert.equal(launches[0].grid, 1, `${what}: the signature block alone`)
    assert.equal(launches[0].params.getUint32(M.blocksPerRank.offset, true), 0)
    assert.deepEqual(manySigWords(launches[0].params), encodeRefusedSignature(), `${what}: the refused words`)
    assert.match(describeSignature(decodeSignature(...encodeRefusedSignature())), /refused/)
  }
  // Nothing is launched where the call is not refused by its arguments: a closed or a failed communicator.
  for (const [what, state] of [
    ['closed', { state: 'closed' }],
    ['failed', { broken: Object.assign(new Error('x'), { code: 'TIMEOUT' }) }],
  ] as const) {
    const { comm, launches } = processStandIn()
    Object.assign(comm, state)
    assert.throws(() => comm.deviceAllReduce({ input: p, output: p, count: -1, dtype: 'f32' }), what)
    assert.equal(launches.length, 0, `${what}: nothing launched`)
  }
})

test("per process: a call on another stream while the previous call's stream is busy is BUSY on that rank, refused on the busy stream (ordered after it)", (t) => {
  if (!SIGNATURE_BLOCK) return t.skip('LLCOMM_SIG_BLOCK=0: no signature block to launch')
  const busy = new Set<number>()
  const { comm, launches } = processStandIn(busy)
  const p = ptr(1)
  const many = (stream: number) =>
    comm.deviceAllReduceMany({ inputs: [p], outputs: [p], counts: [64], dtype: 'bf16', stream })
  many(0x6000)
  assert.equal(launches.length, 1)
  assert.equal(launches[0].stream, 0x6000)
  // the same stream again, busy or not: ordered by the stream itself
  busy.add(0x6000)
  many(0x6000)
  assert.equal(launches.length, 2)
  // another stream while 0x6000 has work: BUSY, and the refused signature goes on 0x6000, after that work
  assert.throws(
    () => many(0x7000),
    (e: unknown) => (e as { code?: string }).code === 'BUSY',
  )
  assert.equal(launches.length, 3)
  assert.equal(launches[2].stream, 0x6000, 'the refusal is ordered after the busy stream')
  assert.deepEqual(manySigWords(launches[2].params), encodeRefusedSignature())
  // once 0x6000 is idle, another stream is fine
  busy.delete(0x6000)
  many(0x7000)
  assert.equal(launches.length, 4)
  assert.equal(launches[3].stream, 0x7000)
  // a fused call's cached path claims its stream too
  busy.add(0x7000)
  assert.throws(
    () =>
      comm.deviceAllReduceRmsNorm({
        input: p,
        residual: p,
        output: p,
        weight: p,
        rows: 1,
        hidden: 4096,
        eps: 1e-6,
        dtype: 'bf16',
        stream: 0x8000,
      }),
    (e: unknown) => (e as { code?: string }).code === 'BUSY',
  )
  assert.equal(launches.at(-1)?.stream, 0x7000)
  assert.deepEqual(manySigWords((launches.at(-1) as Recorded).params), encodeRefusedSignature())
})
