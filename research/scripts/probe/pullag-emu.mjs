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
import { execFile, execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { deviceBufferLayout, KERNEL_VARIANTS, launchShape } from '../../../packages/llcomm/dist/src/internal.js'

const THREADS = 32
const variants = process.argv.length > 2 ? process.argv.slice(2) : ['pullag']
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
// Mismatched calls on the serial path at 8 ranks (16 slots a part): MISMATCH, with one shared error word and with
// one per side (per-process mode).
for (const [main, count, odd, oddCount] of [
  ['llcomm_twoshot_sentinel_sentinel_bf16_sum', 1000, 'llcomm_twoshot_sentinel_sentinel_bf16_sum', 1008],
  ['llcomm_twoshot_sentinel_sentinel_f32_sum', 1000, 'llcomm_twoshot_sentinel_sentinel_bf16_sum', 2000],
  ['llcomm_twoshot_sentinel_sentinel_bf16_sum', 1000, 'llcomm_oneshot_sentinel_sentinel_bf16_sum', 1000],
  ['llcomm_twoshot_sentinel_sentinel_bf16_sum', 8192, 'llcomm_oneshot_barrier_barrier_bf16_sum', 8192],
]) {
  cases.push({ v: kernel(main), nranks: 8, bufferBytes: 1 << 20, calls: [String(count)], timeoutMs: 2000, expect: 2,
    odd: { rank: 7, v: kernel(odd), count: oddCount } })
  // Against oneshot-barrier (it sends no sentinel data) the others' 16-bit reduce-scatter waits are not armed
  // (LLCOMM_SIG_R2: signature.cuh's gap paragraph; the same on merged): with a word per side the others record
  // TIMEOUT (what = 2, a sentinel slot), which the host turns into MISMATCH from the packets; the odd rank MISMATCH.
  const gap = odd.includes('oneshot_barrier') && !main.includes('_f32_')
  cases.push({ v: kernel(main), nranks: 8, bufferBytes: 1 << 20, calls: [String(count)], timeoutMs: 20000, expect: 2,
    expectOthers: gap ? 1 : 2, splitError: true, odd: { rank: 7, v: kernel(odd), count: oddCount } })
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
  const exe = join(work, `emu-${variant}`)
  const t0 = Date.now()
  execFileSync('g++', ['-std=c++20', '-O1', '-pthread', '-DLLCOMM_PEER_STAGE_WORDS=256', '-DLLCOMM_SPREAD_MIN_RANKS=2',
    '-I', resolve(`ab/scale-${variant}`), '-I', emulatorDir, join(emulatorDir, 'emulator.cpp'), '-o', exe], { stdio: 'inherit' })
  console.log(`${variant}: emulator built in ${((Date.now() - t0) / 1000).toFixed(1)} s`)
  let vFailed = 0
  for (const c of cases) {
    const t1 = Date.now()
    const out = await new Promise((res, rej) =>
      execFile(exe, argsOf(c), { timeout: 600_000, maxBuffer: 1 << 20, env: envOf(c) }, (err, stdout, stderr) =>
        err ? rej(new Error(`${err.message}\n${stderr}`)) : res(JSON.parse(stdout))),
    )
    runs++
    const bad = c.splitError ? out.error?.code !== (c.expectOthers ?? c.expect) || out.oddError?.code !== c.expect || out.seconds >= (c.expectOthers === 1 ? 25 : 15) :
      c.expect !== undefined ? out.error?.code !== c.expect : out.error?.code !== 0 || out.mismatches !== 0 || out.crossRankDiffs !== 0 || out.sentinelBytesNotArmed !== 0 ||
      out.ll128BytesNotZero !== 0 || out.badEpochs !== 0 || out.guardsBroken !== 0 || out.nanChecked === 0 || !out.ok
    if (bad) vFailed++
    console.log(`${bad ? 'FAIL' : 'ok  '} ${variant} ${c.v.kernelName} n=${c.nranks} buf=${c.bufferBytes} calls=${c.calls.join(',')}${c.absentRank !== undefined ? ` absent=${c.absentRank}` : ''}` +
      `${c.odd ? ` odd=${c.odd.v.kernelName}:${c.odd.count}` : ''}${c.expect ? ` code=${out.error?.code} what=${out.error?.what}` : ''}` +
      `${c.splitError ? ` split: odd code=${out.oddError?.code} in ${out.seconds} s` : ''} ` +
      `(${((Date.now() - t1) / 1000).toFixed(1)} s)${bad ? ` ${JSON.stringify(out).slice(0, 400)}` : ''}`)
  }
  console.log(`${variant}: ${cases.length - vFailed} / ${cases.length} passed`)
  failed += vFailed
}
rmSync(work, { recursive: true, force: true })
if (failed) {
  console.log(`${failed} of ${runs} emulated runs failed`)
  process.exit(1)
}
console.log('all emulated runs passed')
