/**
 * Source rules of kernels/ that no compiler checks: device headers compile under NVRTC (no host or toolkit headers:
 * every #include names a file of kernels/ itself), and every flag, fence, atomic and re-arm carries its ordering
 * argument in a comment (STYLE habit 4) — this test breaks when such a comment is removed.
 */

import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { LLCOMM_THREADS } from '../../src/backends/cuda/abi.js'
import { kernelSources, kernelsDirectory } from '../../src/backends/cuda/kernel-table.js'

const files = kernelSources().map((s) => ({
  path: s.path,
  text: readFileSync(join(kernelsDirectory(), s.path), 'utf8'),
}))

test('kernels include only kernels/ files (NVRTC gets every header from kernelSources())', () => {
  const names = new Set(kernelSources().map((s) => s.name))
  for (const f of files) {
    for (const m of f.text.matchAll(/^\s*#\s*include\s*([<"])([^>"]+)[>"]/gm)) {
      assert.equal(m[1], '"', `${f.path} includes <${m[2]}>: no system headers under NVRTC`)
      assert.ok(
        names.has(m[2]),
        `${f.path} includes "${m[2]}", which is not a kernels/ file named relative to kernels/`,
      )
    }
  }
})

// Calls whose memory-ordering role must be explained next to them. ptx.cuh defines the wrappers (and explains
// each), so it is exempt; so are the tool kernels' measurement loops, whose orderings are the measured quantity.
const ORDERING_CALLS = [
  /llcStoreReleaseSys\(/,
  /llcLoadAcquireSys\(/,
  /llcRedAddReleaseSys\(/,
  /llcRedAddRelaxedSys\w*\(/,
  /llcFenceAcqRelSys\(/,
  /llcCasRelaxedSys\(/,
  /Fmt::rearm\(/,
  /lines\.reset\(/,
  /__syncwarp\(\)/,
]
const COMMENT_WINDOW = 6 // lines above the call that may hold its comment (an if-chain of dtype variants shares one)

test('every flag, fence, atomic and re-arm call has an ordering comment beside it', () => {
  let checked = 0
  for (const f of files) {
    if (f.path === 'llcomm/ptx.cuh' || f.path.startsWith('tools/')) continue
    const lines = f.text.split('\n')
    lines.forEach((line, i) => {
      const code = line.replace(/\/\/.*$/, '')
      if (/^\s*(LLC_DEVICE|static|template)/.test(code) && /\)\s*\{/.test(code) && !/;\s*$/.test(code)) return // a definition
      if (!ORDERING_CALLS.some((re) => re.test(code))) return
      checked++
      const window = lines.slice(Math.max(0, i - COMMENT_WINDOW), i + 1)
      assert.ok(
        window.some((l) => /\/\/ ?\S/.test(l)),
        `${f.path}:${i + 1}: '${line.trim()}' has no comment with its ordering argument within ${COMMENT_WINDOW} lines`,
      )
    })
  }
  assert.ok(checked >= 10, `only ${checked} ordering calls found: the patterns no longer match the sources`)
})

// The LL128 lines' release pattern (atomic_lines.cuh warpPublish()): the counter bumps are relaxed reds, so their
// release half is the fence before them, and the warp barrier before that carries every lane's adds to it. No
// test on the host can see a missing fence (the emulator's x86 atomics are ordered anyway), so the order of the
// three calls in the source is checked here: removing or moving the fence breaks this test.
test('the LL128 publish keeps __syncwarp, then the fence, then the relaxed counter bumps', () => {
  const lines = files.find((f) => f.path === 'llcomm/atomic_lines.cuh')
  assert.ok(lines, 'llcomm/atomic_lines.cuh is a kernel source')
  const code = lines.text.replace(/\/\/.*$/gm, '')
  const start = code.indexOf('void warpPublish(')
  assert.ok(start >= 0, 'warpPublish() is defined')
  const body = code.slice(start, code.indexOf('\n  }\n', start))
  const at = (call: string) => body.indexOf(call)
  assert.ok(at('__syncwarp()') >= 0, 'warpPublish() starts with the warp barrier')
  assert.ok(at('llcFenceAcqRelSys()') > at('__syncwarp()'), 'the fence comes after the warp barrier')
  assert.ok(at('llcRedAddRelaxedSysU32(') > at('llcFenceAcqRelSys()'), 'the counter bumps come after the fence')
  // add() only reduces data: a counter bump there would announce words no fence has ordered yet
  const addStart = code.indexOf('void add(')
  const addBody = code.slice(addStart, code.indexOf('\n  }\n', addStart))
  assert.ok(addStart >= 0 && !/llcRedAdd\w*U32\(|llcRedAddReleaseSys\(/.test(addBody), 'add() bumps no counter')
  const kernel = files.find((f) => f.path === 'allreduce/twoshot_atomic.cu')
  assert.ok(kernel && kernel.text.indexOf('lines.warpPublish(') > kernel.text.lastIndexOf('lines.add('))
})

// The norm passes sum their per-thread partials with a compile-time thread count (rmsnorm.cuh llcNormThreads:
// LLCOMM_THREADS on the GPU), so every kernel that normalizes must be launched with exactly that many threads: a
// launch of another block size would sum partials that are not there, silently. Those kernels are launched by
// fused-launcher.ts only, whose every launch shape is checked here, and the constant is abi.cuh's.
test('every kernel that normalizes is launched with LLCOMM_THREADS threads, the count the norm passes assume', () => {
  const launcher = readFileSync(join(kernelsDirectory(), '..', 'src', 'backends', 'cuda', 'fused-launcher.ts'), 'utf8')
  const shapes = [...launcher.matchAll(/blockDimX:\s*([^,}\s]+)/g)].map((m) => m[1])
  assert.ok(shapes.length >= 2, 'fused-launcher.ts builds its launches with a blockDimX')
  for (const s of shapes) assert.equal(s, 'LLCOMM_THREADS', `fused-launcher.ts launches a block of ${s}`)
  const abi = files.find((f) => f.path === 'llcomm/abi.cuh')
  assert.ok(abi, 'llcomm/abi.cuh is a kernel source')
  const define = /#define LLCOMM_THREADS (\d+)/.exec(abi.text)
  assert.equal(Number(define?.[1]), LLCOMM_THREADS)
  const norm = files.find((f) => f.path === 'llcomm/rmsnorm.cuh')
  assert.ok(
    norm && /llcNormThreads\(\) \{ return LLCOMM_THREADS; \}/.test(norm.text),
    'the GPU thread count is LLCOMM_THREADS',
  )
})
