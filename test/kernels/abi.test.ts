/**
 * The ABI check: compiles a host program that includes the library's kernels/llcomm/abi.cuh and the tools'
 * kernels/tools_abi.cuh (host-includable by contract) and prints offsetof/sizeof of every field of every parameter
 * struct and every shared constant as JSON, then compares with the layout tables the packers use (the library's
 * src/backends/cuda/abi.ts, the tools' src/kernels/abi.ts).
 */

import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import {
  ALL_REDUCE_PARAMS_LAYOUT,
  deviceBufferLayout,
  kernelsDirectory,
  ABI_CONSTANTS as LIBRARY_ABI_CONSTANTS,
  ABI_STRUCTS as LIBRARY_ABI_STRUCTS,
  packAllReduceParams,
  packStressParams,
  STRESS_PARAMS_LAYOUT,
} from 'llcomm/internal'
import { TOOLS_ABI_CONSTANTS, TOOLS_ABI_STRUCTS } from '../../packages/tools/dist/src/kernels/abi.js'
import { TOOLS_KERNELS_DIR } from '../../packages/tools/dist/src/kernels/table.js'
import { findHostCxx, SKIP_NVCC } from './toolchain.js'

const ABI_STRUCTS = [...LIBRARY_ABI_STRUCTS, ...TOOLS_ABI_STRUCTS]
const ABI_CONSTANTS = { ...LIBRARY_ABI_CONSTANTS, ...TOOLS_ABI_CONSTANTS }

function hostProgram(): string {
  const lines: string[] = [
    '#include <cstddef>',
    '#include <cstdio>',
    '#include "llcomm/abi.cuh"',
    '#include "tools_abi.cuh"',
    'int main() {',
    '  std::printf("{\\"structs\\":{");',
  ]
  ABI_STRUCTS.forEach((s, i) => {
    lines.push(
      `  std::printf("%s\\"${s.cName}\\":{\\"bytes\\":%zu,\\"fields\\":{", ${i ? '","' : '""'}, sizeof(${s.cName}));`,
    )
    s.fields.forEach((f, j) => {
      const member = f.name // nested fields are written outer.inner, which offsetof accepts as a member designator
      lines.push(
        `  std::printf("%s\\"${f.name}\\":[%zu,%zu]", ${j ? '","' : '""'}, offsetof(${s.cName}, ${member}), sizeof(((${s.cName}*)0)->${member}));`,
      )
    })
    lines.push('  std::printf("}}");')
  })
  lines.push('  std::printf("},\\"constants\\":{");')
  Object.keys(ABI_CONSTANTS).forEach((name, i) => {
    lines.push(`  std::printf("%s\\"${name}\\":%llu", ${i ? '","' : '""'}, (unsigned long long)(${name}));`)
  })
  lines.push('  std::printf("}}\\n");', '  return 0;', '}')
  return lines.join('\n')
}

test('abi.ts layouts match offsetof/sizeof of abi.cuh compiled on the host', (t) => {
  const cxx = findHostCxx()
  if (!cxx) {
    if (SKIP_NVCC) return t.skip('no host C++ compiler and LLCOMM_SKIP_NVCC=1')
    throw new Error('no C++ compiler (g++, c++, clang++ or nvcc) for the ABI check')
  }
  const work = mkdtempSync(join(tmpdir(), 'llcomm-abi-'))
  try {
    const src = join(work, 'abi_layout.cpp')
    const exe = join(work, 'abi_layout')
    writeFileSync(src, hostProgram())
    const isNvcc = cxx.endsWith('nvcc')
    execFileSync(
      cxx,
      [
        ...(isNvcc ? ['-x', 'c++'] : []),
        '-std=c++17',
        '-I',
        kernelsDirectory(),
        '-I',
        TOOLS_KERNELS_DIR,
        src,
        '-o',
        exe,
      ],
      {
        stdio: 'pipe',
      },
    )
    const got = JSON.parse(execFileSync(exe, { encoding: 'utf8' })) as {
      structs: Record<string, { bytes: number; fields: Record<string, [number, number]> }>
      constants: Record<string, number>
    }
    for (const s of ABI_STRUCTS) {
      const c = got.structs[s.cName]
      assert.ok(c, `${s.cName} missing from the host program's output`)
      assert.equal(s.bytes, c.bytes, `sizeof(${s.cName})`)
      assert.deepEqual(
        Object.keys(c.fields),
        s.fields.map((f) => f.name),
      )
      for (const f of s.fields)
        assert.deepEqual([f.offset, f.bytes], c.fields[f.name], `${s.cName}.${f.name} [offset, bytes]`)
    }
    for (const [name, value] of Object.entries(ABI_CONSTANTS))
      assert.equal(got.constants[name], value, `constant ${name}`)
  } finally {
    rmSync(work, { recursive: true, force: true })
  }
})

test('abi.cuh and tools_abi.cuh declare exactly the fields abi.ts lays out, in the same order and with the same element types', () => {
  // The offsetof program is generated from abi.ts's field list, so a field that exists only in the header would be
  // seen only through sizeof (and not at all when padding hides it). Read the declarations from the header itself.
  const header = [join(kernelsDirectory(), 'llcomm', 'abi.cuh'), join(TOOLS_KERNELS_DIR, 'tools_abi.cuh')]
    .map((p) => readFileSync(p, 'utf8'))
    .join('\n')
  const nested: Record<string, string[]> = { LlcommRegion: ['offset', 'channelHalfBytes'] }
  const kinds: Record<string, string> = { llc_u8: 'u8', llc_u32: 'u32', llc_u64: 'u64' }
  for (const s of ABI_STRUCTS) {
    const body = new RegExp(`struct ${s.cName} \\{([^}]*)\\};`).exec(header)?.[1]
    assert.ok(body, `struct ${s.cName} not found in abi.cuh or tools_abi.cuh`)
    const declared: string[] = []
    for (const m of body.replace(/\/\/[^\n]*/g, '').matchAll(/(\w+)\s+(\w+)(?:\[[^\]]+\])?\s*;/g)) {
      const [, type, name] = m
      if (nested[type]) for (const inner of nested[type]) declared.push(`${name}.${inner}:u64`)
      else declared.push(`${name}:${kinds[type] ?? type}`)
    }
    assert.deepEqual(
      declared,
      s.fields.map((f) => `${f.name}:${f.kind}`),
      `fields of ${s.cName}`,
    )
  }
})

test('packAllReduceParams writes every field at its offset, little-endian', () => {
  const layout = deviceBufferLayout(4)
  const buf = packAllReduceParams({
    input: [0x1000n, 0x2000n, 0x3000n, 0x4000n],
    output: [0x5000n, 0x6000n, 0x7000n, 0x8000n],
    recvBuf: [0x10000n, 0x20000n, 0x30000n, 0x40000n],
    scratch: [0x11000n, 0x21000n, 0x31000n, 0x41000n],
    errorWord: 0xabcdef00n,
    count: 12345,
    timeoutNs: 10_000_000_000n,
    ll: layout.ll,
    sentinel: layout.sentinel,
    ll128: layout.ll128,
    plain: layout.plain,
    nranks: 4,
    ranksInLaunch: 2,
    blocksPerRank: 3,
    launchRanks: [2, 3],
  })
  const L = ALL_REDUCE_PARAMS_LAYOUT.byName
  assert.equal(buf.length, ALL_REDUCE_PARAMS_LAYOUT.bytes)
  assert.equal(buf.readBigUInt64LE(L.input.offset + 8), 0x2000n)
  assert.equal(buf.readBigUInt64LE(L.output.offset + 24), 0x8000n)
  assert.equal(buf.readBigUInt64LE(L.recvBuf.offset), 0x10000n)
  assert.equal(buf.readBigUInt64LE(L.scratch.offset + 16), 0x31000n)
  assert.equal(buf.readBigUInt64LE(L.input.offset + 8 * 4), 0n, 'unused rank slots stay zero')
  assert.equal(buf.readBigUInt64LE(L.errorWord.offset), 0xabcdef00n)
  assert.equal(buf.readBigUInt64LE(L.count.offset), 12345n)
  assert.equal(buf.readBigUInt64LE(L.timeoutNs.offset), 10_000_000_000n)
  assert.equal(Number(buf.readBigUInt64LE(L['sentinel.offset'].offset)), layout.sentinel.offset)
  assert.equal(Number(buf.readBigUInt64LE(L['plain.channelHalfBytes'].offset)), layout.plain.channelHalfBytes)
  assert.equal(buf.readUInt32LE(L.nranks.offset), 4)
  assert.equal(buf.readUInt32LE(L.ranksInLaunch.offset), 2)
  assert.equal(buf.readUInt32LE(L.blocksPerRank.offset), 3)
  assert.deepEqual([...buf.subarray(L.launchRanks.offset, L.launchRanks.offset + 3)], [2, 3, 0])
})

test('packers reject values the struct cannot hold', () => {
  const layout = deviceBufferLayout(2)
  const base = {
    input: [0n, 0n],
    output: [0n, 0n],
    recvBuf: [16n, 32n],
    scratch: [48n, 64n],
    errorWord: 0n,
    count: 1,
    timeoutNs: 1,
    ll: layout.ll,
    sentinel: layout.sentinel,
    ll128: layout.ll128,
    plain: layout.plain,
    nranks: 2,
    ranksInLaunch: 1,
    blocksPerRank: 1,
    launchRanks: [0],
  }
  assert.throws(() => packAllReduceParams({ ...base, input: [8n, 0n] }), { code: 'MISALIGNED_BUFFER' })
  assert.throws(() => packAllReduceParams({ ...base, launchRanks: [2] }), { code: 'INVALID_ARGUMENT' })
  assert.throws(() => packAllReduceParams({ ...base, blocksPerRank: 17 }), { code: 'INVALID_ARGUMENT' })
  assert.throws(() => packAllReduceParams({ ...base, recvBuf: [16n] }), { code: 'INVALID_ARGUMENT' })
  assert.throws(() => packAllReduceParams({ ...base, count: -1 }), { code: 'INVALID_ARGUMENT' })
  const stress = packStressParams({
    packets: 0x100n,
    counters: 0x200n,
    timeoutNs: 5,
    numPackets: 7,
    iters: 9,
    layout: 1,
    writerRank: 0,
    readerRank: 1,
    blocksPerRank: 2,
    ranksInLaunch: 2,
    launchRanks: [0, 1],
  })
  assert.equal(stress.length, STRESS_PARAMS_LAYOUT.bytes)
  assert.equal(stress.readUInt32LE(STRESS_PARAMS_LAYOUT.byName.layout.offset), 1)
})
