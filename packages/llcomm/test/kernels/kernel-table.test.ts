/** Unit tests of the kernel table: coverage, names, launch shapes and buffer layout invariants (no GPU, no nvcc). */

import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { DTYPE_BYTES, DTYPES, type Dtype } from '../../src/api/types.js'
import {
  LLCOMM_MAX_CHANNELS,
  LLCOMM_MAX_RANKS,
  LLCOMM_SCRATCH_BYTES,
  LLCOMM_SENTINEL_WORD,
  LLCOMM_THREADS,
} from '../../src/backends/cuda/abi.js'
import {
  accumulationBuild,
  allReduceTargetBytesPerBlock,
  type BlockTargets,
  channelCapacityBytes,
  deviceBufferLayout,
  KERNEL_VARIANTS,
  type KernelBuildOptions,
  type KernelProtocol,
  kernelBuildDefines,
  kernelSources,
  kernelsDirectory,
  launchShape,
  launchVariant,
  maxBlocksPerRank,
  parseInstantiations,
  parseTargetScale,
  parseTwoshotAllGather,
  pieceElems,
  selectKernel,
  TARGET_BYTES_PER_BLOCK,
  TOOL_KERNELS,
  TWOSHOT_PULL_MIN_SLOTS,
  twoshotAllGather,
  twoshotPartSlots,
  twoshotSerialPath,
} from '../../src/backends/cuda/kernel-table.js'
import { MAX_BUFFER_BYTES } from '../../src/communicator/options.js'

const KERNEL_ALGORITHMS = [
  'oneshot-ll',
  'oneshot-sentinel',
  'twoshot-sentinel',
  'twoshot-atomic',
  'oneshot-barrier',
  'ring',
] as const
const RANKS = [1, 2, 3, 4, 5, 7, 8, 16, 24, 32, 63, 64]
const BUFFERS = [64 << 10, 1 << 20, 3_000_001, 8 << 20]

test('every algorithm with kernels has a variant for every dtype and op sum; oneshot-ll has LL8 and LL16', () => {
  for (const a of KERNEL_ALGORITHMS) {
    for (const d of DTYPES) {
      const vs = KERNEL_VARIANTS.filter((v) => v.algorithm === a && v.dtype === d && v.op === 'sum')
      assert.ok(vs.length >= 1, `${a} ${d}`)
      assert.equal(selectKernel(a, d, 'sum').algorithm, a)
    }
  }
  for (const d of DTYPES) {
    assert.equal(selectKernel('oneshot-ll', d, 'sum', 'll16').protocol, 'll16')
    assert.equal(selectKernel('oneshot-ll', d, 'sum', 'll8').protocol, 'll8')
    assert.equal(selectKernel('oneshot-ll', d, 'sum').protocol, 'll8', 'LL8 until the stress test clears LL16')
  }
  // 21 algorithm kernels and twoshot-sentinel's three pull kernels (allGather 'pull'), which selectKernel never
  // returns: launchVariant() swaps them in per launch.
  assert.equal(KERNEL_VARIANTS.length, 24)
  for (const d of DTYPES) {
    const two = KERNEL_VARIANTS.filter((v) => v.algorithm === 'twoshot-sentinel' && v.dtype === d)
    assert.deepEqual(two.map((v) => v.allGather).sort(), ['pull', 'push'])
    assert.equal(selectKernel('twoshot-sentinel', d, 'sum').allGather, 'push')
    assert.equal(two.find((v) => v.allGather === 'pull')?.kernelName, `llcomm_twoshot_sentinel_pull_sentinel_${d}_sum`)
  }
  for (const v of KERNEL_VARIANTS) assert.equal(v.allGather !== undefined, v.algorithm === 'twoshot-sentinel')
})

test('kernel names are unique, follow llcomm_<algorithm>_<protocol>_<dtype>_<op>, and sources exist', () => {
  const names = [...KERNEL_VARIANTS.map((v) => v.kernelName), ...TOOL_KERNELS.map((k) => k.kernelName)]
  assert.equal(new Set(names).size, names.length)
  for (const v of KERNEL_VARIANTS) {
    const pull = v.allGather === 'pull' ? '_pull' : ''
    assert.equal(v.kernelName, `llcomm_${v.algorithm.replace(/-/g, '_')}${pull}_${v.protocol}_${v.dtype}_${v.op}`)
    assert.equal(v.sourceFile, `allreduce/${v.algorithm.replace(/-/g, '_')}.cu`)
    assert.match(v.kernelName, /^[a-z0-9_]+$/)
  }
  const sources = new Set(kernelSources().map((s) => s.path))
  for (const k of [...KERNEL_VARIANTS, ...TOOL_KERNELS]) assert.ok(sources.has(k.sourceFile), k.sourceFile)
  for (const s of kernelSources()) assert.equal(s.name, s.path)
  assert.ok(sources.has('llcomm/abi.cuh') && sources.has('instantiations.def'))
})

test('unsupported requests fail with typed errors', () => {
  assert.throws(() => selectKernel('nccl', 'f32', 'sum'), { code: 'UNSUPPORTED_ALGORITHM' })
  assert.throws(() => selectKernel('ring', 'f64' as Dtype, 'sum'), { code: 'UNSUPPORTED_DTYPE' })
  // The LL protocol option concerns oneshot-ll only; other algorithms ignore it.
  assert.equal(selectKernel('ring', 'f32', 'sum', 'll16').protocol, 'flags')
  assert.throws(() => parseInstantiations('LLCOMM_VARIANT(oneshot_ll, ll32, f32, sum)'), { code: 'INVALID_ARGUMENT' })
  assert.throws(() => launchShape(KERNEL_VARIANTS[0], 65, 10), { code: 'INVALID_ARGUMENT' })
  assert.throws(() => launchShape(KERNEL_VARIANTS[0], 2, 0), { code: 'INVALID_ARGUMENT' })
  assert.throws(() => deviceBufferLayout(2, 0), { code: 'INVALID_ARGUMENT' })
})

test('buffer layout: regions are disjoint, 128-byte aligned, inside the buffer; fills cover what needs a fill', () => {
  for (const n of RANKS) {
    for (const b of BUFFERS) {
      const L = deviceBufferLayout(n, b)
      assert.equal(L.channels, LLCOMM_MAX_CHANNELS)
      assert.equal(L.scratchBytes, LLCOMM_SCRATCH_BYTES)
      const regions = [L.ll, L.sentinel, L.ll128, L.plain].map((r) => ({
        start: r.offset,
        end: r.offset + 2 * L.channels * r.channelHalfBytes,
        half: r.channelHalfBytes,
      }))
      regions.sort((x, y) => x.start - y.start)
      for (const [i, r] of regions.entries()) {
        assert.equal(r.start % 128, 0)
        assert.equal(r.half % 128, 0)
        assert.ok(r.half > 0)
        assert.ok(r.end <= L.recvBufBytes)
        if (i > 0) assert.ok(regions[i - 1].end <= r.start, 'regions overlap')
      }
      // Channel-halves of one region tile it without overlap: (2c + h) * half for c < channels, h < 2.
      const sentinelFill = L.fills.find((f) => f.word32 === LLCOMM_SENTINEL_WORD)
      assert.deepEqual(sentinelFill, {
        offset: L.sentinel.offset,
        bytes: 2 * L.channels * L.sentinel.channelHalfBytes,
        word32: LLCOMM_SENTINEL_WORD,
        region: 'recv',
      })
      for (const r of [L.ll, L.ll128]) {
        assert.ok(
          L.fills.some(
            (f) =>
              f.region === 'recv' &&
              f.word32 === 0 &&
              f.offset === r.offset &&
              f.bytes === 2 * L.channels * r.channelHalfBytes,
          ),
        )
      }
      assert.ok(
        L.fills.some(
          (f) => f.region === 'scratch' && f.offset === 0 && f.bytes === LLCOMM_SCRATCH_BYTES && f.word32 === 0,
        ),
      )
      for (const f of L.fills) {
        assert.equal(f.offset % 4, 0)
        assert.equal(f.bytes % 4, 0)
        assert.ok(f.offset + f.bytes <= (f.region === 'recv' ? L.recvBufBytes : L.scratchBytes))
      }
    }
  }
})

/** The lane arithmetic of each kernel (kernels/allreduce/*.cu), written out independently of kernel-table.ts. */
function laneUse(
  alg: string,
  n: number,
  pieceBytes: number,
  eb: number,
  L: ReturnType<typeof deviceBufferLayout>,
  build: KernelBuildOptions = {},
): { fits: boolean } {
  // f16/bf16 accumulated in f32 (abi.cuh defaults, issue 18 item 4): two physical lines per 31 input words, and ring
  // reduce-scatter slots holding f32 partials (twice the input bytes).
  const f32Lines = eb === 2 && build.atomicF32Lines !== false
  const f32Partials = eb === 2 && build.ringF32Partials !== false
  const down16 = (x: number) => Math.floor(x / 16) * 16
  const partBytes = Math.ceil(Math.ceil(pieceBytes / eb / n) / (16 / eb)) * 16
  switch (alg) {
    case 'oneshot-ll': {
      const lane = down16(Math.floor(L.ll.channelHalfBytes / n))
      return { fits: Math.ceil(pieceBytes / 8) * 16 <= lane && Math.ceil(pieceBytes / 4) * 8 <= lane } // LL16 and LL8
    }
    case 'oneshot-sentinel':
      return { fits: Math.ceil(pieceBytes / 16) * 16 <= down16(Math.floor(L.sentinel.channelHalfBytes / n)) }
    case 'twoshot-sentinel':
      return { fits: Math.ceil(partBytes / 16) * 16 <= down16(Math.floor(L.sentinel.channelHalfBytes / (2 * n))) }
    case 'twoshot-atomic': {
      const words = partBytes / 4
      const lines = Math.ceil(words / 31)
      return {
        fits:
          words * 8 <= down16(Math.floor(L.ll.channelHalfBytes / n)) &&
          lines * 128 * (f32Lines ? 2 : 1) <= L.ll128.channelHalfBytes,
      }
    }
    case 'oneshot-barrier':
      return { fits: Math.ceil(pieceBytes / 16) * 16 <= L.plain.channelHalfBytes }
    case 'ring': {
      if (n === 1) return { fits: pieceBytes <= L.plain.channelHalfBytes }
      return { fits: partBytes * (f32Partials ? 2 : 1) <= down16(Math.floor(L.plain.channelHalfBytes / (2 * (n - 1)))) }
    }
  }
  throw new Error(alg)
}

test('a twoshot-sentinel launch moves fewer than 2^31 bytes a rank at the largest buffer (it splits its channels in 32 bits)', () => {
  // channel.cuh LlcParts and ll_buffer.cuh llcLoadPayload32 / llcStorePayload32 narrow a launch's element count and
  // byte offsets to 32 bits; that holds while its launch of the largest accepted buffer stays below 2^31 bytes a rank.
  assert.equal(MAX_BUFFER_BYTES, 2 ** 31)
  for (const v of KERNEL_VARIANTS.filter((k) => k.algorithm === 'twoshot-sentinel'))
    for (const n of [2, 3, 8, 64]) {
      const full = launchShape(v, n, 1, MAX_BUFFER_BYTES).maxCountPerCall
      assert.ok(full * DTYPE_BYTES[v.dtype] < 2 ** 31, `${v.kernelName} at ${n} ranks: ${full} elements a launch`)
    }
})

test('launchShape: channels fit their lanes at every count up to maxCountPerCall; shapes are well formed', () => {
  // The default build and the 16-bit accumulation build (communicator option accumulation: 'dtype').
  for (const build of [{}, accumulationBuild('dtype')])
    for (const v of KERNEL_VARIANTS) {
      const eb = DTYPE_BYTES[v.dtype]
      for (const n of RANKS) {
        for (const b of BUFFERS) {
          const L = deviceBufferLayout(n, b)
          const full = launchShape(v, n, 1, b, build).maxCountPerCall
          assert.equal((full * eb) % 16, 0, 'chunk boundaries stay 16-byte aligned')
          assert.equal(full, maxBlocksPerRank(n) * (channelCapacityBytes(v, n, L, build) / eb))
          const counts = [
            1,
            2,
            3,
            7,
            8,
            9,
            15,
            17,
            1000,
            4097,
            Math.floor(full / 3),
            full - 1,
            full,
            full + 1,
            10 * full,
          ]
          for (const count of counts.filter((c) => c >= 1)) {
            const s = launchShape(v, n, count, b, build)
            assert.equal(s.maxCountPerCall, full)
            assert.equal(s.threadsPerBlock, LLCOMM_THREADS)
            assert.equal(s.sharedBytes, 0)
            assert.ok(s.blocksPerRank >= 1 && s.blocksPerRank <= LLCOMM_MAX_CHANNELS)
            assert.ok(s.blocksPerRank * n <= Math.max(128, n), `${s.blocksPerRank} blocks × ${n} ranks`)
            const launched = Math.min(count, full)
            const piece = pieceElems(launched, s.blocksPerRank, 16 / eb)
            const where = `${v.kernelName} n=${n} buffer=${b} count=${count} blocks=${s.blocksPerRank}`
            assert.ok(
              laneUse(v.algorithm, n, piece * eb, eb, L, build).fits,
              `channel piece of ${piece} elements overflows its lanes: ${where}`,
            )
          }
        }
      }
    }
})

test('f32 accumulation: ring halves its f16/bf16 capacity per launch; twoshot-atomic (lines for both builds) and the rest keep theirs', () => {
  const sixteen = accumulationBuild('dtype')
  assert.deepEqual(accumulationBuild('f32'), {})
  for (const v of KERNEL_VARIANTS)
    for (const n of [2, 3, 4, 8, 63])
      for (const b of BUFFERS) {
        const wide = launchShape(v, n, 1, b).maxCountPerCall
        const narrow = launchShape(v, n, 1, b, sixteen).maxCountPerCall
        const where = `${v.kernelName} n=${n} buffer=${b}: ${wide} vs ${narrow}`
        if (v.algorithm === 'ring' && v.dtype !== 'f32' && n > 1) {
          // each slot halves, rounded down to 16 bytes: at most 16 bytes per slot and block less than half
          const slack = (maxBlocksPerRank(n) * n * 16) / DTYPE_BYTES[v.dtype]
          assert.ok(wide <= narrow / 2 && wide >= narrow / 2 - slack, where)
        } else assert.equal(wide, narrow, where)
      }
  assert.deepEqual(kernelBuildDefines({}), [])
  assert.deepEqual(kernelBuildDefines({ ringF32Partials: true, atomicF32Lines: true }), [])
  assert.deepEqual(kernelBuildDefines({ atomicF32Lines: false }), ['-DLLCOMM_ATOMIC_F32_LINES=0'])
})

// The signature check the host asks of the kernels, from the environment as each process reads it (a child process
// per setting: the constants are fixed at import). LLCOMM_SIG_BLOCK=0 launches no signature block, so the kernels
// must then be built with the in-block check (LLCOMM_SIG_IN_BLOCKS): the default kernels without their block would
// check nothing. The default needs no -D (the cubin cache key of the default build stays the same).
test('SIGNATURE_KERNEL_BUILD: no define by default, the in-block check without the block, the deferred build on request', () => {
  const table = new URL('../../src/backends/cuda/kernel-table.js', import.meta.url).href
  const definesWith = (env: Record<string, string>): string[] => {
    const script = `const m = await import(${JSON.stringify(table)}); console.log(JSON.stringify([m.SIGNATURE_CHECK, m.kernelBuildDefines(m.SIGNATURE_KERNEL_BUILD)]))`
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], {
      env: { ...process.env, LLCOMM_SIG_BLOCK: '', LLCOMM_SIG_DEFERRED: '', ...env },
      encoding: 'utf8',
    })
    return JSON.parse(out)
  }
  assert.deepEqual(definesWith({}), ['block', []])
  assert.deepEqual(definesWith({ LLCOMM_SIG_BLOCK: '0' }), ['in-blocks', ['-DLLCOMM_SIG_IN_BLOCKS=1']])
  assert.deepEqual(definesWith({ LLCOMM_SIG_DEFERRED: '1' }), ['deferred', ['-DLLCOMM_SIG_DEFERRED=1']])
})

test('launchShape is a pure function of (variant, nranks, count, bufferBytes)', () => {
  const v = selectKernel('twoshot-sentinel', 'bf16', 'sum')
  assert.deepEqual(launchShape(v, 8, 4096), launchShape(v, 8, 4096))
  assert.ok(launchShape(v, 8, 1 << 20).blocksPerRank >= launchShape(v, 8, 1024).blocksPerRank)
})

test('LLCOMM_MAX_RANKS ranks fit in one launch (64 virtual ranks, at least one block each)', () => {
  assert.equal(maxBlocksPerRank(LLCOMM_MAX_RANKS), 2)
  for (const v of KERNEL_VARIANTS) assert.ok(launchShape(v, LLCOMM_MAX_RANKS, 4096).maxCountPerCall > 0)
})

test('the instantiation table is what the .cu files expand (one X-macro per algorithm file)', () => {
  for (const a of KERNEL_ALGORITHMS) {
    const file = `allreduce/${a.replace(/-/g, '_')}.cu`
    const text = readFileSync(join(kernelsDirectory(), file), 'utf8')
    assert.match(text, new RegExp(`#define LLCOMM_VARIANT_${a.replace(/-/g, '_')}\\(`), `${file} defines its X-macro`)
    assert.match(text, /#include "instantiations\.def"/, `${file} includes the table`)
  }
  const twoshot = readFileSync(join(kernelsDirectory(), 'allreduce/twoshot_sentinel.cu'), 'utf8')
  assert.match(
    twoshot,
    /#define LLCOMM_VARIANT_twoshot_sentinel_pull\(/,
    'twoshot_sentinel.cu defines its pull X-macro',
  )
})

test('twoshot-sentinel push or pull (twoshotAllGather): the pull from (2n - 3) * slotsPerPart >= 3072, serial path only', () => {
  assert.equal(TWOSHOT_PULL_MIN_SLOTS, 3072)
  // The launch shapes of the measured cases (bf16, default threads): parts of a launch's first channel.
  const shape = (n: number, bytes: number, buffer: number) => {
    const v = selectKernel('twoshot-sentinel', 'bf16', 'sum')
    const s = launchShape(v, n, bytes / 2, buffer)
    const count = Math.min(bytes / 2, s.maxCountPerCall)
    return { count, blocks: s.blocksPerRank, slots: twoshotPartSlots('bf16', n, count, s.blocksPerRank) }
  }
  const MB = 1 << 20
  const cases: [number, number, number, number, 'push' | 'pull'][] = [
    // ranks, bytes, buffer, slots a part, kernel
    [2, 8, MB, 1, 'push'],
    [2, 8192, MB, 128, 'push'], // 2 blocks (4096 bytes a block: TARGET_BYTES_PER_BLOCK)
    [2, 65536, MB, 128, 'push'], // 16 blocks
    [2, 262144, MB, 512, 'push'],
    [2, MB, MB, 1024, 'push'], // two launches of 512 KB
    [2, MB, 4 * MB, 2048, 'push'],
    [4, MB, MB, 512, 'push'], // 5 * 512 = 2560
    [4, MB, 4 * MB, 1024, 'pull'],
    [8, 8192, MB, 32, 'push'], // spread path, 2 blocks
    [8, 262144, MB, 128, 'push'], // spread path (4 * 128 <= 512 threads)
    [8, 393216, MB, 192, 'push'], // serial, 13 * 192 = 2496
    [8, MB, MB, 256, 'pull'], // two launches of 512 KB, 13 * 256 = 3328
    [8, MB, 4 * MB, 512, 'pull'], // one launch
  ]
  for (const [n, bytes, buffer, slots, want] of cases) {
    const s = shape(n, bytes, buffer)
    const where = `${n} ranks ${bytes} B buffer ${buffer}`
    assert.equal(s.slots, slots, `${where}: slots`)
    assert.equal(twoshotAllGather('bf16', n, s.count, s.blocks), want, where)
    assert.equal(twoshotAllGather('bf16', n, s.count, s.blocks, 'push'), 'push', `${where}, push forced`)
    assert.equal(
      twoshotAllGather('bf16', n, s.count, s.blocks, 'pull'),
      twoshotSerialPath(n, slots) ? 'pull' : 'push',
      `${where}, pull forced`,
    )
  }
  // The threshold exactly: 8 ranks 237-slot parts pull, 236 push; 4 ranks 615 / 614; 2 ranks 3072 / 3071 (one channel).
  for (const [n, slots] of [
    [8, 237],
    [4, 615],
    [2, 3072],
  ]) {
    for (const [s, want] of [
      [slots, 'pull'],
      [slots - 1, 'push'],
    ] as const) {
      const count = (s * 16 * n) / 2 // bf16, one channel
      assert.equal(twoshotPartSlots('bf16', n, count, 1), s)
      assert.equal(twoshotAllGather('bf16', n, count, 1), want, `${n} ranks ${s} slots`)
    }
  }
  // f32 and f16 count their slots from their own element size; the serial path only; never at 1 rank.
  assert.equal(twoshotPartSlots('f32', 8, 8 * 237 * 4, 1), 237)
  assert.equal(twoshotAllGather('f32', 8, 8 * 237 * 4, 1), 'pull')
  assert.equal(twoshotAllGather('f16', 8, 8 * 236 * 8, 1), 'push')
  assert.equal(twoshotSerialPath(8, 128), false)
  assert.equal(twoshotSerialPath(8, 129), true)
  assert.equal(twoshotSerialPath(7, 4), true, 'fewer than LLCOMM_SPREAD_MIN_RANKS ranks')
  assert.equal(twoshotSerialPath(64, 2), false)
  assert.equal(twoshotAllGather('bf16', 1, 1 << 20, 16, 'pull'), 'push')
  assert.equal(twoshotAllGather('bf16', 16, 16 * 128 * 8, 1), 'push', '29 * 128 >= 3072, but the spread path')
  // launchVariant: the pull sibling of the same dtype, or the variant itself; other algorithms untouched.
  for (const d of DTYPES) {
    const push = selectKernel('twoshot-sentinel', d, 'sum')
    const count = (8 * 512 * 16) / DTYPE_BYTES[d]
    const pull = launchVariant(push, 8, count, 1)
    assert.equal(pull.kernelName, `llcomm_twoshot_sentinel_pull_sentinel_${d}_sum`)
    assert.equal(pull.sourceFile, push.sourceFile)
    assert.deepEqual(launchShape(pull, 8, count), launchShape(push, 8, count), 'the same capacity and shape rules')
    assert.equal(launchVariant(push, 8, count, 1, 'push'), push)
    assert.equal(launchVariant(pull, 8, 8, 1), push, 'a pull variant asked for a push launch gives the push kernel')
    const ring = selectKernel('ring', d, 'sum')
    assert.equal(launchVariant(ring, 8, count, 1, 'pull'), ring)
  }
})

test('LLCOMM_TWOSHOT_ALLGATHER: unset or empty is auto; auto, push, pull are taken; anything else is refused', () => {
  assert.equal(parseTwoshotAllGather(undefined), 'auto')
  assert.equal(parseTwoshotAllGather(''), 'auto')
  assert.equal(parseTwoshotAllGather(' pull '), 'pull')
  for (const m of ['auto', 'push', 'pull'] as const) assert.equal(parseTwoshotAllGather(m), m)
  for (const bad of ['PULL', 'pul', '1', 'true', 'push,pull'])
    assert.throws(
      () => parseTwoshotAllGather(bad),
      (e: unknown) => (e as { code?: string }).code === 'INVALID_ARGUMENT',
      bad,
    )
})

test('LLCOMM_TARGET_BYTES_PER_BLOCK_SCALE: unset or empty is 1, a positive number is taken, anything else is refused', () => {
  assert.equal(parseTargetScale(undefined), 1)
  assert.equal(parseTargetScale(' '), 1)
  assert.equal(parseTargetScale('0.25'), 0.25)
  assert.equal(parseTargetScale('4'), 4)
  for (const bad of ['0', '-1', 'abc', 'Infinity'])
    assert.throws(
      () => parseTargetScale(bad),
      (e: unknown) => (e as { code?: string }).code === 'INVALID_ARGUMENT',
      bad,
    )
})

test('block targets: oneshot-sentinel shrinks as 2 / ranks, the others are flat; a frozen table reproduces the old shapes', () => {
  const v = (algorithm: Parameters<typeof selectKernel>[0]) => selectKernel(algorithm, 'bf16', 'sum')
  const sentinel = v('oneshot-sentinel')
  assert.deepEqual(
    [2, 4, 8, 16].map((n) => allReduceTargetBytesPerBlock(sentinel, n)),
    [2048, 1024, 512, 256].map((b) => (b * TARGET_BYTES_PER_BLOCK.sentinel) / 2048),
  )
  for (const [alg, protocol] of [
    ['twoshot-sentinel', 'sentinel'],
    ['oneshot-barrier', 'barrier'],
    ['oneshot-ll', 'll8'],
  ] as const satisfies readonly (readonly [Parameters<typeof selectKernel>[0], KernelProtocol])[]) {
    const k = v(alg)
    assert.equal(k.protocol, protocol)
    const want =
      alg === 'twoshot-sentinel' ? TARGET_BYTES_PER_BLOCK['twoshot-sentinel'] : TARGET_BYTES_PER_BLOCK[protocol]
    for (const n of [2, 8, 64]) assert.equal(allReduceTargetBytesPerBlock(k, n), want, `${alg} at ${n} ranks`)
  }
  // 8 ranks, 8 KB of bf16: 16 blocks at 512 bytes a block (capped at 128 / 8); 4 with a flat 2048
  assert.equal(launchShape(sentinel, 8, 4096).blocksPerRank, 16)
  const flat: BlockTargets = { bytesPerBlock: TARGET_BYTES_PER_BLOCK, oneshotSentinelRanks: undefined }
  assert.equal(launchShape(sentinel, 8, 4096, undefined, {}, flat).blocksPerRank, 4)
  // 16 ranks, 64 KB: twoshot-sentinel 4096 bytes a block = 16 -> the cap of 8; 16384 -> 4
  const twoshot = v('twoshot-sentinel')
  assert.equal(launchShape(twoshot, 16, 32768).blocksPerRank, 8)
  const old: BlockTargets = {
    bytesPerBlock: { ...TARGET_BYTES_PER_BLOCK, 'twoshot-sentinel': 16384 },
    oneshotSentinelRanks: undefined,
  }
  assert.equal(launchShape(twoshot, 16, 32768, undefined, {}, old).blocksPerRank, 4)
})

// LLCOMM_FUSED_SIG_IN_PROCESS (the bench's A/B of the per-process signature cluster, launched in process): on only
// when asked and only with the signature block, whose epoch word and slots the cluster uses (its kernels refuse to
// build without LLCOMM_SIG_BLOCK); off by default, so the in-process fused kernels stay those without it.
test('FUSED_SIGNATURE_IN_PROCESS: off by default, on when asked with the signature block, off without the block', () => {
  const table = new URL('../../src/backends/cuda/kernel-table.js', import.meta.url).href
  const valueWith = (env: Record<string, string>): boolean => {
    const script = `const m = await import(${JSON.stringify(table)}); console.log(JSON.stringify(m.FUSED_SIGNATURE_IN_PROCESS))`
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], {
      env: { ...process.env, LLCOMM_SIG_BLOCK: '', LLCOMM_SIG_DEFERRED: '', LLCOMM_FUSED_SIG_IN_PROCESS: '', ...env },
      encoding: 'utf8',
    })
    return JSON.parse(out)
  }
  assert.equal(valueWith({}), false)
  assert.equal(valueWith({ LLCOMM_FUSED_SIG_IN_PROCESS: '1' }), true)
  assert.equal(valueWith({ LLCOMM_FUSED_SIG_IN_PROCESS: '1', LLCOMM_SIG_BLOCK: '0' }), false)
  assert.equal(valueWith({ LLCOMM_FUSED_SIG_IN_PROCESS: '1', LLCOMM_SIG_DEFERRED: '1' }), false)
})
