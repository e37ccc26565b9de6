/**
 * Compiles every kernel source with nvcc for sm_90 (one nvcc per .cu, two at a time), checks that every name of
 * the instantiation table and of the tool table is a global function of its cubin (and that no cubin holds an
 * llcomm_* kernel the tables do not list), and checks ptxas's resource report: no kernel may have a stack frame or
 * spill. Why that check is fair: the kernels are built for one 512-thread block per SM (up to 128 registers), every
 * latency-critical value (recvReduce's batch of received packets, the f32 accumulators) is meant to live in
 * registers, and a spill or a run-time-indexed register array would put local-memory round trips on the critical
 * path of a microsecond-scale collective. All kernels compile to 0 bytes of stack today.
 */

import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { isAbsolute, join } from 'node:path'
import { test } from 'node:test'
import {
  accumulationBuild,
  FUSED_KERNELS,
  FUSED_PROBE_KERNELS,
  FUSED_PROBE_SOURCE,
  KERNEL_VARIANTS,
  kernelBuildDefines,
  kernelsDirectory,
  TOOL_KERNELS as SUPPORT_KERNELS,
} from 'llcomm/internal'
import { TOOLS_KERNELS } from '../../packages/tools/dist/src/kernels/table.js'

/** Every kernel of both packages: the library's collectives and support kernels, the tools' kernels. */
const TOOL_KERNELS = [...SUPPORT_KERNELS, ...TOOLS_KERNELS]

import { elfSymbols } from './elf-symbols.js'
import { type KernelResources, parsePtxasReport } from './ptxas-report.js'
import { nvccVersion, requireNvcc } from './toolchain.js'

const ARCH = 'sm_90'
const CONCURRENCY = 2

function run(cmd: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(cmd, args, { maxBuffer: 64 << 20 }, (err, stdout, stderr) => {
      const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : 1) : 0
      resolve({ code, stdout, stderr })
    })
  })
}

async function mapLimited<T, R>(items: readonly T[], limit: number, f: (x: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length)
  let next = 0
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) {
        const i = next++
        out[i] = await f(items[i])
      }
    }),
  )
  return out
}

// The bench-only probe kernels of the split fused kernels (fused-launcher.ts FUSED_PROBE_KERNELS).
const PROBE_KERNELS = FUSED_PROBE_KERNELS.map((kernelName) => ({ kernelName, sourceFile: FUSED_PROBE_SOURCE }))

test('every kernel of the tables compiles with nvcc, is in its cubin, and does not spill', async (t) => {
  const tool = requireNvcc()
  if ('skip' in tool) {
    t.skip(tool.skip)
    return
  }
  const dir = kernelsDirectory()
  const sources = [
    ...new Set([
      ...KERNEL_VARIANTS.map((v) => v.sourceFile),
      ...TOOL_KERNELS.map((k) => k.sourceFile),
      ...FUSED_KERNELS.map((k) => k.sourceFile),
      FUSED_PROBE_SOURCE,
    ]),
  ].sort()
  const expected = new Map<string, string[]>()
  for (const k of [...KERNEL_VARIANTS, ...TOOL_KERNELS, ...FUSED_KERNELS, ...PROBE_KERNELS])
    expected.set(k.sourceFile, [...(expected.get(k.sourceFile) ?? []), k.kernelName])
  const work = mkdtempSync(join(tmpdir(), 'llcomm-nvcc-'))
  const started = Date.now()
  try {
    const results = await mapLimited(sources, CONCURRENCY, async (src) => {
      const cubin = join(work, `${src.replace(/[/.]/g, '_')}.cubin`)
      const args = [
        '-arch',
        ARCH,
        '-cubin',
        '-std=c++17',
        '-Xptxas',
        '-v',
        '-I',
        dir,
        isAbsolute(src) ? src : join(dir, src),
        '-o',
        cubin,
      ]
      const r = await run(tool.nvcc, args)
      return { src, cubin, ...r }
    })
    const resources: (KernelResources & { source: string })[] = []
    for (const r of results) {
      assert.equal(r.code, 0, `nvcc failed on kernels/${r.src}:\n${r.stderr}`)
      assert.doesNotMatch(r.stderr, /warning/i, `nvcc warned on kernels/${r.src}:\n${r.stderr}`)
      const syms = elfSymbols(readFileSync(r.cubin))
      const kernels = new Set(
        syms.filter((s) => s.type === 2 && s.binding === 1 && s.name.startsWith('llcomm_')).map((s) => s.name),
      )
      for (const name of expected.get(r.src) ?? []) {
        assert.ok(kernels.has(name), `kernel ${name} (table) is not a global function of kernels/${r.src}'s cubin`)
      }
      for (const name of kernels) {
        assert.ok((expected.get(r.src) ?? []).includes(name), `kernels/${r.src} defines ${name}, which no table lists`)
      }
      for (const k of parsePtxasReport(r.stderr)) resources.push({ ...k, source: r.src })
    }
    const seconds = (Date.now() - started) / 1000
    const reportPath = join(tmpdir(), 'llcomm-kernel-resources.json')
    writeFileSync(
      reportPath,
      `${JSON.stringify({ nvcc: nvccVersion(tool.nvcc), arch: ARCH, seconds, kernels: resources }, null, 2)}\n`,
    )
    const regs = resources.map((k) => k.registers)
    t.diagnostic(
      `${sources.length} sources, ${resources.length} kernels compiled in ${seconds.toFixed(1)} s; registers ${Math.min(...regs)}..${Math.max(...regs)}; report ${reportPath}`,
    )
    const everyName = [...KERNEL_VARIANTS, ...TOOL_KERNELS, ...FUSED_KERNELS, ...PROBE_KERNELS].map((k) => k.kernelName)
    for (const name of everyName)
      assert.ok(
        resources.some((k) => k.kernel === name),
        `ptxas reported nothing for ${name}`,
      )
    for (const k of resources) {
      assert.ok(k.registers > 0 && k.registers <= 128, `${k.kernel}: ${k.registers} registers`)
      assert.equal(
        k.stackFrameBytes,
        0,
        `${k.kernel} (kernels/${k.source}) has a ${k.stackFrameBytes}-byte stack frame`,
      )
      assert.equal(k.spillStoreBytes + k.spillLoadBytes, 0, `${k.kernel} (kernels/${k.source}) spills registers`)
    }
  } finally {
    rmSync(work, { recursive: true, force: true })
  }
})

// The communicator option `accumulation: 'dtype'` compiles ring and twoshot-atomic with other abi.cuh switches
// (kernel-table.ts kernelBuildDefines): those builds must compile without spills too, and the switch must reach the
// code: the default twoshot-atomic adds f16/bf16 with red.add.f32 only, the 16-bit build with packed red.add.
test("the 16-bit accumulation builds (accumulation: 'dtype') compile, do not spill, and use packed 16-bit red.add", async (t) => {
  const tool = requireNvcc()
  if ('skip' in tool) {
    t.skip(tool.skip)
    return
  }
  const dir = kernelsDirectory()
  const defines = kernelBuildDefines(accumulationBuild('dtype'))
  assert.deepEqual(defines, ['-DLLCOMM_RING_F32_PARTIALS=0', '-DLLCOMM_ATOMIC_F32_LINES=0'])
  assert.deepEqual(kernelBuildDefines(accumulationBuild('f32')), [], 'the default build needs no -D (same cache key)')
  const work = mkdtempSync(join(tmpdir(), 'llcomm-nvcc16-'))
  try {
    const jobs = ['allreduce/twoshot_atomic.cu', 'allreduce/ring.cu'].flatMap((src) =>
      [defines, []].map((d) => ({ src, d })),
    )
    const results = await mapLimited(jobs, CONCURRENCY, async ({ src, d }) => {
      const base = join(work, `${src.replace(/[/.]/g, '_')}${d.length ? '_16' : ''}`)
      const common = ['-arch', ARCH, '-std=c++17', ...d, '-I', dir, join(dir, src)]
      const cubin = await run(tool.nvcc, ['-cubin', '-Xptxas', '-v', ...common, '-o', `${base}.cubin`])
      const ptx = await run(tool.nvcc, ['-ptx', ...common, '-o', `${base}.ptx`])
      return { src, d, cubin, ptx: ptx.code === 0 ? readFileSync(`${base}.ptx`, 'utf8') : ptx.stderr }
    })
    for (const r of results) {
      const what = `kernels/${r.src} ${r.d.join(' ') || '(default)'}`
      assert.equal(r.cubin.code, 0, `nvcc failed on ${what}:\n${r.cubin.stderr}`)
      assert.doesNotMatch(r.cubin.stderr, /warning/i, `nvcc warned on ${what}:\n${r.cubin.stderr}`)
      const kernels = parsePtxasReport(r.cubin.stderr)
      assert.ok(kernels.length >= 3, `${what}: ptxas reported ${kernels.length} kernels`)
      for (const k of kernels) {
        assert.ok(k.registers > 0 && k.registers <= 128, `${k.kernel} (${what}): ${k.registers} registers`)
        assert.equal(k.stackFrameBytes + k.spillStoreBytes + k.spillLoadBytes, 0, `${k.kernel} (${what}) spills`)
      }
      if (r.src.includes('twoshot_atomic')) {
        const packed = /red\.[a-z.]*add\.noftz\.(bf16x2|f16x2)/.test(r.ptx)
        assert.equal(packed, r.d.length > 0, `${what}: packed 16-bit red.add ${packed ? 'present' : 'absent'}`)
        assert.match(r.ptx, /red\.[a-z.]*add\.f32/, `${what}: red.add.f32 (the f32 kernel, and the f32 lines)`)
      }
    }
  } finally {
    rmSync(work, { recursive: true, force: true })
  }
})

// The per-process communicator builds the fused kernels with their signature cluster (kernel-table.ts
// kernelBuildDefines fusedSignatureCluster, llcomm/fused_signature.cuh): that build must compile without spills too,
// and the signature cluster must reach the code (its blocks publish packets: the fused PTX gains the signature
// block's 16-byte system-scope stores, absent from the in-process build).
test('the per-process fused build (LLCOMM_FUSED_SIG_CLUSTER) compiles, does not spill, and carries the signature cluster', async (t) => {
  const tool = requireNvcc()
  if ('skip' in tool) {
    t.skip(tool.skip)
    return
  }
  const dir = kernelsDirectory()
  const defines = kernelBuildDefines({ fusedSignatureCluster: true })
  assert.deepEqual(defines, ['-DLLCOMM_FUSED_SIG_CLUSTER=1'])
  const work = mkdtempSync(join(tmpdir(), 'llcomm-nvccsig-'))
  const sources = [
    'fused_rmsnorm_oneshot.cu',
    'fused_rmsnorm_twoshot.cu',
    'fused_rmsnorm_split.cu',
    'fused_rmsnorm_split_ll.cu',
    'fused_rmsnorm_split_push.cu',
    'fused_rmsnorm_split_ll_push.cu',
    'fused_rmsnorm_split_twoshot.cu',
    // allReduceMany's signature block (one block after the data blocks), under the same define
    'allreduce_many.cu',
  ].map((f) => `allreduce/${f}`)
  try {
    const jobs = sources.flatMap((src) => [defines, []].map((d) => ({ src, d })))
    const results = await mapLimited(jobs, CONCURRENCY, async ({ src, d }) => {
      const base = join(work, `${src.replace(/[/.]/g, '_')}${d.length ? '_sig' : ''}`)
      const common = ['-arch', ARCH, '-std=c++17', ...d, '-I', dir, join(dir, src)]
      const cubin = await run(tool.nvcc, ['-cubin', '-Xptxas', '-v', ...common, '-o', `${base}.cubin`])
      const ptx = await run(tool.nvcc, ['-ptx', ...common, '-o', `${base}.ptx`])
      return { src, d, cubin, ptx: ptx.code === 0 ? readFileSync(`${base}.ptx`, 'utf8') : ptx.stderr }
    })
    const systemStores = (ptx: string) => (ptx.match(/st\.relaxed\.sys(\.global)?\.v2\.u64/g) ?? []).length
    for (const src of sources) {
      const [sig, plain] = [true, false].map((withSig) =>
        results.find((r) => r.src === src && r.d.length > 0 === withSig),
      )
      for (const r of [sig, plain]) {
        assert.ok(r)
        const what = `kernels/${r.src} ${r.d.join(' ') || '(default)'}`
        assert.equal(r.cubin.code, 0, `nvcc failed on ${what}:\n${r.cubin.stderr}`)
        assert.doesNotMatch(r.cubin.stderr, /warning/i, `nvcc warned on ${what}:\n${r.cubin.stderr}`)
        for (const k of parsePtxasReport(r.cubin.stderr)) {
          assert.ok(k.registers > 0 && k.registers <= 128, `${k.kernel} (${what}): ${k.registers} registers`)
          assert.equal(k.stackFrameBytes + k.spillStoreBytes + k.spillLoadBytes, 0, `${k.kernel} (${what}) spills`)
        }
      }
      assert.ok(sig && plain)
      assert.ok(
        systemStores(sig.ptx) > systemStores(plain.ptx),
        `kernels/${src}: the signature cluster's (allreduce_many: block's) packet stores are missing from the per-process build`,
      )
    }
  } finally {
    rmSync(work, { recursive: true, force: true })
  }
})
