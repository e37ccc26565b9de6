// Host-emulator check of the scale variant trees (issue 22; research/notes/scale-2026-12-01.md): builds
// test/kernels/emulator/emulator.cpp against ab/scale-<variant> with the flags test/kernels/emulator.test.ts uses
// (32 threads a block, a 256-word stage, the peer-parallel rule from 2 ranks) and runs twoshot-sentinel and
// twoshot-atomic through call sequences that take the spread path (small parts) and the serial path (large parts),
// in place and not. Every result must be exact, bitwise the same on all ranks, with the sentinel slots re-armed, the
// LL128 lines zero, the epochs counted and the guards intact. Usage, from the repository root after `npx tsc -b` and
// research/scripts/probe/make-scale-trees.sh:  node research/scripts/probe/scale-emu.mjs [variant ...]
import { execFile, execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { deviceBufferLayout, KERNEL_VARIANTS, launchShape } from '../../../packages/llcomm/dist/src/internal.js'

const THREADS = 32
const variants = process.argv.length > 2 ? process.argv.slice(2) : ['batch', 'spread']
const work = mkdtempSync(join(tmpdir(), 'scale-emu-'))
const emulatorDir = resolve('test/kernels/emulator')
const cases = []
for (const name of [
  'llcomm_twoshot_sentinel_sentinel_bf16_sum',
  'llcomm_twoshot_sentinel_sentinel_f32_sum',
  'llcomm_twoshot_sentinel_sentinel_f16_sum',
  'llcomm_twoshot_atomic_ll128_bf16_sum',
  'llcomm_twoshot_atomic_ll128_f32_sum',
]) {
  const v = KERNEL_VARIANTS.find((x) => x.kernelName === name)
  if (!v) throw new Error(`no kernel ${name}`)
  // 3 ranks: parts of 1-16 slots (spread) and max (serial); 8 and 16 ranks: the GPU's spread rule, several peers
  // per poller (8 ranks, 2 slots a part: 16 groups for 7 peers; 16 ranks, 8 slots: 4 groups, 4 peers a thread).
  cases.push({ v, nranks: 3, bufferBytes: 16384, calls: ['max', '1', '37:inplace', '5', 'max', '100', '200:inplace'] })
  cases.push({ v, nranks: 8, bufferBytes: 65536, calls: ['1000', '8', '333:inplace', '120'] })
  cases.push({ v, nranks: 16, bufferBytes: 65536, calls: ['512:inplace', '1024', '16', '4099'] })
  // 8 ranks on the serial path (parts of more than 8 slots at the emulator's 32 threads; serialbatch's thread groups
  // min(32 / slots, 7)), 16-bit counts (f32: half, the same bytes): 608 (10 slots: 3 groups, 2-3 owners a thread),
  // 1000 (16 slots: 2 groups), 8192 (128 slots: 1 group, 4 slots a thread), 3001 (47 slots, uneven parts), 40000 (5
  // blocks of 125 slots); with a 64 KB buffer, 2000 / 4099 / max (2, 5 and 16 blocks of 13-16 slots: 2 groups).
  if (name.startsWith('llcomm_twoshot_sentinel')) {
    const countOf = (c) => String(name.includes('_f32_') ? c / 2 : c)
    cases.push({ v, nranks: 8, bufferBytes: 1 << 20,
      calls: [countOf(608), `${countOf(1000)}:inplace`, countOf(8192), `${countOf(3002)}:inplace`, countOf(40000)] })
    cases.push({ v, nranks: 8, bufferBytes: 65536, calls: [countOf(2000), `${countOf(4098)}:inplace`, 'max'] })
  }
}
// A rank that never arrives: every launch must end with TIMEOUT (code 1), not hang (spread path: 24 and 120
// elements; serial: max).
for (const v of cases.filter((c) => c.nranks === 3).map((c) => c.v)) {
  cases.push({ v, nranks: 3, bufferBytes: 16384, calls: ['max'], absentRank: 1, timeoutMs: 300, expect: 1 })
  cases.push({ v, nranks: 3, bufferBytes: 16384, calls: ['24'], absentRank: 1, timeoutMs: 300, expect: 1 })
  cases.push({ v, nranks: 8, bufferBytes: 65536, calls: ['120'], absentRank: 1, timeoutMs: 300, expect: 1 })
  // the serial path at 8 ranks (2 groups; 1 group with slot loops)
  cases.push({ v, nranks: 8, bufferBytes: 65536, calls: ['1000'], absentRank: 1, timeoutMs: 300, expect: 1 })
  cases.push({ v, nranks: 8, bufferBytes: 1 << 20, calls: ['8192'], absentRank: 1, timeoutMs: 300, expect: 1 })
}
// A mismatched call: the last rank runs another kernel or count; every launch must end, with MISMATCH (code 2)
// expected. On the spread path the reduce-scatter waits are not armed (the note's gap), so this shows what happens.
const kernel = (name) => KERNEL_VARIANTS.find((x) => x.kernelName === name)
// The last three pairs: twoshot-sentinel's serial path at 8 ranks (1000 bf16 / 1000 f32: 16 slots a part, 2 groups).
for (const [main, count, odd, oddCount, nranks] of [
  ['llcomm_twoshot_sentinel_sentinel_f32_sum', 120, 'llcomm_twoshot_sentinel_sentinel_bf16_sum', 240, 8],
  ['llcomm_twoshot_sentinel_sentinel_bf16_sum', 240, 'llcomm_twoshot_sentinel_sentinel_bf16_sum', 248, 8],
  ['llcomm_twoshot_sentinel_sentinel_bf16_sum', 240, 'llcomm_oneshot_sentinel_sentinel_bf16_sum', 240, 8],
  ['llcomm_twoshot_atomic_ll128_f32_sum', 120, 'llcomm_twoshot_atomic_ll128_bf16_sum', 240, 8],
  ['llcomm_twoshot_sentinel_sentinel_f32_sum', 1000, 'llcomm_twoshot_sentinel_sentinel_bf16_sum', 2000, 8],
  ['llcomm_twoshot_sentinel_sentinel_bf16_sum', 1000, 'llcomm_twoshot_sentinel_sentinel_bf16_sum', 1008, 8],
  ['llcomm_twoshot_sentinel_sentinel_bf16_sum', 1000, 'llcomm_oneshot_sentinel_sentinel_bf16_sum', 1000, 8],
])
  cases.push({ v: kernel(main), nranks, bufferBytes: 65536, calls: [String(count)], timeoutMs: 2000, expect: 2,
    odd: { rank: nranks - 1, v: kernel(odd), count: oddCount } })
// The same with an error word per side (LLCOMM_EMU_SPLIT_ERROR: per-process mode, so each side must end by itself;
// the pairs of test/kernels/emulator.test.ts on twoshot-sentinel's spread path): MISMATCH expected in both words.
// Against oneshot-ll the odd rank writes nothing into the sentinel lanes: the spread path's waits for it end only
// because they are armed.
for (const [main, count, odd, oddCount, nranks] of [
  ['llcomm_twoshot_sentinel_sentinel_bf16_sum', 240, 'llcomm_twoshot_sentinel_sentinel_bf16_sum', 248, 8],
  ['llcomm_twoshot_sentinel_sentinel_f32_sum', 120, 'llcomm_twoshot_sentinel_sentinel_bf16_sum', 240, 8],
  ['llcomm_twoshot_sentinel_sentinel_bf16_sum', 240, 'llcomm_oneshot_sentinel_sentinel_bf16_sum', 240, 8],
  ['llcomm_twoshot_sentinel_sentinel_bf16_sum', 240, 'llcomm_oneshot_ll_ll8_bf16_sum', 240, 8],
  ['llcomm_twoshot_sentinel_sentinel_bf16_sum', 240, 'llcomm_twoshot_sentinel_sentinel_bf16_sum', 1000, 8],
  ['llcomm_twoshot_sentinel_sentinel_f16_sum', 1024, 'llcomm_twoshot_atomic_ll128_f16_sum', 1024, 16],
  // the serial path at 8 ranks (16 slots a part, 2 groups: the checker threads have nothing to reduce)
  ['llcomm_twoshot_sentinel_sentinel_bf16_sum', 1000, 'llcomm_twoshot_sentinel_sentinel_bf16_sum', 1008, 8],
  ['llcomm_twoshot_sentinel_sentinel_f32_sum', 1000, 'llcomm_twoshot_sentinel_sentinel_bf16_sum', 2000, 8],
  ['llcomm_twoshot_sentinel_sentinel_bf16_sum', 1000, 'llcomm_oneshot_ll_ll8_bf16_sum', 1000, 8],
])
  cases.push({ v: kernel(main), nranks, bufferBytes: 65536, calls: [String(count)], timeoutMs: 20000, expect: 2,
    splitError: true, odd: { rank: nranks - 1, v: kernel(odd), count: oddCount } })
function argsOf(c) {
  const L = deviceBufferLayout(c.nranks, c.bufferBytes)
  const max = launchShape(c.v, c.nranks, 1, c.bufferBytes).maxCountPerCall
  const calls = c.calls.map((s) => {
    const [countText, mode] = s.split(':')
    const count = countText === 'max' ? max : Math.min(max, Number(countText))
    const { blocksPerRank } = launchShape(c.v, c.nranks, count, c.bufferBytes)
    return `${count}:${blocksPerRank}${mode ? `:${mode}` : ''}`
  })
  return [
    c.v.kernelName,
    String(c.nranks),
    String(THREADS),
    String(c.timeoutMs ?? 120000),
    String(c.absentRank ?? -1),
    String(L.recvBufBytes),
    ...[L.ll, L.sentinel, L.ll128, L.plain].flatMap((r) => [String(r.offset), String(r.channelHalfBytes)]),
    ...calls,
  ]
}
function envOf(c) {
  const env = { ...process.env }
  if (c.odd) {
    const { blocksPerRank } = launchShape(c.odd.v, c.nranks, c.odd.count, c.bufferBytes)
    env.LLCOMM_EMU_ODD = `${c.odd.rank}:${c.odd.v.kernelName}:${c.odd.count}:${blocksPerRank}`
  }
  if (c.splitError) env.LLCOMM_EMU_SPLIT_ERROR = '1'
  else delete env.LLCOMM_EMU_SPLIT_ERROR
  return env
}
let failed = 0
for (const variant of variants) {
  const exe = join(work, `emu-${variant}`)
  const t0 = Date.now()
  execFileSync('g++', ['-std=c++20', '-O1', '-pthread', '-DLLCOMM_PEER_STAGE_WORDS=256', '-DLLCOMM_SPREAD_MIN_RANKS=2',
    '-I', resolve(`ab/scale-${variant}`), '-I', emulatorDir, join(emulatorDir, 'emulator.cpp'), '-o', exe], { stdio: 'inherit' })
  console.log(`${variant}: emulator built in ${((Date.now() - t0) / 1000).toFixed(1)} s`)
  for (const c of cases) {
    const t1 = Date.now()
    const out = await new Promise((res, rej) =>
      execFile(exe, argsOf(c), { timeout: 600_000, maxBuffer: 1 << 20, env: envOf(c) }, (err, stdout, stderr) =>
        err ? rej(new Error(`${err.message}\n${stderr}`)) : res(JSON.parse(stdout))),
    )
    // split error words: the odd rank's own word must say the same, found well before the 20 s deadline
    const bad = c.splitError ? out.error?.code !== c.expect || out.oddError?.code !== c.expect || out.seconds >= 15 :
      c.expect !== undefined ? out.error?.code !== c.expect : out.error?.code !== 0 || out.mismatches !== 0 || out.crossRankDiffs !== 0 || out.sentinelBytesNotArmed !== 0 ||
      out.ll128BytesNotZero !== 0 || out.badEpochs !== 0 || out.guardsBroken !== 0 || out.nanChecked === 0 || !out.ok
    if (bad) failed++
    console.log(`${bad ? 'FAIL' : 'ok  '} ${variant} ${c.v.kernelName} n=${c.nranks} calls=${c.calls.join(',')}${c.absentRank !== undefined ? ` absent=${c.absentRank}` : ''}` +
      `${c.odd ? ` odd=${c.odd.v.kernelName}:${c.odd.count}` : ''}${c.expect ? ` code=${out.error?.code} what=${out.error?.what}` : ''}` +
      `${c.splitError ? ` split: odd code=${out.oddError?.code} in ${out.seconds} s` : ''} ` +
      `(${((Date.now() - t1) / 1000).toFixed(1)} s)${bad ? ` ${JSON.stringify(out)}` : ''}`)
  }
}
rmSync(work, { recursive: true, force: true })
if (failed) {
  console.log(`${failed} emulated runs failed`)
  process.exit(1)
}
console.log('all emulated runs passed')
