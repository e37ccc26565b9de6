/**
 * Source rules of kernels/ that no compiler checks: device headers compile under NVRTC (no host or toolkit headers:
 * every #include names a file of kernels/ itself), and every flag, fence, atomic and re-arm carries its ordering
 * argument in a comment (STYLE habit 4) — this test breaks when such a comment is removed.
 */

import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
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
