/**
 * Runs the all-reduce kernels' device code on host threads (test/kernels/emulator/: every grid thread a std::thread,
 * every ptx.cuh access a std::atomic_ref access) through sequences of calls on shared buffers, with launch shapes
 * and buffer layouts from kernel-table.ts. Checks exact results (the data are exactly representable), bitwise
 * identical outputs on all ranks, in-place calls, NaN in → NaN out for user values equal to the sentinel, the
 * buffer invariants between calls (sentinel region re-armed, LL128 lines zero), channel epochs, guard bytes, and
 * that a missing rank ends every launch with a TIMEOUT naming rank, peer and epoch instead of a hang.
 * It tests the logic, not the GPU memory model (the host is x86-TSO) and not NVLink.
 */

import assert from 'node:assert/strict'
import { execFile, execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import {
  accumulationBuild,
  channelsToCheck,
  DTYPE_BYTES,
  type Dtype,
  deviceBufferLayout,
  type ErrorWordFields,
  KERNEL_VARIANTS,
  type KernelBuildOptions,
  type KernelVariant,
  kernelBuildDefines,
  kernelsDirectory,
  LLCOMM_SCRATCH_SIGNATURE_OFFSET,
  LlcommError,
  latestMismatchError,
  launchShape,
  mismatchFromWord,
  pieceElems,
  reclassifyTimeout,
  SIGNATURE_ROW_WORDS,
  settleLatestSignatures,
  signatureRowScratchOffset,
} from 'llcomm/internal'
import { SKIP_NVCC } from './toolchain.js'

const THREADS_PER_BLOCK = 32 // the kernels stride by blockDim; one warp keeps the emulated grid small
const WAIT_TIMEOUT_MS = 60_000 // generous: 2 cores serve every emulated thread; a real deadlock still ends here
const CONCURRENCY = 2
const EMU_PEER_STAGE_WORDS = 256
const EMU_SPREAD_MIN_RANKS = 2 // -DLLCOMM_SPREAD_MIN_RANKS below (the GPU build: 8)
const SPREAD_MIN_GROUPS = 4 // ll_buffer.cuh LLCOMM_SPREAD_MIN_GROUPS (the emulator build keeps it)
// LLCOMM_EMU_DEFINES: extra -D flags for the emulator build of before() (e.g. "-DLLCOMM_SIG_DEFERRED": every test
// below then runs the kernels of that A/B build).
const EMU_BUILD_DEFINES = (process.env.LLCOMM_EMU_DEFINES ?? '').split(/\s+/).filter((d) => d !== '')

interface EmuResult {
  ok: boolean
  mismatches: number
  firstMismatch: string
  crossRankDiffs: number
  nanChecked: number
  sentinelBytesNotArmed: number
  ll128BytesNotZero: number
  badEpochs: number
  guardsBroken: number
  error: ErrorWordJson
  /** The odd rank's own error word (LLCOMM_EMU_SPLIT_ERROR; all zero otherwise). */
  oddError: ErrorWordJson
  seconds: number
  /** Every rank's signature region after the run, hex u32s (LLCOMM_EMU_DUMP_SIGNATURES). */
  signatureRegions?: string[]
  /** Every rank's channel epoch words after the run (LLCOMM_EMU_DUMP_SIGNATURES). */
  epochWords?: number[][]
}

/** The error word as the harness prints it: the device struct's fields (abi.ts) and its reserved word. */
type ErrorWordJson = ErrorWordFields & { reserved: number }

let work = ''
let exe = ''
let gxx = ''

function findGxx(): string | undefined {
  for (const c of ['g++', 'c++', 'clang++']) {
    try {
      execFileSync(c, ['--version'], { stdio: 'ignore' })
      return c
    } catch {
      // try the next one
    }
  }
  return undefined
}

before(() => {
  const cxx = findGxx()
  if (!cxx) {
    if (SKIP_NVCC) return
    throw new Error('the kernel emulation test needs a C++20 host compiler (g++ >= 12 or clang++ with _Float16)')
  }
  work = mkdtempSync(join(tmpdir(), 'llcomm-emu-'))
  exe = join(work, 'emulator')
  buildEmulator(cxx, exe, EMU_BUILD_DEFINES)
})

/** Builds the emulator into `out` with extra -D flags. */
function buildEmulator(cxx: string, out: string, defines: string[]): void {
  gxx = cxx
  const emulatorDir = fileURLToPath(new URL('../../test/kernels/emulator/', import.meta.url))
  execFileSync(
    cxx,
    [
      ...defines,
      '-std=c++20',
      '-O1',
      '-pthread',
      // A small shared stage for the one-shot kernels' peer-parallel path, so that the runs below cover several
      // rank windows (and the fallback to the serial path) at small slot counts; on the GPU it is 8192 words.
      `-DLLCOMM_PEER_STAGE_WORDS=${EMU_PEER_STAGE_WORDS}`,
      // The GPU build takes the peer-parallel path from 8 ranks up; the emulator takes it from 2, so that the
      // 2- and 3-rank runs cover it too (the 8- and 64-rank runs cover the GPU's choice).
      `-DLLCOMM_SPREAD_MIN_RANKS=${EMU_SPREAD_MIN_RANKS}`,
      '-I',
      kernelsDirectory(),
      '-I',
      emulatorDir,
      join(emulatorDir, 'emulator.cpp'),
      '-o',
      out,
    ],
    { stdio: 'pipe' },
  )
}

/** An emulator build of its own, made on first use (beside before()'s) with these -D flags. */
function lazyEmulator(name: string, defines: string[]): () => string {
  let path = ''
  return () => {
    if (!path) {
      const out = join(work, name)
      buildEmulator(gxx, out, [...defines, ...EMU_BUILD_DEFINES])
      path = out
    }
    return path
  }
}
/** The deferred build (LLCOMM_SIG_DEFERRED: kernel e checks epoch e - 1; the host checks each channel's last launch). */
const deferredExe = lazyEmulator('emulator-deferred', ['-DLLCOMM_SIG_DEFERRED'])
/** The signature-block build (LLCOMM_SIG_BLOCK; emulator.cpp launches the extra block). */
const sigBlockExe = lazyEmulator('emulator-sig-block', ['-DLLCOMM_SIG_BLOCK'])
/** The in-block check's build (LLCOMM_SIG_IN_BLOCKS), named so that its tests keep it whichever is the default. */
const inBlocksExe = lazyEmulator('emulator-in-blocks', ['-DLLCOMM_SIG_IN_BLOCKS'])
after(() => {
  if (work) rmSync(work, { recursive: true, force: true })
})

interface Case {
  v: KernelVariant
  nranks: number
  bufferBytes: number
  /**
   * Element counts per call ('max' = launchShape's maxCountPerCall); suffix ':inplace' for input == output (':copy'
   * for separate buffers), then optionally ':KERNEL' (a kernel name of the same dtype): that call runs KERNEL on the
   * same buffers, scratch and epochs (algorithms interleaved on one communicator). 'empty': a call of no elements as
   * the per-process host launches it (AllReduceLauncher.prepareEmpty: no data block, the signature block alone).
   */
  calls: string[]
  absentRank?: number
  timeoutMs?: number
  /** Every channel's epoch word starts here (LLCOMM_EMU_STORED_EPOCH), e.g. just below the u32 wrap. */
  storedEpoch?: number
  /**
   * A mismatched call: this rank runs `odd.v` on `odd.count` elements in its own launch (LLCOMM_EMU_ODD), at call
   * `odd.call` (default 0; the calls before it run on every rank), `odd.delayMs` after the others' launch.
   */
  odd?: { rank: number; v: KernelVariant; count: number; call?: number; delayMs?: number; blocks?: number }
  /** Print every rank's signature region after the run (LLCOMM_EMU_DUMP_SIGNATURES). */
  dumpSignatures?: boolean
  /** The odd rank gets an error word of its own (LLCOMM_EMU_SPLIT_ERROR): two processes, one word each. */
  splitError?: boolean
  /** The calls after the odd one run too (LLCOMM_EMU_ODD_CONTINUE; their results are not checked). */
  oddContinue?: boolean
  /** The f32-accumulation inputs (LLCOMM_EMU_VALUES=accumulation). */
  accumulation?: boolean
  /** Run this emulator build (default: the one of before()), and size the calls for its kernel switches. */
  exe?: string
  build?: KernelBuildOptions
}

function argsOf(c: Case): string[] {
  const L = deviceBufferLayout(c.nranks, c.bufferBytes)
  const calls = c.calls.map((s) => {
    if (s === 'empty') return '0:0'
    const [countText, mode, kernelName] = s.split(':')
    const v = kernelName ? KERNEL_VARIANTS.find((x) => x.kernelName === kernelName) : c.v
    assert.ok(v, kernelName)
    const max = launchShape(v, c.nranks, 1, c.bufferBytes, c.build).maxCountPerCall
    // The host chunks at maxCountPerCall; the emulator runs single launches, so counts above it are clamped.
    const count = countText === 'max' ? max : Math.min(max, Number(countText))
    const { blocksPerRank } = launchShape(v, c.nranks, count, c.bufferBytes, c.build)
    return `${count}:${blocksPerRank}${mode ? `:${mode}` : ''}${kernelName ? `:${kernelName}` : ''}`
  })
  return [
    c.v.kernelName,
    String(c.nranks),
    String(THREADS_PER_BLOCK),
    String(c.timeoutMs ?? WAIT_TIMEOUT_MS),
    String(c.absentRank ?? -1),
    String(L.recvBufBytes),
    ...[L.ll, L.sentinel, L.ll128, L.plain].flatMap((r) => [String(r.offset), String(r.channelHalfBytes)]),
    ...calls,
  ]
}

function runCase(c: Case): Promise<EmuResult> {
  return new Promise((resolve, reject) => {
    const env: NodeJS.ProcessEnv = { ...process.env }
    if (c.storedEpoch !== undefined) env.LLCOMM_EMU_STORED_EPOCH = String(c.storedEpoch)
    if (c.accumulation) env.LLCOMM_EMU_VALUES = 'accumulation'
    if (c.odd) {
      const blocksPerRank = c.odd.blocks ?? launchShape(c.odd.v, c.nranks, c.odd.count, c.bufferBytes).blocksPerRank
      env.LLCOMM_EMU_ODD = `${c.odd.rank}:${c.odd.v.kernelName}:${c.odd.count}:${blocksPerRank}:${c.odd.call ?? 0}`
      if (c.odd.delayMs) env.LLCOMM_EMU_ODD_DELAY_MS = String(c.odd.delayMs)
      if (c.splitError) env.LLCOMM_EMU_SPLIT_ERROR = '1'
      if (c.oddContinue) env.LLCOMM_EMU_ODD_CONTINUE = '1'
    }
    if (c.dumpSignatures) env.LLCOMM_EMU_DUMP_SIGNATURES = '1'
    execFile(c.exe ?? exe, argsOf(c), { timeout: 300_000, maxBuffer: 1 << 22, env }, (err, stdout, stderr) => {
      if (err) return reject(new Error(`emulator ${argsOf(c).join(' ')} failed: ${err.message}\n${stderr}`))
      resolve(JSON.parse(stdout) as EmuResult)
    })
  })
}

async function runAll(cases: Case[]): Promise<{ c: Case; r: EmuResult }[]> {
  const out: { c: Case; r: EmuResult }[] = []
  let next = 0
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < cases.length) {
        const c = cases[next++]
        out.push({ c, r: await runCase(c) })
      }
    }),
  )
  return out
}

const label = (c: Case) =>
  `${c.v.kernelName} nranks=${c.nranks} bufferBytes=${c.bufferBytes} calls=${c.calls.join(',')}`
const oneDtypeEach = (dtype: (i: number) => Dtype) =>
  [...new Set(KERNEL_VARIANTS.map((v) => `${v.algorithm}/${v.protocol}`))].map((key, i) => {
    const v = KERNEL_VARIANTS.find((x) => `${x.algorithm}/${x.protocol}` === key && x.dtype === dtype(i))
    assert.ok(v, key)
    return v
  })

test('every kernel: exact, identical on all ranks, invariants kept across a sequence of calls', async (t) => {
  if (!exe) return t.skip('no host C++ compiler and LLCOMM_SKIP_NVCC=1')
  const cases: Case[] = []
  for (const v of KERNEL_VARIANTS)
    cases.push({ v, nranks: 3, bufferBytes: 16384, calls: ['max', '1', '37:inplace', '5', 'max', '100'] })
  // Other rank counts and buffer sizes, once per algorithm and protocol, rotating dtypes.
  for (const v of oneDtypeEach((i) => (['f32', 'bf16', 'f16'] as const)[i % 3])) {
    cases.push({ v, nranks: 2, bufferBytes: 40000, calls: ['max', '3', 'max:inplace'] })
    cases.push({ v, nranks: 8, bufferBytes: 65536, calls: ['1000', '8', '333:inplace'] })
  }
  for (const v of oneDtypeEach((i) => (['bf16', 'f16', 'f32'] as const)[i % 3]))
    cases.push({ v, nranks: 5, bufferBytes: 65536, calls: ['4099', '2'] })
  // The one-shot kernels' peer-parallel path (fewer slots than threads): (slot, peer) pairs spread over the block,
  // staged in shared memory in windows of ranks, reduced in rank order. With 32 threads and a 256-word stage these
  // counts give 1 to 31 slots per block with 2 to 32 thread groups, one window or several (f32 sentinel at 56
  // elements: 14 slots x 4 words, 4 ranks per window), and, above 31 slots (LL8 at 70), the serial path.
  for (const v of KERNEL_VARIANTS.filter((x) => x.algorithm === 'oneshot-ll' || x.algorithm === 'oneshot-sentinel'))
    for (const nranks of [2, 3, 8])
      cases.push({ v, nranks, bufferBytes: 65536, calls: ['1', '8', '24:inplace', '3', '56', '70'] })
  // 64 ranks (2048 emulated threads per launch, ~10 s each): once per protocol.
  for (const name of [
    'llcomm_oneshot_ll_ll8_bf16_sum',
    'llcomm_oneshot_ll_ll16_f16_sum',
    'llcomm_oneshot_sentinel_sentinel_f32_sum',
  ]) {
    const v = KERNEL_VARIANTS.find((x) => x.kernelName === name)
    assert.ok(v, name)
    cases.push({ v, nranks: 64, bufferBytes: 65536, calls: ['1', '24:inplace', '56'] })
  }
  const started = Date.now()
  const results = await runAll(cases)
  t.diagnostic(`${cases.length} emulated runs in ${((Date.now() - started) / 1000).toFixed(1)} s`)
  for (const { c, r } of results) {
    assert.equal(r.error.code, 0, `${label(c)}: a wait timed out: ${JSON.stringify(r.error)}`)
    assert.equal(r.mismatches, 0, `${label(c)}: ${r.mismatches} wrong elements, first: ${r.firstMismatch}`)
    assert.equal(r.crossRankDiffs, 0, `${label(c)}: ranks disagree bitwise`)
    assert.ok(r.nanChecked > 0, `${label(c)}: the sentinel-as-data probe did not run`)
    assert.equal(r.sentinelBytesNotArmed, 0, `${label(c)}: sentinel slots left unarmed after the calls`)
    assert.equal(r.ll128BytesNotZero, 0, `${label(c)}: LL128 lines left non-zero after the calls`)
    assert.equal(r.badEpochs, 0, `${label(c)}: channel epochs do not count the calls`)
    assert.equal(r.guardsBroken, 0, `${label(c)}: a kernel wrote past a buffer`)
    assert.ok(r.ok, label(c))
  }
})

test('algorithms interleaved on one communicator: the regions each leaves behind do not disturb the others', async (t) => {
  if (!exe) return t.skip('no host C++ compiler and LLCOMM_SKIP_NVCC=1')
  // twoshot-sentinel (spread and serial paths) between oneshot-sentinel (the sentinel region in another lane
  // layout), oneshot-barrier (its own plain region) and ring (the next rank's plain region), both epoch parities;
  // and its pull kernel (the host's choice per launch: kernel-table.ts launchVariant; named here), which publishes in
  // its own plain region and leaves the all-gather lanes to the push kernel's calls around it.
  const cases: Case[] = []
  for (const [dtype, nranks, bufferBytes, big] of [
    ['bf16', 8, 1 << 20, 8192],
    ['f32', 8, 1 << 20, 20000],
    ['f16', 3, 16384, 3840],
  ] as const) {
    const of = (alg: string) => `llcomm_${alg}_${dtype}_sum`
    const v = KERNEL_VARIANTS.find((x) => x.kernelName === of('twoshot_sentinel_sentinel'))
    assert.ok(v, dtype)
    const [ring, ob, os] = [of('ring_flags'), of('oneshot_barrier_barrier'), of('oneshot_sentinel_sentinel')]
    const pull = of('twoshot_sentinel_pull_sentinel')
    cases.push({
      v,
      nranks,
      bufferBytes,
      calls: [
        `${big}`,
        `${big}:copy:${ring}`,
        `${big}:inplace`,
        `${big}:copy:${ob}`,
        `${big}:copy:${ring}`,
        `${big}`,
        `1000:copy:${os}`,
        '120:inplace',
        `${big}:copy:${ob}`,
        `${big}`,
        `${big}:inplace:${ring}`,
        `${big}:copy:${os}`,
        `${big}:inplace`,
        // The pull kernel among them: after a push call and before one (both parities), after ring and
        // oneshot-barrier wrote the plain region and before they write it again, in place and not.
        `${big}:copy:${pull}`,
        `${big}:inplace`,
        `${big}:inplace:${pull}`,
        `${big}:copy:${ob}`,
        `${big}:copy:${pull}`,
        `${big}:copy:${ring}`,
        `${big}:copy:${pull}`,
        `${big}:copy:${pull}`,
        `1000:copy:${os}`,
        `${big}:inplace:${pull}`,
        `${big}`,
      ],
    })
  }
  for (const { c, r } of await runAll(cases)) {
    assert.equal(r.error.code, 0, `${label(c)}: ${JSON.stringify(r.error)}`)
    assert.equal(r.mismatches, 0, `${label(c)}: ${r.mismatches} wrong elements, first: ${r.firstMismatch}`)
    assert.equal(r.crossRankDiffs, 0, `${label(c)}: ranks disagree bitwise`)
    assert.equal(r.sentinelBytesNotArmed, 0, `${label(c)}: sentinel slots left unarmed after the calls`)
    assert.equal(r.badEpochs, 0, `${label(c)}: channel epochs do not count the calls`)
    assert.equal(r.guardsBroken, 0, `${label(c)}: a kernel wrote past a buffer`)
    assert.ok(r.ok, label(c))
  }
})

test('a rank that never arrives: every launch ends, with a TIMEOUT that names a waiting rank, its peer and the epoch', async (t) => {
  if (!exe) return t.skip('no host C++ compiler and LLCOMM_SKIP_NVCC=1')
  const cases: Case[] = oneDtypeEach((i) => (['bf16', 'f32'] as const)[i % 2]).map((v) => ({
    v,
    nranks: 3,
    bufferBytes: 16384,
    calls: ['max'],
    absentRank: 1,
    timeoutMs: 300,
  }))
  // The peer-parallel path of the one-shot kernels (one slot per block).
  for (const v of oneDtypeEach(() => 'bf16').filter(
    (x) => x.algorithm.startsWith('oneshot-') && x.protocol !== 'barrier',
  ))
    cases.push({ v, nranks: 3, bufferBytes: 16384, calls: ['1'], absentRank: 1, timeoutMs: 300 })
  for (const { c, r } of await runAll(cases)) {
    assert.equal(r.error.code, 1, `${label(c)}: no TIMEOUT recorded`)
    assert.notEqual(r.error.rank, 1, `${label(c)}: the absent rank cannot be the waiter`)
    assert.equal(r.error.epoch, 1, `${label(c)}: epoch of the first call`)
    // 1..5: a data wait; 7: the call-signature check (signature.cuh), which waits for the absent rank as well.
    assert.ok((r.error.what >= 1 && r.error.what <= 5) || r.error.what === 7, `${label(c)}: wait kind ${r.error.what}`)
    if (c.v.algorithm !== 'twoshot-atomic' && c.v.algorithm !== 'ring')
      assert.equal(r.error.peer, 1, `${label(c)}: the peer waited for`)
  }
})

test('channel epochs across the u32 wrap: every kernel exact, epoch 0 (the zero fill) never reused', async (t) => {
  if (!exe) return t.skip('no host C++ compiler and LLCOMM_SKIP_NVCC=1')
  // Stored 0xFFFFFFFE: the first call runs at 0xFFFFFFFF (half 1), the second wraps into half 0, which no call has
  // written yet on any channel: its LL slots and scratch flags still hold the zero fill.
  const cases: Case[] = oneDtypeEach((i) => (['bf16', 'f32'] as const)[i % 2]).map((v) => ({
    v,
    nranks: 3,
    bufferBytes: 16384,
    calls: ['7', 'max', '33', 'max', '1', 'max'],
    storedEpoch: 0xfffffffe,
  }))
  for (const { c, r } of await runAll(cases)) {
    assert.equal(r.error.code, 0, `${label(c)}: a wait timed out: ${JSON.stringify(r.error)}`)
    assert.equal(r.mismatches, 0, `${label(c)}: ${r.mismatches} wrong elements, first: ${r.firstMismatch}`)
    assert.equal(r.crossRankDiffs, 0, `${label(c)}: ranks disagree bitwise`)
    assert.equal(r.badEpochs, 0, `${label(c)}: channel epochs do not count the calls across the wrap`)
    assert.ok(r.ok, label(c))
  }
})

interface MismatchPair {
  main: string
  count: number
  odd: string
  oddCount: number
  nranks: number
}
/** Mismatched calls (the odd rank runs `odd` x `oddCount`): another count, dtype of equal bytes, algorithm, protocol. */
const MISMATCH_PAIRS: MismatchPair[] = [
  {
    main: 'llcomm_oneshot_ll_ll8_f32_sum',
    count: 1000,
    odd: 'llcomm_oneshot_ll_ll8_f32_sum',
    oddCount: 1001,
    nranks: 3,
  },
  {
    main: 'llcomm_oneshot_sentinel_sentinel_f32_sum',
    count: 1000,
    odd: 'llcomm_oneshot_sentinel_sentinel_bf16_sum',
    oddCount: 2000,
    nranks: 4,
  },
  {
    main: 'llcomm_oneshot_sentinel_sentinel_f32_sum',
    count: 600,
    odd: 'llcomm_twoshot_sentinel_sentinel_f32_sum',
    oddCount: 600,
    nranks: 3,
  },
  {
    main: 'llcomm_oneshot_ll_ll16_bf16_sum',
    count: 300,
    odd: 'llcomm_ring_flags_bf16_sum',
    oddCount: 300,
    nranks: 2,
  },
  {
    main: 'llcomm_oneshot_barrier_barrier_f32_sum',
    count: 64,
    odd: 'llcomm_twoshot_atomic_ll128_f32_sum',
    oddCount: 64,
    nranks: 3,
  },
  { main: 'llcomm_oneshot_ll_ll16_f32_sum', count: 8, odd: 'llcomm_oneshot_ll_ll8_f32_sum', oddCount: 8, nranks: 8 },
]
/**
 * Mismatched calls for an error word per side (per-process mode): the tail check's kernels (oneshot-ll's serial path,
 * twoshot-sentinel), one pair with equal bytes (the data arrives; only the check sees it).
 */
const SPLIT_WORD_PAIRS: MismatchPair[] = [
  {
    main: 'llcomm_oneshot_ll_ll8_f32_sum',
    count: 1000,
    odd: 'llcomm_oneshot_ll_ll8_f32_sum',
    oddCount: 1001,
    nranks: 3,
  },
  {
    main: 'llcomm_twoshot_sentinel_sentinel_bf16_sum',
    count: 600,
    odd: 'llcomm_twoshot_sentinel_sentinel_f32_sum',
    oddCount: 300,
    nranks: 3,
  },
  {
    main: 'llcomm_twoshot_sentinel_sentinel_f32_sum',
    count: 600,
    odd: 'llcomm_oneshot_sentinel_sentinel_f32_sum',
    oddCount: 600,
    nranks: 3,
  },
  {
    main: 'llcomm_oneshot_ll_ll16_bf16_sum',
    count: 300,
    odd: 'llcomm_twoshot_sentinel_sentinel_bf16_sum',
    oddCount: 300,
    nranks: 2,
  },
]
/** One emulated run per pair: one call, the odd rank last, in its own launch. */
function mismatchCases(pairs: MismatchPair[], more: Partial<Case> = {}): Case[] {
  return pairs.map((q) => ({
    v: kernelNamed(q.main),
    nranks: q.nranks,
    bufferBytes: 65536,
    calls: [String(q.count)],
    timeoutMs: 20_000,
    odd: { rank: q.nranks - 1, v: kernelNamed(q.odd), count: q.oddCount },
    ...more,
  }))
}
/** The error word names a MISMATCH between the odd rank and another, with both signatures' algorithm and count. */
function assertMismatchNamed(c: Case, r: EmuResult): void {
  const what = `${label(c)} against ${c.odd?.v.kernelName} ${c.odd?.count}`
  assert.equal(r.error.code, 2, `${what}: ${JSON.stringify(r.error)}`)
  const odd = c.odd?.rank ?? -1
  assert.notEqual(r.error.rank, r.error.peer)
  assert.equal(r.error.epoch, 1)
  const e = mismatchFromWord(wordsOf(r.error))
  assert.equal(e.code, 'MISMATCH')
  const oddSide = r.error.rank === odd ? String(e.details.mine) : String(e.details.theirs)
  const mainSide = r.error.rank === odd ? String(e.details.theirs) : String(e.details.mine)
  const [mainAlg, oddAlg] = [c.v.algorithm, c.odd?.v.algorithm ?? '']
  assert.ok(mainSide.startsWith(mainAlg), `${what}: ${mainSide} is ${mainAlg}`)
  assert.ok(oddSide.startsWith(oddAlg), `${what}: ${oddSide} is ${oddAlg}`)
  assert.ok(mainSide.includes(`× ${c.calls[0]} `), `${what}: ${mainSide}: count ${c.calls[0]}`)
  assert.ok(oddSide.includes(`× ${c.odd?.count} `), `${what}: ${oddSide}: count ${c.odd?.count}`)
}

test('a mismatched call (another algorithm, dtype, count): every launch ends with MISMATCH naming both signatures', async (t) => {
  if (!exe) return t.skip('no host C++ compiler and LLCOMM_SKIP_NVCC=1')
  for (const { c, r } of await runAll(mismatchCases(MISMATCH_PAIRS))) {
    assertMismatchNamed(c, r)
    const odd = c.odd?.rank ?? -1
    assert.ok(r.error.rank === odd || r.error.peer === odd, `${label(c)}: the pair names the odd rank`)
    // Found before the deadline: the error word keeps its first writer, and a wait at its deadline would have
    // written TIMEOUT first (no wall-clock bound: the emulator's time on loaded CI cores varies too much).
  }
})

test('per-process error words: a mismatched call ends with MISMATCH in both words (the odd rank alone, the others)', async (t) => {
  if (!exe) return t.skip('no host C++ compiler and LLCOMM_SKIP_NVCC=1')
  // The odd rank's launch records into an error word of its own, as in per-process mode: its check, or its armed
  // waits, must end its launch with MISMATCH by themselves, and so must the others' (no shared word ends one side's
  // waits for the other). The pairs: SPLIT_WORD_PAIRS.
  for (const { c, r } of await runAll(mismatchCases(SPLIT_WORD_PAIRS, { splitError: true }))) {
    const what = `${label(c)} against ${c.odd?.v.kernelName} ${c.odd?.count}`
    assert.equal(r.error.code, 2, `${what}, the others' word: ${JSON.stringify(r.error)}`)
    assert.equal(r.oddError.code, 2, `${what}, the odd rank's word: ${JSON.stringify(r.oddError)}`)
    assert.equal(r.oddError.rank, c.odd?.rank, `${what}: the odd rank's word is recorded by the odd rank`)
    assert.notEqual(r.error.rank, c.odd?.rank, `${what}: the others' word is recorded by one of them`)
    // Found before the deadline: the error word keeps its first writer, and a wait at its deadline would have
    // written TIMEOUT first (no wall-clock bound: the emulator's time on loaded CI cores varies too much).
  }
})

/**
 * Whether twoshot-sentinel's first channel takes its spread path in the emulator build (twoshot_sentinel.cu:
 * LlBuffer::spreadGroups of a part's slots > 1, with the emulator's block, stage and LLCOMM_SPREAD_MIN_RANKS).
 */
function twoshotSpreadPath(v: KernelVariant, nranks: number, count: number, bufferBytes: number): boolean {
  const eb = DTYPE_BYTES[v.dtype]
  const { blocksPerRank } = launchShape(v, nranks, count, bufferBytes)
  const channelElems = Math.min(count, pieceElems(count, blocksPerRank, 16 / eb))
  const slots = Math.ceil((pieceElems(channelElems, nranks, 16 / eb) * eb) / 16)
  if (nranks < EMU_SPREAD_MIN_RANKS || slots >= THREADS_PER_BLOCK || slots * 4 > EMU_PEER_STAGE_WORDS) return false
  return Math.min(Math.floor(THREADS_PER_BLOCK / slots), nranks) >= SPREAD_MIN_GROUPS
}

test('twoshot-sentinel, spread and serial paths: exact, identical, re-armed; an absent rank ends in TIMEOUT, a mismatched call in MISMATCH in both error words', async (t) => {
  if (!exe) return t.skip('no host C++ compiler and LLCOMM_SKIP_NVCC=1')
  const twoshot = (dtype: Dtype): KernelVariant => {
    const v = KERNEL_VARIANTS.find((x) => x.algorithm === 'twoshot-sentinel' && x.dtype === dtype)
    assert.ok(v, dtype)
    return v
  }
  const kernel = (name: string): KernelVariant => {
    const v = KERNEL_VARIANTS.find((x) => x.kernelName === name)
    assert.ok(v, name)
    return v
  }
  // With 32 threads a block the spread path takes parts of at most 8 slots (128 B) from 4 ranks; these sequences mix
  // it with the serial path on the same buffers. 8 ranks: 1 to 7 peers a thread, owners without data ('8'); 16 ranks
  // at 8 slots a part: 4 peers a thread (a full batch) and two rank windows in the owner's reduce; 20 ranks: two
  // batches a thread, three windows. 3 ranks: the serial path only. From 16 ranks a larger buffer, so that a channel
  // can hold parts of more than 8 slots (the serial path).
  const seq: Record<Dtype, Record<number, string[]>> = {
    bf16: {
      3: ['max', '37:inplace', '200'],
      8: ['8', '120', '512:inplace', '1000', '333:inplace', '512'],
      16: ['16', '1024:inplace', '4099', '1024', '200:inplace'],
      20: ['1280:inplace', '1280'],
    },
    f16: { 3: ['100:inplace', 'max'], 8: ['512', '2000:inplace', '40:inplace'], 16: ['1024', '333'] },
    f32: { 3: ['max', '5:inplace'], 8: ['60', '256:inplace', '300', '4'], 16: ['512:inplace', '2000'] },
  }
  const bufferOf = (nranks: number) => (nranks >= 16 ? 262144 : 65536)
  const exact: Case[] = []
  for (const [dtype, byRanks] of Object.entries(seq) as [Dtype, Record<number, string[]>][])
    for (const [nranks, calls] of Object.entries(byRanks))
      exact.push({ v: twoshot(dtype), nranks: Number(nranks), bufferBytes: bufferOf(Number(nranks)), calls })
  // The sequences cover both paths (the spread path at 8, 16 and 20 ranks), so a broken spread path fails here.
  const paths = exact.flatMap((c) =>
    c.calls.map((s) => {
      const [countText] = s.split(':')
      const max = launchShape(c.v, c.nranks, 1, c.bufferBytes).maxCountPerCall
      const count = countText === 'max' ? max : Math.min(max, Number(countText))
      return { nranks: c.nranks, spread: twoshotSpreadPath(c.v, c.nranks, count, c.bufferBytes) }
    }),
  )
  for (const nranks of [8, 16, 20])
    assert.ok(
      paths.some((x) => x.nranks === nranks && x.spread),
      `no spread call at ${nranks} ranks`,
    )
  for (const nranks of [3, 8, 16])
    assert.ok(
      paths.some((x) => x.nranks === nranks && !x.spread),
      `no serial call at ${nranks} ranks`,
    )
  // A rank that never arrives, on either path.
  const absent: Case[] = [
    { v: twoshot('bf16'), nranks: 3, calls: ['max'] },
    { v: twoshot('bf16'), nranks: 8, calls: ['120'] },
    { v: twoshot('f32'), nranks: 16, calls: ['512'] },
    // 1024, not an uneven count: with uneven parts a short (or empty) own part leaves threads with no reduce-scatter
    // slot, which start their all-gather wait on owner me + 1 at once, beside the reduce-scatter waits on the absent
    // rank; whichever deadline the emulator's scheduler ends first names the peer (CI once saw rank 0 named at 1000
    // elements: a true wait, on an owner stuck on rank 1, but not the peer this test pins). Uneven counts are in the
    // exact runs above.
    { v: twoshot('f16'), nranks: 8, calls: ['1024'] },
  ].map((c) => ({ ...c, bufferBytes: bufferOf(c.nranks), absentRank: 1, timeoutMs: 300 }))
  for (const c of absent)
    assert.equal(
      twoshotSpreadPath(c.v, c.nranks, Number(c.calls[0]) || 1, c.bufferBytes),
      c.calls[0] === '120' || c.calls[0] === '512',
      `${label(c)}: path`,
    )
  // A mismatched call, with an error word per side (per-process mode: each side must end by itself). Against
  // oneshot-ll the odd rank writes nothing into the sentinel lanes: the spread path's reduce-scatter waits for it end
  // only because they are armed (with LLCOMM_SIG_NO_ARM they end in TIMEOUT).
  const pairs: { main: string; count: number; odd: string; oddCount: number; nranks: number }[] = [
    {
      main: 'llcomm_twoshot_sentinel_sentinel_bf16_sum',
      count: 240,
      odd: 'llcomm_twoshot_sentinel_sentinel_bf16_sum',
      oddCount: 248,
      nranks: 8,
    },
    {
      main: 'llcomm_twoshot_sentinel_sentinel_f32_sum',
      count: 120,
      odd: 'llcomm_twoshot_sentinel_sentinel_bf16_sum',
      oddCount: 240,
      nranks: 8,
    },
    {
      main: 'llcomm_twoshot_sentinel_sentinel_bf16_sum',
      count: 240,
      odd: 'llcomm_oneshot_sentinel_sentinel_bf16_sum',
      oddCount: 240,
      nranks: 8,
    },
    {
      main: 'llcomm_twoshot_sentinel_sentinel_bf16_sum',
      count: 240,
      odd: 'llcomm_oneshot_ll_ll8_bf16_sum',
      oddCount: 240,
      nranks: 8,
    },
    {
      main: 'llcomm_twoshot_sentinel_sentinel_bf16_sum',
      count: 240,
      odd: 'llcomm_twoshot_sentinel_sentinel_bf16_sum',
      oddCount: 1000,
      nranks: 8,
    },
    {
      main: 'llcomm_twoshot_sentinel_sentinel_f16_sum',
      count: 1024,
      odd: 'llcomm_twoshot_atomic_ll128_f16_sum',
      oddCount: 1024,
      nranks: 16,
    },
  ]
  const mismatched: Case[] = pairs.map((q) => ({
    v: kernel(q.main),
    nranks: q.nranks,
    bufferBytes: bufferOf(q.nranks),
    calls: [String(q.count)],
    timeoutMs: 20_000,
    odd: { rank: q.nranks - 1, v: kernel(q.odd), count: q.oddCount },
    splitError: true,
  }))
  for (const c of mismatched)
    assert.ok(twoshotSpreadPath(c.v, c.nranks, Number(c.calls[0]), c.bufferBytes), `${label(c)}: spread path`)
  const started = Date.now()
  const results = await runAll([...exact, ...absent, ...mismatched])
  t.diagnostic(`${results.length} emulated runs in ${((Date.now() - started) / 1000).toFixed(1)} s`)
  for (const { c, r } of results) {
    if (c.absentRank !== undefined) {
      assert.equal(r.error.code, 1, `${label(c)}: no TIMEOUT recorded: ${JSON.stringify(r.error)}`)
      assert.notEqual(r.error.rank, 1, `${label(c)}: the absent rank cannot be the waiter`)
      assert.equal(r.error.peer, 1, `${label(c)}: the peer waited for`)
      assert.equal(r.error.epoch, 1, `${label(c)}: epoch of the first call`)
    } else if (c.odd) {
      const what = `${label(c)} against ${c.odd.v.kernelName} ${c.odd.count}`
      assert.equal(r.error.code, 2, `${what}, the others' word: ${JSON.stringify(r.error)}`)
      assert.equal(r.oddError.code, 2, `${what}, the odd rank's word: ${JSON.stringify(r.oddError)}`)
      assert.equal(r.oddError.rank, c.odd.rank, `${what}: the odd rank's word is recorded by the odd rank`)
      assert.notEqual(r.error.rank, c.odd.rank, `${what}: the others' word is recorded by one of them`)
      // Found before the deadline: the error word keeps its first writer, and a wait at its deadline would have
      // written TIMEOUT first (no wall-clock bound: the emulator's time on loaded CI cores varies too much).
    } else {
      assert.equal(r.error.code, 0, `${label(c)}: a wait timed out: ${JSON.stringify(r.error)}`)
      assert.equal(r.mismatches, 0, `${label(c)}: ${r.mismatches} wrong elements, first: ${r.firstMismatch}`)
      assert.equal(r.crossRankDiffs, 0, `${label(c)}: ranks disagree bitwise`)
      assert.ok(r.nanChecked > 0, `${label(c)}: the sentinel-as-data probe did not run`)
      assert.equal(r.sentinelBytesNotArmed, 0, `${label(c)}: sentinel slots left unarmed after the calls`)
      assert.equal(r.badEpochs, 0, `${label(c)}: channel epochs do not count the calls`)
      assert.equal(r.guardsBroken, 0, `${label(c)}: a kernel wrote past a buffer`)
      assert.ok(r.ok, label(c))
    }
  }
})

/** twoshot-sentinel's push or pull kernel of a dtype (KernelVariant.allGather). */
function twoshotKernel(dtype: Dtype, allGather: 'push' | 'pull'): KernelVariant {
  const v = KERNEL_VARIANTS.find(
    (x) => x.algorithm === 'twoshot-sentinel' && x.dtype === dtype && x.allGather === allGather,
  )
  assert.ok(v, `${allGather} ${dtype}`)
  return v
}

test("twoshot-sentinel's pull kernel: exact on its serial path, alone and after push calls, across the epoch wrap; an absent rank ends in TIMEOUT; push against pull ends in MISMATCH (another count) or TIMEOUT (the same call), never a hang", async (t) => {
  if (!exe) return t.skip('no host C++ compiler and LLCOMM_SKIP_NVCC=1')
  // The host picks the pull kernel per launch (kernel-table.ts twoshotAllGather: at 512 threads, 8 ranks from
  // 237-slot parts); the emulator runs 32-thread blocks, where parts of more than 8 slots take the serial path, so the
  // cases name the pull kernel directly. 2 and 3 ranks: the serial path at every count; 8 ranks, 64 KB buffer: 16 to
  // 128-slot parts, 1 to 8 channels (owners without data at '8' and '40': the last parts of a short channel); 8 ranks
  // at '8' and 5 ranks at '2': 1-slot parts, which the push kernel spreads at 8 ranks and the pull kernel, which has
  // no spread path, takes serially.
  const seq: Record<Dtype, Record<number, string[]>> = {
    bf16: {
      2: ['max', '3', 'max:inplace', '1000'],
      3: ['max', '37:inplace', '200', 'max:inplace'],
      8: ['1000', '8', '8192:inplace', '4098', '40', 'max', '3002:inplace'],
    },
    f16: { 3: ['100:inplace', 'max', '1'], 5: ['4099', '2', '777:inplace'], 8: ['2000:inplace', '8192'] },
    f32: { 2: ['max:inplace', '5'], 3: ['max', '5:inplace'], 8: ['1000', '4096:inplace', '300', 'max'] },
  }
  const bufferOf = (nranks: number) => (nranks >= 8 ? 65536 : 16384)
  const cases: Case[] = []
  for (const [dtype, byRanks] of Object.entries(seq) as [Dtype, Record<number, string[]>][])
    for (const [nranks, calls] of Object.entries(byRanks))
      cases.push({
        v: twoshotKernel(dtype, 'pull'),
        nranks: Number(nranks),
        bufferBytes: bufferOf(Number(nranks)),
        calls,
      })
  // Push and pull calls alternating on one communicator (the choice flips with the count from launch to launch), both
  // parities, in place and not; a push call after pull calls finds its all-gather lanes armed.
  for (const dtype of ['bf16', 'f32'] as const) {
    const pull = twoshotKernel(dtype, 'pull').kernelName
    cases.push({
      v: twoshotKernel(dtype, 'push'),
      nranks: 8,
      bufferBytes: 65536,
      calls: [
        '4096',
        `4096:copy:${pull}`,
        '4096:inplace',
        `4096:inplace:${pull}`,
        `1000:copy:${pull}`,
        '1000',
        `max:copy:${pull}`,
        `max:copy:${pull}`,
        'max',
        '8',
        `8:inplace:${pull}`,
        '4096',
      ],
    })
  }
  // Across the u32 epoch wrap: the flags' zero fill (half 0 of a fresh channel) never matches, epoch 0 never used.
  for (const dtype of ['bf16', 'f32'] as const)
    cases.push({
      v: twoshotKernel(dtype, 'pull'),
      nranks: 3,
      bufferBytes: 16384,
      calls: ['7', 'max', '33', 'max', '1', 'max'],
      storedEpoch: 0xfffffffe,
    })
  const exact = cases.length
  // A rank that never arrives: TIMEOUT on a rank waiting for it (the reduce-scatter's slots or its publish flag).
  for (const [dtype, nranks, calls] of [
    ['bf16', 3, ['max']],
    ['f32', 8, ['4096']],
    ['f16', 2, ['max']],
  ] as const)
    cases.push({
      v: twoshotKernel(dtype, 'pull'),
      nranks,
      bufferBytes: bufferOf(nranks),
      calls: [...calls],
      absentRank: 1,
      timeoutMs: 300,
    })
  const absent = cases.length
  // Push against pull (rank 7 runs the other kernel): another count at one rank, which at the GPU's gate can put the
  // two kernels on the two sides of a call (e.g. 8 ranks 1 MB pulls, a 384 KB call pushes): MISMATCH, found by the
  // signature check (shared word: names the odd rank and both signatures). The same call with the other kernel at
  // one rank (an LLCOMM_TWOSHOT_ALLGATHER that differs between ranks; per-process mode refuses that at the
  // rendezvous): the signatures agree, so nothing sees a mismatch, and the all-gathers wait for what the other kernel
  // never sends: TIMEOUT at the deadline, not a hang.
  const pairs: { dtype: Dtype; main: 'push' | 'pull'; count: number; oddCount: number; code: number }[] = [
    { dtype: 'bf16', main: 'push', count: 8192, oddCount: 4096, code: 2 },
    { dtype: 'bf16', main: 'pull', count: 8192, oddCount: 4096, code: 2 },
    { dtype: 'f32', main: 'push', count: 2048, oddCount: 4096, code: 2 },
    { dtype: 'f32', main: 'pull', count: 2048, oddCount: 4096, code: 2 },
    { dtype: 'bf16', main: 'push', count: 8192, oddCount: 8192, code: 1 },
    { dtype: 'f32', main: 'pull', count: 4096, oddCount: 4096, code: 1 },
  ]
  for (const q of pairs)
    cases.push({
      v: twoshotKernel(q.dtype, q.main),
      nranks: 8,
      bufferBytes: 65536,
      calls: [String(q.count)],
      timeoutMs: q.code === 1 ? 1000 : 20_000,
      odd: { rank: 7, v: twoshotKernel(q.dtype, q.main === 'push' ? 'pull' : 'push'), count: q.oddCount },
    })
  const shared = cases.length
  // The same count mismatches with an error word per side (per-process mode: each side must end by itself). f32:
  // every wait armed, MISMATCH in both words. bf16: the side with the larger parts waits in its reduce-scatter for
  // slots the odd rank never sends, a wait the 16-bit kernels do not arm (signature.cuh's gap): a word may say
  // TIMEOUT, and the host's reading of the packets reports MISMATCH (hostErrorOf).
  for (const q of [
    { dtype: 'f32', main: 'push', count: 2048, oddCount: 4096 },
    { dtype: 'f32', main: 'pull', count: 4096, oddCount: 2048 },
    { dtype: 'bf16', main: 'push', count: 8192, oddCount: 4096 },
    { dtype: 'bf16', main: 'pull', count: 4096, oddCount: 8192 },
  ] as const)
    cases.push({
      v: twoshotKernel(q.dtype, q.main),
      nranks: 8,
      bufferBytes: 65536,
      calls: [String(q.count)],
      // f32: MISMATCH expected, so a deadline far beyond it (as the per-process test above); 16-bit: the gap's
      // TIMEOUT is one of the outcomes, so a short one
      timeoutMs: q.dtype === 'f32' ? 20_000 : 2500,
      odd: { rank: 7, v: twoshotKernel(q.dtype, q.main === 'push' ? 'pull' : 'push'), count: q.oddCount },
      splitError: true,
      dumpSignatures: true,
    })
  const started = Date.now()
  const results = await runAll(cases)
  t.diagnostic(`${results.length} emulated runs in ${((Date.now() - started) / 1000).toFixed(1)} s`)
  for (const { c, r } of results) {
    const i = cases.indexOf(c)
    const what = `${label(c)}${c.odd ? ` against ${c.odd.v.kernelName} ${c.odd.count}` : ''}`
    if (i < exact) {
      assert.equal(r.error.code, 0, `${what}: a wait timed out: ${JSON.stringify(r.error)}`)
      assert.equal(r.mismatches, 0, `${what}: ${r.mismatches} wrong elements, first: ${r.firstMismatch}`)
      assert.equal(r.crossRankDiffs, 0, `${what}: ranks disagree bitwise`)
      assert.ok(r.nanChecked > 0, `${what}: the sentinel-as-data probe did not run`)
      assert.equal(r.sentinelBytesNotArmed, 0, `${what}: sentinel slots left unarmed after the calls`)
      assert.equal(r.badEpochs, 0, `${what}: channel epochs do not count the calls`)
      assert.equal(r.guardsBroken, 0, `${what}: a kernel wrote past a buffer`)
      assert.ok(r.ok, what)
    } else if (i < absent) {
      assert.equal(r.error.code, 1, `${what}: no TIMEOUT recorded: ${JSON.stringify(r.error)}`)
      assert.notEqual(r.error.rank, 1, `${what}: the absent rank cannot be the waiter`)
      assert.equal(r.error.peer, 1, `${what}: the peer waited for`)
      assert.equal(r.error.epoch, 1, `${what}: epoch of the first call`)
    } else if (i < shared) {
      const want = c.calls[0] === String(c.odd?.count) ? 1 : 2
      assert.equal(r.error.code, want, `${what}: ${JSON.stringify(r.error)}`)
      assert.equal(r.error.epoch, 1, what)
      if (want === 2) {
        const odd = c.odd?.rank ?? -1
        assert.ok(r.error.rank === odd || r.error.peer === odd, `${what}: the pair names the odd rank`)
        const e = mismatchFromWord(wordsOf(r.error))
        const oddSide = r.error.rank === odd ? String(e.details.mine) : String(e.details.theirs)
        const mainSide = r.error.rank === odd ? String(e.details.theirs) : String(e.details.mine)
        assert.ok(mainSide.startsWith(`twoshot-sentinel ${c.v.dtype} sum × ${c.calls[0]} `), mainSide)
        assert.ok(oddSide.startsWith(`twoshot-sentinel ${c.v.dtype} sum × ${c.odd?.count} `), oddSide)
        // Found before the deadline: the error word keeps its first writer, and a wait that reached its deadline
        // would have written TIMEOUT (code 1) first. No wall-clock bound here: a fresh-clone CI run on 2 loaded cores
        // took 15.6 s of the 20 s deadline for this 8-rank case (a 15 s bound failed it).
      }
    } else {
      // f32: MISMATCH in both words. 16-bit: a side stuck in its unarmed reduce-scatter wait records TIMEOUT, one
      // that reached an armed wait or its check first MISMATCH (a race between the armed look and the other wait's
      // deadline, which the emulator's scheduling decides either way); the host's reading gives MISMATCH for both.
      const codes = c.v.dtype === 'f32' ? [2] : [1, 2]
      assert.ok(codes.includes(r.error.code), `${what}, the others' word: ${JSON.stringify(r.error)}`)
      assert.ok(codes.includes(r.oddError.code), `${what}, the odd rank's word: ${JSON.stringify(r.oddError)}`)
      // Never a hang: the run ended (runCase kills it at 300 s, which fails the case). The bound only says it ended
      // far from that: several launches each end at their own deadline, and a loaded 2-core CI run took 18.5 s for
      // the 16-bit case (2.5 s deadlines) and 15.9 s for f32 (20 s). For f32 the codes above already say MISMATCH
      // came first in both words, before any wait's deadline.
      assert.ok(r.seconds < 120, `${what}: ended in ${r.seconds} s`)
      assert.equal(r.oddError.rank, c.odd?.rank, `${what}: the odd rank's word is recorded by the odd rank`)
      assert.notEqual(r.error.rank, c.odd?.rank, `${what}: the others' word is recorded by one of them`)
      for (const word of [r.error, r.oddError]) {
        const e = hostErrorOf(r, word, c.nranks)
        assert.equal(e.code, 'MISMATCH', `${what}: the host reports ${e.code}: ${e.message}`)
      }
    }
  }
})

/** Rank `rank`'s signature region from the harness's dump (hex u32s). */
function signatureRegionOf(r: EmuResult, rank: number): Uint32Array {
  const hex = r.signatureRegions?.[rank]
  assert.ok(hex, `no signature region dumped for rank ${rank}`)
  return Uint32Array.from({ length: hex.length / 8 }, (_, i) => Number.parseInt(hex.slice(8 * i, 8 * i + 8), 16))
}

/** The harness's error word as the device's eight u32s (abi.cuh's error word layout). */
function wordsOf(word: ErrorWordJson): Uint32Array {
  return Uint32Array.of(word.code, word.rank, word.peer, word.epoch, word.what, word.slot, word.channel, word.reserved)
}

/** What the per-process communicator reports for a device error word (process-communicator.ts, checkDeviceError). */
function hostErrorOf(r: EmuResult, word: ErrorWordJson, nranks: number): LlcommError {
  const words = wordsOf(word)
  if (word.code === 2) return mismatchFromWord(words)
  assert.equal(word.code, 1, `not a TIMEOUT: ${JSON.stringify(word)}`)
  const region = signatureRegionOf(r, word.rank)
  return reclassifyTimeout(LlcommError.timeout({ rank: word.rank, peer: word.peer, epoch: word.epoch }), {
    timeout: word,
    nranks,
    readRegion: () => region.slice(),
  })
}

/**
 * The in-block check's per-process gap (signature.cuh): the odd rank runs another call after matching ones and never
 * sends what the others wait for, in waits the in-block check does not arm: 16-bit twoshot-sentinel's reduce-scatter
 * when the checker thread has slots to reduce; the one-shot peer-parallel path when every thread polls; 16-bit
 * oneshot-sentinel's peer-parallel path when the odd rank's packet comes after the 32 looks (its launch 1 s late).
 */
function gapCases(exePath: string): Case[] {
  const pairs: {
    main: string
    count: number
    odd: string
    oddCount: number
    nranks: number
    call: number
    delayMs?: number
  }[] = [
    {
      main: 'llcomm_twoshot_sentinel_sentinel_bf16_sum',
      count: 4000,
      odd: 'llcomm_oneshot_sentinel_sentinel_bf16_sum',
      oddCount: 4000,
      nranks: 2,
      call: 1,
    },
    {
      main: 'llcomm_twoshot_sentinel_sentinel_f16_sum',
      count: 4000,
      odd: 'llcomm_oneshot_sentinel_sentinel_f16_sum',
      oddCount: 4000,
      nranks: 2,
      call: 2,
    },
    {
      main: 'llcomm_oneshot_sentinel_sentinel_bf16_sum',
      count: 64,
      odd: 'llcomm_oneshot_sentinel_sentinel_bf16_sum',
      oddCount: 32,
      nranks: 4,
      call: 1,
    },
    {
      main: 'llcomm_oneshot_sentinel_sentinel_bf16_sum',
      count: 32,
      odd: 'llcomm_oneshot_sentinel_sentinel_bf16_sum',
      oddCount: 16,
      nranks: 4,
      call: 1,
      delayMs: 1000,
    },
  ]
  return pairs.map((q) => ({
    v: kernelNamed(q.main),
    nranks: q.nranks,
    bufferBytes: 65536,
    calls: new Array(q.call + 1).fill(String(q.count)),
    timeoutMs: 2500,
    odd: { rank: q.nranks - 1, v: kernelNamed(q.odd), count: q.oddCount, call: q.call, delayMs: q.delayMs },
    splitError: true,
    dumpSignatures: true,
    exe: exePath,
  }))
}

test("per-process error words, the waits the signature does not arm (signature.cuh's gap): the device records TIMEOUT, the host's reading of the packets reports MISMATCH", async (t) => {
  if (!exe) return t.skip('no host C++ compiler and LLCOMM_SKIP_NVCC=1')
  // The odd rank runs another call after matching ones (so the failed epoch is not 1 and the halves alternate) and
  // never sends what the others wait for, in waits that do not look at the signature: 16-bit twoshot-sentinel's
  // reduce-scatter when the checker thread has slots to reduce (LLCOMM_SIG_R2, the default); the one-shot
  // peer-parallel path when every thread polls; 16-bit oneshot-sentinel's peer-parallel path when the odd rank's
  // packet comes after the 32 looks (its launch 1 s late). Its own word says MISMATCH; the others' says TIMEOUT
  // (the gap: asserted, so that this test shows it), which the host turns into MISMATCH from the packets. The gap is
  // the in-block check's (LLCOMM_SIG_IN_BLOCKS, this test's build); the signature block closes it (its test below).
  const cases = gapCases(inBlocksExe())
  for (const { c, r } of await runAll(cases)) {
    const odd = c.odd?.rank ?? -1
    const what = `${label(c)} against ${c.odd?.v.kernelName} ${c.odd?.count}`
    assert.equal(
      r.error.code,
      1,
      `${what}: the gap is not reproduced here (the others' word: ${JSON.stringify(r.error)})`,
    )
    assert.equal(r.error.epoch, (c.odd?.call ?? 0) + 1, `${what}: the failed call's epoch`)
    assert.equal(r.oddError.code, 2, `${what}, the odd rank's word: ${JSON.stringify(r.oddError)}`)
    const e = hostErrorOf(r, r.error, c.nranks)
    assert.equal(e.code, 'MISMATCH', `${what}: ${e.message} (${String(e.details.signatureCheck)})`)
    assert.equal(e.details.rank, r.error.rank)
    assert.equal(e.details.peer, odd, `${what}: names the odd rank`)
    assert.equal(e.details.epoch, r.error.epoch)
    assert.ok(
      String(e.details.mine).startsWith(`${c.v.algorithm} ${c.v.dtype} sum × ${c.calls[0]} `),
      String(e.details.mine),
    )
    assert.ok(String(e.details.theirs).startsWith(`${c.odd?.v.algorithm} ${c.odd?.v.dtype} sum × ${c.odd?.count} `))
    // The same two signatures as the odd rank's device-recorded MISMATCH, seen from the other side.
    const oddSide = mismatchFromWord(wordsOf(r.oddError))
    assert.equal(e.details.mine, oddSide.details.theirs)
    assert.equal(e.details.theirs, oddSide.details.mine)
  }
})

test('a rank that never calls (per-process reading of the packets): the TIMEOUT stays a TIMEOUT', async (t) => {
  if (!exe) return t.skip('no host C++ compiler and LLCOMM_SKIP_NVCC=1')
  const cases: Case[] = ['llcomm_twoshot_sentinel_sentinel_bf16_sum', 'llcomm_oneshot_sentinel_sentinel_bf16_sum'].map(
    (name) => {
      const v = KERNEL_VARIANTS.find((x) => x.kernelName === name)
      assert.ok(v, name)
      // the in-block build: the host reads the packets only there (with the signature block the device compares them)
      return {
        v,
        nranks: 3,
        bufferBytes: 16384,
        calls: ['max'],
        absentRank: 1,
        timeoutMs: 300,
        dumpSignatures: true,
        exe: inBlocksExe(),
      }
    },
  )
  for (const { c, r } of await runAll(cases)) {
    assert.equal(r.error.code, 1, `${label(c)}: ${JSON.stringify(r.error)}`)
    const e = hostErrorOf(r, r.error, c.nranks)
    assert.equal(e.code, 'TIMEOUT', `${label(c)}: ${e.message}`)
    assert.match(String(e.details.signatureCheck), /rank 1 published no signature for epoch 1/)
  }
})

test('f32 accumulation: small terms next to a large one survive in every kernel (16-bit partials would lose them)', async (t) => {
  if (!exe) return t.skip('no host C++ compiler and LLCOMM_SKIP_NVCC=1')
  // The default build accumulates f16/bf16 in f32 everywhere (abi.cuh: ring's f32 partials, twoshot-atomic's f32
  // lines; issue 18 item 4). The ring and twoshot-atomic, whose capacity the switches change, also at 8 ranks and at
  // their largest launch.
  const wide = (v: KernelVariant) => (v.algorithm === 'ring' || v.algorithm === 'twoshot-atomic') && v.dtype !== 'f32'
  const cases: Case[] = []
  for (const v of KERNEL_VARIANTS)
    for (const nranks of wide(v) ? [3, 8] : [3]) {
      const calls = wide(v) ? ['1001', '40', 'max'] : ['1001', '40']
      cases.push({ v, nranks, bufferBytes: 65536, calls, accumulation: true })
    }
  for (const { c, r } of await runAll(cases)) {
    assert.equal(r.error.code, 0, `${label(c)}: ${JSON.stringify(r.error)}`)
    assert.equal(r.mismatches, 0, `${label(c)}: ${r.mismatches} wrong elements, first: ${r.firstMismatch}`)
    assert.equal(r.ll128BytesNotZero, 0, `${label(c)}: LL128 lines left non-zero after the calls`)
  }
})

test("accumulation: 'dtype' builds (16-bit ring partials, packed 16-bit atomic lines): exact on exact data, and they do round in 16 bits", async (t) => {
  if (!exe) return t.skip('no host C++ compiler and LLCOMM_SKIP_NVCC=1')
  const exe16 = join(work, 'emulator-16-bit-accumulation')
  const build = accumulationBuild('dtype')
  buildEmulator(gxx, exe16, kernelBuildDefines(build))
  const sixteen = KERNEL_VARIANTS.filter(
    (v) => (v.algorithm === 'ring' || v.algorithm === 'twoshot-atomic') && v.dtype !== 'f32',
  )
  const cases: Case[] = []
  for (const v of sixteen) {
    cases.push({
      v,
      nranks: 3,
      bufferBytes: 16384,
      calls: ['max', '1', '37:inplace', '5', 'max', '100'],
      exe: exe16,
      build,
    })
    cases.push({ v, nranks: 8, bufferBytes: 65536, calls: ['1000', 'max', '333:inplace'], exe: exe16, build })
  }
  const exact = cases.length
  // The same f32-accumulation inputs as above: a 16-bit sum loses the small terms next to 256 (bf16 and f16 spacing
  // there is 2 and 0.25), so some elements must come out wrong: the switch reached the kernels.
  for (const v of sixteen)
    cases.push({ v, nranks: 3, bufferBytes: 65536, calls: ['1001'], accumulation: true, exe: exe16, build })
  const results = await runAll(cases)
  for (const { c, r } of results) {
    assert.equal(r.error.code, 0, `${label(c)}: ${JSON.stringify(r.error)}`)
    assert.equal(r.crossRankDiffs, 0, `${label(c)}: ranks disagree bitwise`)
    assert.equal(r.ll128BytesNotZero, 0, `${label(c)}: LL128 lines left non-zero after the calls`)
    assert.equal(r.guardsBroken, 0, `${label(c)}: a kernel wrote past a buffer`)
    if (c.accumulation) assert.ok(r.mismatches > 0, `${label(c)}: the 16-bit build summed the small terms exactly`)
    else assert.equal(r.mismatches, 0, `${label(c)}: ${r.mismatches} wrong elements, first: ${r.firstMismatch}`)
  }
  assert.equal(results.filter(({ c }) => !c.accumulation).length, exact)
})

// ---- The deferred signature check (kernels built with LLCOMM_SIG_DEFERRED: kernel e checks epoch e - 1; the host
// checks each channel's last launch: src/backends/cuda/latest-signature.ts) ----

/** Row (channel, slot) of rank `rank`'s dumped signature region (latest-signature.ts reads the same words). */
function signatureRowOf(r: EmuResult, rank: number, channel: number, slot: number): Uint32Array {
  const begin = (signatureRowScratchOffset(channel, slot) - LLCOMM_SCRATCH_SIGNATURE_OFFSET) / 4
  return signatureRegionOf(r, rank).slice(begin, begin + SIGNATURE_ROW_WORDS)
}

/** The host's check of the last launch on every channel of `rank` (what checkDeviceError adds in the deferred build). */
function latestCheckOf(r: EmuResult, rank: number, nranks: number) {
  const epochs = r.epochWords?.[rank]
  assert.ok(epochs, `no epoch words dumped for rank ${rank}`)
  return settleLatestSignatures({
    rank,
    nranks,
    channels: channelsToCheck(Uint32Array.from(epochs), new Uint32Array(16)),
    readRow: (channel, slot) => signatureRowOf(r, rank, channel, slot),
  })
}

/**
 * What a communicator of the deferred build reports for one side of a run (error word `word`, its ranks `ranks`):
 * the device's MISMATCH; a TIMEOUT read against the packets of slot epoch & 3 (timeout-signature.ts); else the
 * host's check of each rank's last launches (latest-signature.ts). undefined: nothing to report.
 */
function deferredHostError(
  r: EmuResult,
  word: ErrorWordJson,
  ranks: number[],
  nranks: number,
): LlcommError | undefined {
  const words = wordsOf(word)
  if (word.code === 2) return mismatchFromWord(words)
  if (word.code === 1) {
    const region = signatureRegionOf(r, word.rank)
    return reclassifyTimeout(LlcommError.timeout({ rank: word.rank, peer: word.peer, epoch: word.epoch }), {
      timeout: word,
      nranks,
      readRegion: () => region.slice(),
      slotMask: 3,
    })
  }
  for (const rank of ranks) {
    const c = latestCheckOf(r, rank, nranks)
    if (c.kind === 'mismatch') return latestMismatchError(rank, c)
  }
  return undefined
}

function kernelNamed(name: string): KernelVariant {
  const v = KERNEL_VARIANTS.find((x) => x.kernelName === name)
  assert.ok(v, name)
  return v
}

test('deferred build: the deferred kernels exact across sequences, algorithms interleaved, the u32 wrap; the host check of the last launches finds nothing', async (t) => {
  if (!exe) return t.skip('no host C++ compiler and LLCOMM_SKIP_NVCC=1')
  const x = deferredExe()
  // Interleaved: kernel e's check compares epoch e - 1's packets of another algorithm, dtype-equal count or not
  // (oneshot-barrier stores no own packet: the next kernel has nothing to compare, the barrier checked itself).
  const mixes: { main: string; nranks: number; calls: string[]; storedEpoch?: number }[] = [
    {
      main: 'llcomm_oneshot_ll_ll16_bf16_sum',
      nranks: 3,
      calls: [
        '100',
        '5000:copy:llcomm_twoshot_sentinel_sentinel_bf16_sum',
        '64:inplace:llcomm_oneshot_barrier_barrier_bf16_sum',
        '300:copy:llcomm_oneshot_sentinel_sentinel_bf16_sum',
        'max',
        '7:inplace',
        '2000:copy:llcomm_ring_flags_bf16_sum',
        '33',
      ],
    },
    {
      main: 'llcomm_oneshot_sentinel_sentinel_f32_sum',
      nranks: 8,
      calls: [
        '8',
        '1000:inplace:llcomm_oneshot_ll_ll8_f32_sum',
        '120:copy:llcomm_twoshot_sentinel_sentinel_f32_sum',
        '4',
        'max',
      ],
    },
    {
      main: 'llcomm_twoshot_sentinel_sentinel_f16_sum',
      nranks: 8,
      calls: ['512', '40:inplace', '2000', '8:copy:llcomm_twoshot_atomic_ll128_f16_sum', '120'],
    },
    // Across the wrap (0xFFFFFFFF -> 4 in this build: slot epoch & 3 continues).
    {
      main: 'llcomm_oneshot_ll_ll8_f16_sum',
      nranks: 2,
      calls: ['10', '20', '30', '40', '50', '60'],
      storedEpoch: 0xfffffffd,
    },
    {
      main: 'llcomm_twoshot_sentinel_sentinel_bf16_sum',
      nranks: 4,
      calls: ['240', '240', '3000', '16', '240'],
      storedEpoch: 0xfffffffc,
    },
  ]
  const cases: Case[] = mixes.map((m) => ({
    v: kernelNamed(m.main),
    nranks: m.nranks,
    bufferBytes: 65536,
    calls: m.calls,
    storedEpoch: m.storedEpoch,
    dumpSignatures: true,
    exe: x,
  }))
  for (const { c, r } of await runAll(cases)) {
    assert.equal(r.error.code, 0, `${label(c)}: ${JSON.stringify(r.error)}`)
    assert.equal(r.mismatches, 0, `${label(c)}: ${r.mismatches} wrong elements, first: ${r.firstMismatch}`)
    assert.ok(r.ok, label(c))
    for (let rank = 0; rank < c.nranks; rank++) {
      const v = latestCheckOf(r, rank, c.nranks)
      assert.equal(v.kind, 'match', `${label(c)}: rank ${rank}: ${JSON.stringify(v)}`)
      if (v.kind !== 'match') continue
      assert.deepEqual(v.unpublished, [], `${label(c)}: rank ${rank}`)
      // Every peer of every channel the last calls left behind was compared (none after oneshot-barrier).
      assert.ok(v.compared >= c.nranks - 1, `${label(c)}: rank ${rank} compared ${v.compared} packets`)
    }
  }
})

/** The pairs of the mismatch matrix above (shared error word), plus one whose bytes and lanes are equal. */
// `call`: the odd call's index (the calls before it match), so that the failed epochs 1, 2 and 3 all occur (slot
// epoch & 3 differs from the parity's at 2 and 3).
const DEFERRED_PAIRS: { main: string; count: number; odd: string; oddCount: number; nranks: number; call: number }[] = [
  {
    main: 'llcomm_oneshot_ll_ll8_f32_sum',
    count: 1000,
    odd: 'llcomm_oneshot_ll_ll8_f32_sum',
    oddCount: 1001,
    nranks: 3,
    call: 0,
  },
  {
    main: 'llcomm_oneshot_sentinel_sentinel_f32_sum',
    count: 1000,
    odd: 'llcomm_oneshot_sentinel_sentinel_bf16_sum',
    oddCount: 2000,
    nranks: 4,
    call: 1,
  },
  {
    main: 'llcomm_oneshot_sentinel_sentinel_f32_sum',
    count: 600,
    odd: 'llcomm_twoshot_sentinel_sentinel_f32_sum',
    oddCount: 600,
    nranks: 3,
    call: 2,
  },
  {
    main: 'llcomm_oneshot_ll_ll16_bf16_sum',
    count: 300,
    odd: 'llcomm_ring_flags_bf16_sum',
    oddCount: 300,
    nranks: 2,
    call: 1,
  },
  {
    main: 'llcomm_oneshot_barrier_barrier_f32_sum',
    count: 64,
    odd: 'llcomm_twoshot_atomic_ll128_f32_sum',
    oddCount: 64,
    nranks: 3,
    call: 0,
  },
  {
    main: 'llcomm_oneshot_ll_ll16_f32_sum',
    count: 8,
    odd: 'llcomm_oneshot_ll_ll8_f32_sum',
    oddCount: 8,
    nranks: 8,
    call: 2,
  },
  {
    main: 'llcomm_twoshot_sentinel_sentinel_bf16_sum',
    count: 600,
    odd: 'llcomm_twoshot_sentinel_sentinel_f32_sum',
    oddCount: 300,
    nranks: 3,
    call: 1,
  },
  // Equal bytes and lanes (f32 x 8 against bf16 x 16): every data wait is satisfied, only a signature check sees it.
  {
    main: 'llcomm_oneshot_ll_ll8_f32_sum',
    count: 8,
    odd: 'llcomm_oneshot_ll_ll8_bf16_sum',
    oddCount: 16,
    nranks: 3,
    call: 0,
  },
  {
    main: 'llcomm_twoshot_sentinel_sentinel_f32_sum',
    count: 64,
    odd: 'llcomm_twoshot_sentinel_sentinel_bf16_sum',
    oddCount: 128,
    nranks: 4,
    call: 2,
  },
  {
    main: 'llcomm_oneshot_sentinel_sentinel_f32_sum',
    count: 256,
    odd: 'llcomm_oneshot_sentinel_sentinel_bf16_sum',
    oddCount: 512,
    nranks: 8,
    call: 0,
  },
]
const EQUAL_BYTES = (q: (typeof DEFERRED_PAIRS)[number]) => q.count * 2 === q.oddCount && q.main.endsWith('_f32_sum')

function assertNamesPair(e: LlcommError | undefined, c: Case, what: string): void {
  assert.ok(e, `${what}: nothing reported`)
  assert.equal(e.code, 'MISMATCH', `${what}: ${e.message} (${String(e.details.signatureCheck ?? '')})`)
  const odd = c.odd?.rank ?? -1
  const rank = e.details.rank as number
  const peer = e.details.peer as number
  assert.ok(rank === odd || peer === odd, `${what}: the pair names the odd rank (${e.message})`)
  assert.notEqual(rank, peer)
  assert.equal(e.details.epoch, (c.odd?.call ?? 0) + 1, `${what}: the odd call's epoch`)
  const oddSide = rank === odd ? String(e.details.mine) : String(e.details.theirs)
  const mainSide = rank === odd ? String(e.details.theirs) : String(e.details.mine)
  assert.ok(mainSide.startsWith(c.v.algorithm), `${what}: ${mainSide} is ${c.v.algorithm}`)
  assert.ok(oddSide.startsWith(c.odd?.v.algorithm ?? '?'), `${what}: ${oddSide} is ${c.odd?.v.algorithm}`)
  assert.ok(mainSide.includes(`× ${c.calls[0]} `), `${what}: ${mainSide}: count ${c.calls[0]}`)
  assert.ok(oddSide.includes(`× ${c.odd?.count} `), `${what}: ${oddSide}: count ${c.odd?.count}`)
}

/**
 * The deferred build's mismatch pairs (DEFERRED_PAIRS), each as its own call sequence and, where the pair has equal
 * bytes, again followed by a matching call (where the odd call ends without an error, the next kernel's check of the
 * odd call's epoch records it on the device); `splitError`: an error word per side, as per process.
 */
async function runDeferredPairs(splitError: boolean) {
  const x = deferredExe()
  const cases: Case[] = []
  for (const q of DEFERRED_PAIRS) {
    const base: Case = {
      v: kernelNamed(q.main),
      nranks: q.nranks,
      bufferBytes: 65536,
      calls: new Array(q.call + 1).fill(String(q.count)),
      timeoutMs: 3000,
      odd: { rank: q.nranks - 1, v: kernelNamed(q.odd), count: q.oddCount, call: q.call },
      ...(splitError ? { splitError: true } : {}),
      dumpSignatures: true,
      exe: x,
    }
    cases.push(base)
    if (EQUAL_BYTES(q)) cases.push({ ...base, calls: [...base.calls, String(q.count)], oddContinue: true })
  }
  return (await runAll(cases)).map(({ c, r }) => {
    const q = DEFERRED_PAIRS.find((p) => p.main === c.v.kernelName && p.oddCount === c.odd?.count)
    assert.ok(q)
    const what = `${label(c)} against ${c.odd?.v.kernelName} ${c.odd?.count}${c.oddContinue ? ', then a call' : ''}`
    return { c, r, q, what }
  })
}

test('deferred build, one error word: a mismatched last call is reported (the device, or the host check of the last launch); one followed by a call, by the next kernel on the device', async (t) => {
  if (!exe) return t.skip('no host C++ compiler and LLCOMM_SKIP_NVCC=1')
  for (const { c, r, q, what } of await runDeferredPairs(false)) {
    const everyRank = Array.from({ length: c.nranks }, (_, i) => i)
    t.diagnostic(`${what}: device words ${r.error.code}/${r.oddError.code}, ${r.seconds.toFixed(2)} s`)
    if (EQUAL_BYTES(q)) {
      if (c.oddContinue) {
        // Recorded on the device by the next call's kernel: the error word's epoch is the odd call's (prev).
        assert.equal(r.error.code, 2, `${what}: the next kernel did not record it: ${JSON.stringify(r.error)}`)
      } else {
        // Nobody on the device checks the last launch: the error word is clear, the host finds it.
        assert.equal(r.error.code, 0, `${what}: the device recorded ${JSON.stringify(r.error)} (no check expected)`)
        assert.equal(latestCheckOf(r, 0, c.nranks).kind, 'mismatch', `${what}: the host check of rank 0`)
      }
    }
    assertNamesPair(deferredHostError(r, r.error, everyRank, c.nranks), c, what)
  }
})

test('deferred build, an error word per side (per-process): each side reports the mismatch; the last call through the host check, one followed by a call through the next kernel', async (t) => {
  if (!exe) return t.skip('no host C++ compiler and LLCOMM_SKIP_NVCC=1')
  for (const { c, r, q, what } of await runDeferredPairs(true)) {
    const odd = c.odd?.rank ?? -1
    const others = Array.from({ length: c.nranks }, (_, i) => i).filter((i) => i !== odd)
    t.diagnostic(`${what}: device words ${r.error.code}/${r.oddError.code}, ${r.seconds.toFixed(2)} s`)
    if (EQUAL_BYTES(q)) {
      const code = c.oddContinue ? 2 : 0
      assert.equal(r.error.code, code, `${what}: the others' word ${JSON.stringify(r.error)}`)
      assert.equal(r.oddError.code, code, `${what}: the odd rank's word ${JSON.stringify(r.oddError)}`)
      if (!c.oddContinue) {
        assert.equal(latestCheckOf(r, odd, c.nranks).kind, 'mismatch', `${what}: the odd rank's host check`)
        assert.equal(latestCheckOf(r, others[0], c.nranks).kind, 'mismatch', `${what}: rank ${others[0]}'s host check`)
      }
    }
    assertNamesPair(deferredHostError(r, r.error, others, c.nranks), c, `${what}, the others`)
    assertNamesPair(deferredHostError(r, r.oddError, [odd], c.nranks), c, `${what}, the odd rank`)
  }
})

// ---- The signature block (LLCOMM_SIG_BLOCK: the call signature checked in one more block per launch, signature.cuh
// llcSignatureBlock; research/notes/signature-cost.md, round 11) and the in-block check (LLCOMM_SIG_IN_BLOCKS, the
// default build: its per-process gap is tested above on a build that names it, so those tests keep their build
// whichever becomes the default) ----

test("signature block: exact with the extra blocks; a mismatched call ends with MISMATCH in one error word and in both per-process words, the in-block check's gap closed", async (t) => {
  if (!exe) return t.skip('no host C++ compiler and LLCOMM_SKIP_NVCC=1')
  // (Checked: with the block's check left out, -DLLCOMM_SIG_BLOCK_EMPTY -DLLCOMM_NO_SIGNATURE, the equal-bytes pair
  // returns success with wrong data.)
  const x = sigBlockExe()
  // Exact: every algorithm and protocol once, a sequence with an in-place call (the extra block must neither touch
  // the data nor disturb the channels' epochs, which the harness checks).
  const exact: Case[] = oneDtypeEach((i) => (['f32', 'bf16', 'f16'] as const)[i % 3]).map((v) => ({
    v,
    nranks: 3,
    bufferBytes: 16384,
    calls: ['max', '37:inplace', '5'],
    exe: x,
  }))
  for (const { c, r } of await runAll(exact)) {
    assert.equal(r.error.code, 0, `${label(c)}: ${JSON.stringify(r.error)}`)
    assert.equal(r.mismatches, 0, `${label(c)}: ${r.mismatches} wrong elements, first: ${r.firstMismatch}`)
    assert.equal(r.crossRankDiffs, 0, `${label(c)}: ranks disagree bitwise`)
    assert.equal(r.badEpochs, 0, `${label(c)}: channel epochs do not count the calls`)
    assert.equal(r.guardsBroken, 0, `${label(c)}: a kernel wrote past a buffer`)
  }
  // Mismatched: the data blocks carry no check in this build, so only the signature block can name the mismatch; one
  // error word, then an error word per side.
  const mismatched = [
    ...mismatchCases(MISMATCH_PAIRS, { exe: x }),
    ...mismatchCases(SPLIT_WORD_PAIRS, { exe: x, splitError: true }),
  ]
  for (const { c, r } of await runAll(mismatched)) {
    assertMismatchNamed(c, r)
    const odd = c.odd?.rank ?? -1
    if (c.splitError) {
      assert.equal(r.oddError.code, 2, `${label(c)}, the odd rank's word: ${JSON.stringify(r.oddError)}`)
      assert.equal(r.oddError.rank, odd, `${label(c)}: the odd rank's word is recorded by the odd rank`)
      assert.notEqual(r.error.rank, odd, `${label(c)}: the others' word is recorded by one of them`)
    } else {
      assert.ok(r.error.rank === odd || r.error.peer === odd, `${label(c)}: the pair names the odd rank`)
    }
  }
  // A rank that never calls: TIMEOUT (its packet never comes; nothing to compare), never a hang.
  const absent = ['llcomm_twoshot_sentinel_sentinel_bf16_sum', 'llcomm_oneshot_sentinel_sentinel_bf16_sum'].map(
    (name): Case => ({
      v: kernelNamed(name),
      nranks: 3,
      bufferBytes: 16384,
      calls: ['max'],
      absentRank: 1,
      timeoutMs: 300,
      exe: x,
    }),
  )
  for (const { c, r } of await runAll(absent)) assert.equal(r.error.code, 1, `${label(c)}: ${JSON.stringify(r.error)}`)
  // The in-block check's per-process gap (gapCases: the others' word said TIMEOUT there): closed, every rank's own
  // signature block compares the odd rank's packet.
  for (const { c, r } of await runAll(gapCases(x))) {
    const what = `${label(c)} against ${c.odd?.v.kernelName} ${c.odd?.count}`
    assert.equal(r.error.code, 2, `${what}, the others' word: ${JSON.stringify(r.error)}`)
    assert.equal(r.oddError.code, 2, `${what}, the odd rank's word: ${JSON.stringify(r.oddError)}`)
    assert.equal(r.error.epoch, (c.odd?.call ?? 0) + 1, `${what}: the failed call's epoch`)
  }
})

test('signature block: an empty call (the signature block alone, as per process) keeps every channel exact around it; one against a non-empty call is MISMATCH in both per-process words', async (t) => {
  if (!exe) return t.skip('no host C++ compiler and LLCOMM_SKIP_NVCC=1')
  const x = sigBlockExe()
  // Matched empty calls between calls with data: each advances only the signature epoch (the harness checks the
  // channels' epochs and buffers, and every output against the reference).
  const around: Case[] = [
    'llcomm_oneshot_ll_ll16_bf16_sum',
    'llcomm_oneshot_sentinel_sentinel_f16_sum',
    'llcomm_twoshot_sentinel_sentinel_f32_sum',
    'llcomm_oneshot_barrier_barrier_bf16_sum',
  ].map((name) => ({
    v: kernelNamed(name),
    nranks: 3,
    bufferBytes: 16384,
    calls: ['empty', 'max', 'empty', 'empty', '37:inplace', 'empty', '5'],
    exe: x,
  }))
  for (const { c, r } of await runAll(around)) {
    assert.equal(r.error.code, 0, `${label(c)}: ${JSON.stringify(r.error)}`)
    assert.equal(r.mismatches, 0, `${label(c)}: ${r.mismatches} wrong elements, first: ${r.firstMismatch}`)
    assert.equal(r.crossRankDiffs, 0, `${label(c)}: ranks disagree bitwise`)
    assert.equal(r.badEpochs, 0, `${label(c)}: channel epochs do not count the calls`)
    assert.equal(r.guardsBroken, 0, `${label(c)}: a kernel wrote past a buffer`)
  }
  // The odd rank's call is empty, the others' is not (and the reverse: the odd rank alone has data), an error word
  // per side: both words say MISMATCH at the call's signature epoch; neither side waits out its deadline.
  const pairs: Case[] = [
    { main: 'llcomm_oneshot_ll_ll8_f32_sum', count: 1000, odd: 'llcomm_oneshot_ll_ll8_f32_sum', oddCount: 0 },
    {
      main: 'llcomm_twoshot_sentinel_sentinel_bf16_sum',
      count: 600,
      odd: 'llcomm_twoshot_sentinel_sentinel_bf16_sum',
      oddCount: 0,
    },
    {
      main: 'llcomm_oneshot_sentinel_sentinel_bf16_sum',
      count: 0,
      odd: 'llcomm_oneshot_sentinel_sentinel_bf16_sum',
      oddCount: 300,
    },
  ].map((q) => ({
    v: kernelNamed(q.main),
    nranks: 3,
    bufferBytes: 65536,
    calls: [q.count === 0 ? 'empty' : String(q.count)],
    timeoutMs: 20_000,
    odd: { rank: 2, v: kernelNamed(q.odd), count: q.oddCount, ...(q.oddCount === 0 ? { blocks: 0 } : {}) },
    splitError: true,
    exe: x,
  }))
  for (const { c, r } of await runAll(pairs)) {
    const what = `${label(c)} (${c.calls[0]}) against ${c.odd?.count}`
    assert.equal(r.error.code, 2, `${what}, the others' word: ${JSON.stringify(r.error)}`)
    assert.equal(r.oddError.code, 2, `${what}, the odd rank's word: ${JSON.stringify(r.oddError)}`)
    assert.equal(r.oddError.rank, 2, `${what}: the odd rank's word is recorded by the odd rank`)
    assert.ok(r.seconds < 10, `${what}: ${r.seconds} s, near the 20 s deadline`)
  }
})
