// Host-emulator check of the pullag candidate (issue 22; research/notes/scale-2026-12-02-pullag.md): builds
// test/kernels/emulator/emulator.cpp against ab/scale-<variant> with the flags test/kernels/emulator.test.ts uses
// (32 threads a block, a 256-word stage, the peer-parallel rule from 2 ranks) and runs twoshot-sentinel bf16 / f16 /
// f32 on the serial path (parts of more than 8 slots at 32 threads) at 3 and 8 ranks, in place and not, alone and
// interleaved with oneshot-sentinel, oneshot-barrier and ring on the same buffers, scratch and epochs (the
// emulator's per-call kernel, CALL = COUNT:BLOCKS:MODE:KERNEL): ring writes into the next rank's plain region and
// oneshot-barrier into its own, where pullag publishes. Every result must be exact, bitwise the same on all ranks,
// with the sentinel slots re-armed, the epochs counted and the guards intact; an absent rank must end in TIMEOUT
// (code 1), a mismatched call in MISMATCH (code 2, also with an error word per side). It tests the logic, not the
// GPU memory model (the host is x86-TSO). Usage, from the repository root after `npm run build` and
// research/scripts/probe/make-scale-trees.sh:  node research/scripts/probe/pullag-emu.mjs [variant ...] (default pullag)
// pullgate (its all-gather pushes or pulls by size: llcTwoshotPulls): a variant `pullgate@N` builds ab/scale-pullgate
// with -DLLCOMM_TWOSHOT_PULL_MIN_SLOTS=N (`pullgate` alone: the GPU's 3072); each line then says how many of its
// channel launches took the spread path, the push and the pull (mirroring the kernel's choice), and the script adds
// runs that reach the pull at 3072 (8 ranks, 512 KB and 384 KB launches) and mismatched calls whose two sides take
// different branches (a push-sender against pull-waiters must end in MISMATCH, not hang).
import { execFile, execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { deviceBufferLayout, KERNEL_VARIANTS, launchShape } from '../../../packages/llcomm/dist/src/internal.js'

const THREADS = 32
const variants = process.argv.length > 2 ? process.argv.slice(2) : ['pullag']
const gated = variants.some((x) => x.startsWith('pullgate'))
const work = mkdtempSync(join(tmpdir(), 'pullag-emu-'))
const emulatorDir = resolve('test/kernels/emulator')
const kernel = (name) => {
  const v = KERNEL_VARIANTS.find((x) => x.kernelName === name)
  if (!v) throw new Error(`no kernel ${name}`)
  return v
}
const algs = { ts: 'twoshot_sentinel_sentinel', os: 'oneshot_sentinel_sentinel', ob: 'oneshot_barrier_barrier', ring: 'ring_flags' }
const of = (alg, dtype) => kernel(`llcomm_${algs[alg]}_${dtype}_sum`)
const cases = []
for (const dtype of ['bf16', 'f16', 'f32']) {
  const v = of('ts', dtype)
  const c16 = (c) => String(dtype === 'f32' ? c / 2 : c) // f32: half the count, the same bytes
  // Alone. 3 ranks, 16 KB: max = 160-slot parts (serial), 100 (spread). 8 ranks, 1 MB: 608 (10 slots a part),
  // 1000 (16), 8192 (128: 4 slots a thread), 3002 (47, uneven parts), 40000 (5 blocks of 125); 64 KB: 2000, 4098, max
  // (2, 5, 16 blocks).
  cases.push({ v, dtype, nranks: 3, bufferBytes: 16384, calls: ['max', '1', '37:inplace', 'max:inplace', '100', 'max'] })
  cases.push({ v, dtype, nranks: 8, bufferBytes: 1 << 20,
    calls: [c16(608), `${c16(1000)}:inplace`, c16(8192), `${c16(3002)}:inplace`, c16(40000)] })
  cases.push({ v, dtype, nranks: 8, bufferBytes: 65536, calls: [c16(2000), `${c16(4098)}:inplace`, 'max'] })
  // Interleaved with the algorithms that write the plain region (ring: the next rank's; oneshot-barrier: its own)
  // and with oneshot-sentinel (the sentinel region in another lane layout), both epoch parities between pullag calls.
  cases.push({ v, dtype, nranks: 8, bufferBytes: 1 << 20, calls: [
    c16(8192), `${c16(8192)}:copy:ring`, `${c16(8192)}:inplace`, `${c16(8192)}:copy:ob`, `${c16(8192)}:copy:ring`,
    c16(8192), `${c16(1000)}:copy:os`, `${c16(3002)}:inplace`, `${c16(40000)}:copy:ob`, c16(40000),
    `${c16(40000)}:inplace:ring`, `${c16(40000)}:copy:os`, `${c16(40000)}:inplace`, '120', c16(40000),
    `${c16(8192)}:copy:ob`, c16(8192)] })
  cases.push({ v, dtype, nranks: 3, bufferBytes: 16384, calls: [
    'max', 'max:copy:ring', 'max:inplace', 'max:copy:ob', 'max:copy:os', 'max', '100', 'max:inplace:ring',
    'max:copy:ob', 'max'] })
  // An absent rank: TIMEOUT, not a hang.
  cases.push({ v, dtype, nranks: 3, bufferBytes: 16384, calls: ['max'], absentRank: 1, timeoutMs: 300, expect: 1 })
  cases.push({ v, dtype, nranks: 8, bufferBytes: 1 << 20, calls: [c16(8192)], absentRank: 1, timeoutMs: 300, expect: 1 })
}
if (gated) {
  // The pull at the GPU's threshold (3072): 8 ranks, 1 MB buffer, 'max' = 16 channels of 256-slot parts (13 * 256 =
  // 3328: pull); 98304 = 12 channels of 128-slot parts (13 * 128 = 1664: push; 192 KB: the spread path at 512
  // threads, the serial one at 32);
  // interleaved with ring and oneshot-barrier on the same plain region.
  const v = of('ts', 'bf16')
  cases.push({ v, dtype: 'bf16', nranks: 8, bufferBytes: 1 << 20, calls: ['max', '98304:inplace', 'max:inplace',
    'max:copy:ob', 'max', 'max:inplace:ring', '98304', 'max'] })
}
// Mismatched calls on the serial path at 8 ranks (16 slots a part): MISMATCH, with one shared error word and with
// one per side (per-process mode).
for (const [main, count, odd, oddCount, splitCodes] of [
  ['llcomm_twoshot_sentinel_sentinel_bf16_sum', 1000, 'llcomm_twoshot_sentinel_sentinel_bf16_sum', 1008],
  ['llcomm_twoshot_sentinel_sentinel_f32_sum', 1000, 'llcomm_twoshot_sentinel_sentinel_bf16_sum', 2000],
  ['llcomm_twoshot_sentinel_sentinel_bf16_sum', 1000, 'llcomm_oneshot_sentinel_sentinel_bf16_sum', 1000],
  ['llcomm_twoshot_sentinel_sentinel_bf16_sum', 8192, 'llcomm_oneshot_barrier_barrier_bf16_sum', 8192],
  // pullgate at 1024: 128-slot parts pull (8192 bf16, 4096 f32), 64-slot parts push (4096 bf16, 2048 f32): each side
  // of the branch against the other (at 3072, and on the other trees, both push: an ordinary count mismatch). With a
  // word per side, the 16-bit side whose parts are the larger waits in its reduce-scatter for slots the odd rank
  // never sends: unarmed there (the gap, as against oneshot-barrier), so that side's word says TIMEOUT (what 2); the
  // last element gives the [others, odd] codes expected then.
  ['llcomm_twoshot_sentinel_sentinel_bf16_sum', 8192, 'llcomm_twoshot_sentinel_sentinel_bf16_sum', 4096, [1, 2]],
  ['llcomm_twoshot_sentinel_sentinel_bf16_sum', 4096, 'llcomm_twoshot_sentinel_sentinel_bf16_sum', 8192, [2, 1]],
  ['llcomm_twoshot_sentinel_sentinel_f32_sum', 4096, 'llcomm_twoshot_sentinel_sentinel_f32_sum', 2048, [2, 2]],
  ['llcomm_twoshot_sentinel_sentinel_f32_sum', 2048, 'llcomm_twoshot_sentinel_sentinel_f32_sum', 4096, [2, 2]],
]) {
  cases.push({ v: kernel(main), nranks: 8, bufferBytes: 1 << 20, calls: [String(count)], timeoutMs: 2000, expect: 2,
    odd: { rank: 7, v: kernel(odd), count: oddCount } })
  // Against oneshot-barrier (it sends no sentinel data) the others' 16-bit reduce-scatter waits are not armed
  // (LLCOMM_SIG_R2: signature.cuh's gap paragraph; the same on merged): with a word per side the others record
  // TIMEOUT (what = 2, a sentinel slot), which the host turns into MISMATCH from the packets; the odd rank MISMATCH.
  const gap = odd.includes('oneshot_barrier') && !main.includes('_f32_')
  const [others, oddCode] = splitCodes ?? [gap ? 1 : 2, 2]
  cases.push({ v: kernel(main), nranks: 8, bufferBytes: 1 << 20, calls: [String(count)], timeoutMs: 20000, expect: oddCode,
    expectOthers: others, splitError: true, odd: { rank: 7, v: kernel(odd), count: oddCount } })
}
// The kernel's choice per channel launch (twoshot_sentinel.cu: spread, else llcTwoshotPulls), for the log.
function branchesOf(c, minSlots) {
  const tally = { spread: 0, push: 0, pull: 0 }
  if (minSlots === undefined) return tally
  const n = c.nranks
  for (const s of c.calls) {
    const [countText, , alg] = s.split(':')
    if (alg) continue
    const eb = c.v.dtype === 'f32' ? 4 : 2, align = 16 / eb
    const max = launchShape(c.v, n, 1, c.bufferBytes).maxCountPerCall
    const count = countText === 'max' ? max : Math.min(max, Number(countText))
    const { blocksPerRank } = launchShape(c.v, n, count, c.bufferBytes)
    const per = Math.ceil(Math.ceil(count / blocksPerRank) / align) * align
    for (let ch = 0; ch < blocksPerRank; ch++) {
      const chan = Math.max(0, Math.min(count, per * (ch + 1)) - Math.min(count, per * ch))
      if (chan === 0) continue
      const partElems = Math.ceil(Math.ceil(chan / n) / align) * align
      const slots = Math.ceil((partElems * eb) / 16)
      const g = n < 2 || slots === 0 || slots >= THREADS || slots * 4 > 256 ? 1 : Math.min(Math.floor(THREADS / slots), n)
      if (g >= 4 && g > 1 && 4 * slots <= THREADS) tally.spread++
      else if (n > 1 && (2 * n - 3) * slots >= minSlots) tally.pull++
      else tally.push++
    }
  }
  return tally
}
function argsOf(c) {
  const L = deviceBufferLayout(c.nranks, c.bufferBytes)
  const calls = c.calls.map((s) => {
    const [countText, mode, alg] = s.split(':')
    const v = alg ? of(alg, c.v.dtype) : c.v
    const max = launchShape(v, c.nranks, 1, c.bufferBytes).maxCountPerCall
    const count = countText === 'max' ? max : Math.min(max, Number(countText))
    const { blocksPerRank } = launchShape(v, c.nranks, count, c.bufferBytes)
    return `${count}:${blocksPerRank}${mode ? `:${mode}` : ''}${alg ? `:${v.kernelName}` : ''}`
  })
  return [c.v.kernelName, String(c.nranks), String(THREADS), String(c.timeoutMs ?? Number(process.env.PULLAG_EMU_TIMEOUT_MS ?? 120000)), String(c.absentRank ?? -1),
    String(L.recvBufBytes), ...[L.ll, L.sentinel, L.ll128, L.plain].flatMap((r) => [String(r.offset), String(r.channelHalfBytes)]),
    ...calls]
}
function envOf(c) {
  const env = { ...process.env }
  delete env.LLCOMM_EMU_ODD
  delete env.LLCOMM_EMU_SPLIT_ERROR
  if (c.odd) {
    const { blocksPerRank } = launchShape(c.odd.v, c.nranks, c.odd.count, c.bufferBytes)
    env.LLCOMM_EMU_ODD = `${c.odd.rank}:${c.odd.v.kernelName}:${c.odd.count}:${blocksPerRank}`
  }
  if (c.splitError) env.LLCOMM_EMU_SPLIT_ERROR = '1'
  return env
}
let failed = 0, runs = 0
for (const variant of variants) {
  const [tree, thresholdText] = variant.split('@')
  const minSlots = tree.startsWith('pullgate') ? Number(thresholdText ?? 3072) : undefined
  const exe = join(work, `emu-${variant.replace('@', '-')}`)
  const t0 = Date.now()
  execFileSync('g++', ['-std=c++20', '-O1', '-pthread', '-DLLCOMM_PEER_STAGE_WORDS=256', '-DLLCOMM_SPREAD_MIN_RANKS=2',
    ...(thresholdText ? [`-DLLCOMM_TWOSHOT_PULL_MIN_SLOTS=${thresholdText}`] : []),
    '-I', resolve(`ab/scale-${tree}`), '-I', emulatorDir, join(emulatorDir, 'emulator.cpp'), '-o', exe], { stdio: 'inherit' })
  const tallyAll = { spread: 0, push: 0, pull: 0 }
  console.log(`${variant}: emulator built in ${((Date.now() - t0) / 1000).toFixed(1)} s`)
  let vFailed = 0
  for (const c of cases) {
    const t1 = Date.now()
    const out = await new Promise((res, rej) =>
      execFile(exe, argsOf(c), { timeout: 600_000, maxBuffer: 1 << 20, env: envOf(c) }, (err, stdout, stderr) =>
        err ? rej(new Error(`${err.message}\n${stderr}`)) : res(JSON.parse(stdout))),
    )
    runs++
    const bad = c.splitError ? out.error?.code !== (c.expectOthers ?? c.expect) || out.oddError?.code !== c.expect || out.seconds >= (c.expectOthers === 1 || c.expect === 1 ? 25 : 15) :
      c.expect !== undefined ? out.error?.code !== c.expect : out.error?.code !== 0 || out.mismatches !== 0 || out.crossRankDiffs !== 0 || out.sentinelBytesNotArmed !== 0 ||
      out.ll128BytesNotZero !== 0 || out.badEpochs !== 0 || out.guardsBroken !== 0 || out.nanChecked === 0 || !out.ok
    if (bad) vFailed++
    const b = branchesOf(c, minSlots)
    for (const k in b) tallyAll[k] += b[k]
    console.log(`${bad ? 'FAIL' : 'ok  '} ${variant} ${c.v.kernelName} n=${c.nranks} buf=${c.bufferBytes} calls=${c.calls.join(',')}${c.absentRank !== undefined ? ` absent=${c.absentRank}` : ''}` +
      `${c.odd ? ` odd=${c.odd.v.kernelName}:${c.odd.count}` : ''}${c.expect ? ` code=${out.error?.code} what=${out.error?.what}` : ''}` +
      `${c.splitError ? ` split: odd code=${out.oddError?.code} in ${out.seconds} s` : ''} ` +
      `${minSlots !== undefined ? `[spread ${b.spread} push ${b.push} pull ${b.pull}] ` : ''}(${((Date.now() - t1) / 1000).toFixed(1)} s)${bad ? ` ${JSON.stringify(out).slice(0, 400)}` : ''}`)
  }
  console.log(`${variant}: ${cases.length - vFailed} / ${cases.length} passed` +
    `${minSlots !== undefined ? ` (channel launches of ${tree}'s own calls: spread ${tallyAll.spread}, push ${tallyAll.push}, pull ${tallyAll.pull}; threshold ${minSlots})` : ''}`)
  failed += vFailed
}
rmSync(work, { recursive: true, force: true })
if (failed) {
  console.log(`${failed} of ${runs} emulated runs failed`)
  process.exit(1)
}
console.log('all emulated runs passed')
