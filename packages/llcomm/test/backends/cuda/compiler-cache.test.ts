// NVRTC cache key and on-disk cache behaviour, with a fake compiler (no GPU, no NVRTC needed).
import assert from 'node:assert/strict'
import { mkdirSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import { cacheKey, compileCubin, compileInputs, nvrtcOptions } from '../../../src/backends/cuda/compiler.js'

const base = {
  sourceFile: 'allreduce/x.cu',
  source: 'extern "C" __global__ void k() {}',
  headers: [{ name: 'llcomm/a.cuh', source: '#pragma once' }],
  options: nvrtcOptions('sm_90'),
  arch: 'sm_90',
  driverVersion: 13000,
  nvrtcVersion: '13.0',
}

test('the cache key changes with every input and only with them', () => {
  const k = cacheKey(base)
  assert.equal(cacheKey({ ...base }), k, 'deterministic')
  assert.match(k, /^[0-9a-f]{64}$/)
  const variants = [
    { ...base, source: `${base.source} ` },
    { ...base, headers: [{ name: 'llcomm/a.cuh', source: '#pragma once\n' }] },
    { ...base, headers: [{ name: 'llcomm/b.cuh', source: '#pragma once' }] },
    { ...base, options: nvrtcOptions('sm_90', ['-lineinfo']) },
    { ...base, arch: 'sm_100', options: nvrtcOptions('sm_100') },
    { ...base, driverVersion: 12080 },
    { ...base, nvrtcVersion: '12.8' },
    { ...base, sourceFile: 'allreduce/y.cu' },
  ]
  const keys = new Set([k, ...variants.map(cacheKey)])
  assert.equal(keys.size, variants.length + 1, 'every change gives a new key')
  // Length-prefixing: moving bytes between fields must not collide.
  assert.notEqual(
    cacheKey({ ...base, source: 'ab', sourceFile: 'c' }),
    cacheKey({ ...base, source: 'b', sourceFile: 'ca' }),
  )
})

test('nvrtcOptions carries the architecture and the contract options, and rejects a bad architecture', () => {
  assert.deepEqual(nvrtcOptions('sm_90').slice(0, 3), ['--gpu-architecture=sm_90', '-default-device', '--std=c++17'])
  assert.throws(() => nvrtcOptions('90'), /not an architecture/)
})

test('compileCubin compiles once, then loads from the cache; a changed source recompiles', () => {
  const kernels = mkdtempSync(join(tmpdir(), 'llcomm-kernels-'))
  const cacheDir = mkdtempSync(join(tmpdir(), 'llcomm-cache-'))
  mkdirSync(join(kernels, 'llcomm'))
  writeFileSync(join(kernels, 'main.cu'), '#include "llcomm/h.cuh"\n')
  writeFileSync(join(kernels, 'llcomm', 'h.cuh'), '#pragma once\n')
  const saved = process.env.LLCOMM_KERNELS_DIR
  process.env.LLCOMM_KERNELS_DIR = kernels
  try {
    let compiles = 0
    const fake = (src: string, _name: string, headers: { name: string; source: string }[], options: string[]) => {
      compiles++
      assert.ok(options.includes('--gpu-architecture=sm_90'))
      assert.deepEqual(
        headers.map((h) => h.name),
        ['llcomm/h.cuh'],
      )
      return { cubin: new TextEncoder().encode(`cubin of ${src}`), log: '' }
    }
    const req = {
      sourceFile: 'main.cu',
      headers: [{ name: 'llcomm/h.cuh', path: 'llcomm/h.cuh' }],
      arch: 'sm_90',
      driverVersion: 13000,
      nvrtcVersion: '13.0',
      cacheDir,
    }
    const a = compileCubin(req, fake)
    assert.equal(a.fromCache, false)
    const b = compileCubin(req, fake)
    assert.equal(b.fromCache, true)
    assert.deepEqual(b.cubin, a.cubin)
    assert.equal(compiles, 1)
    assert.equal(readdirSync(cacheDir).filter((f) => f.endsWith('.cubin')).length, 1)
    writeFileSync(join(kernels, 'llcomm', 'h.cuh'), '#pragma once\n// changed\n')
    const c = compileCubin(req, fake)
    assert.equal(c.fromCache, false, 'a header change invalidates the entry')
    assert.equal(compiles, 2)
    const d = compileCubin({ ...req, driverVersion: 13010 }, fake)
    assert.equal(d.fromCache, false, 'a driver change invalidates the entry')
  } finally {
    if (saved === undefined) delete process.env.LLCOMM_KERNELS_DIR
    else process.env.LLCOMM_KERNELS_DIR = saved
  }
})

test('a module is keyed by the headers it includes, transitively, and by no other file', () => {
  const dir = mkdtempSync(join(tmpdir(), 'llcomm-closure-'))
  mkdirSync(join(dir, 'llcomm'))
  mkdirSync(join(dir, 'tools'))
  const write = (name: string, text: string) => writeFileSync(join(dir, name), text)
  write('llcomm/a.cuh', '#pragma once\n#include "llcomm/b.cuh"\n')
  write('llcomm/b.cuh', '#pragma once\n// #include "llcomm/never.cuh" is a comment, not an include\n')
  write('llcomm/unrelated.cuh', '#pragma once\n')
  write('kernel.cu', '  #  include "llcomm/a.cuh"\nextern "C" __global__ void k() {}\n')
  // A tools kernel: its own header sits beside it, the library's come by include name.
  write('tools/step.cu', '#include "llcomm/b.cuh"\n#include "step_abi.cuh"\n')
  write('tools/step_abi.cuh', '#pragma once\n')
  const headers = ['llcomm/a.cuh', 'llcomm/b.cuh', 'llcomm/unrelated.cuh'].map((name) => ({
    name,
    path: join(dir, name),
  }))
  const request = {
    sourceFile: join(dir, 'kernel.cu'),
    headers,
    arch: 'sm_90',
    driverVersion: 13000,
    nvrtcVersion: '13.0',
  }
  const before = compileInputs(request)
  assert.deepEqual(
    before.headers.map((h) => h.name),
    ['llcomm/a.cuh', 'llcomm/b.cuh'],
  )
  write('llcomm/unrelated.cuh', '#pragma once\n// edited\n')
  assert.equal(compileInputs(request).key, before.key, 'editing a header the module does not include keeps its key')
  write('llcomm/b.cuh', '#pragma once\n// edited\n')
  assert.notEqual(compileInputs(request).key, before.key, 'editing one it includes through another changes it')
  const tools = compileInputs({ ...request, sourceFile: join(dir, 'tools/step.cu') })
  assert.deepEqual(
    tools.headers.map((h) => h.name),
    ['llcomm/b.cuh', 'step_abi.cuh'],
  )
})
