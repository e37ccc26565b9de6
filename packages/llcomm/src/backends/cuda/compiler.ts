/**
 * Run-time compilation of the kernels/ sources with NVRTC for one device architecture, and an on-disk cubin
 * cache. The cache key is a SHA-256 over every source byte that NVRTC sees (the main file and the headers it
 * includes, directly or not: editing one kernel's header recompiles only the modules that include it),
 * the options, the architecture, the driver version and the NVRTC version, so any change recompiles and a stale
 * cubin can never be loaded. Entries are written to a temporary name and renamed (atomic on one file system), so
 * concurrent processes at worst compile twice.
 */
import { createHash } from 'node:crypto'
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import { homedir } from 'node:os'
import { basename, dirname, isAbsolute, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { LlcommError } from '../../errors.js'
import type { NvrtcHeader } from '../../ffi/index.js'

/** The package's kernels/ folder (dist/src/backends/cuda/ → package root), or $LLCOMM_KERNELS_DIR. */
export function kernelsDir(): string {
  return process.env.LLCOMM_KERNELS_DIR ?? fileURLToPath(new URL('../../../../kernels/', import.meta.url))
}

export function defaultCacheDir(): string {
  return process.env.LLCOMM_CACHE_DIR ?? join(homedir(), '.cache', 'llcomm')
}

export interface CompileRequest {
  /** Path of the main .cu relative to kernels/. */
  sourceFile: string
  /** Every file NVRTC may #include, name as included and path (relative to kernels/ or absolute). */
  headers: { name: string; path: string }[]
  /** 'sm_90' for compute capability 9.0. */
  arch: string
  driverVersion: number
  nvrtcVersion: string
  extraOptions?: string[]
  cacheDir?: string
}

export interface CompileInputs {
  source: string
  headers: NvrtcHeader[]
  options: string[]
  key: string
}

/** NVRTC options for an architecture: what the contract fixes, then the caller's extras. */
export function nvrtcOptions(arch: string, extra: readonly string[] = []): string[] {
  if (!/^sm_\d+[a-z]?$/.test(arch)) throw new LlcommError('INVALID_ARGUMENT', `not an architecture: ${arch}`)
  return [`--gpu-architecture=${arch}`, '-default-device', '--std=c++17', ...extra]
}

/** Reads the sources and computes the cache key; no NVRTC involved (unit-testable without a GPU). */
export function compileInputs(req: CompileRequest): CompileInputs {
  const dir = kernelsDir()
  const read = (p: string) => {
    const full = isAbsolute(p) ? p : join(dir, p)
    try {
      return readFileSync(full, 'utf8')
    } catch (e) {
      throw new LlcommError('INVALID_ARGUMENT', `cannot read kernel source ${full}: ${(e as Error).message}`, {
        path: full,
      })
    }
  }
  const source = read(req.sourceFile)
  const headers = includeClosure(source, req, dir, read)
  const options = nvrtcOptions(req.arch, req.extraOptions)
  const key = cacheKey({
    sourceFile: isAbsolute(req.sourceFile) ? basename(req.sourceFile) : req.sourceFile,
    source,
    headers,
    options,
    arch: req.arch,
    driverVersion: req.driverVersion,
    nvrtcVersion: req.nvrtcVersion,
  })
  return { source, headers, options, key }
}

const INCLUDE_LINE = /^[ \t]*#[ \t]*include[ \t]+"([^"]+)"/gm

/**
 * The headers a source reaches through its `#include "…"` lines, transitively, sorted by name: each found among
 * `req.headers` by its include name, else beside the main file (a tools kernel's own headers). Only these go to
 * NVRTC and into the cache key. Angle-bracket includes are not followed (kernels include none: NVRTC has no host
 * headers).
 */
export function includeClosure(
  source: string,
  req: Pick<CompileRequest, 'sourceFile' | 'headers'>,
  dir: string,
  read: (path: string) => string,
): NvrtcHeader[] {
  const byName = new Map(req.headers.map((h) => [h.name, h.path]))
  const mainDir = dirname(isAbsolute(req.sourceFile) ? req.sourceFile : join(dir, req.sourceFile))
  const found = new Map<string, string>()
  const visit = (text: string) => {
    for (const m of text.matchAll(INCLUDE_LINE)) {
      const name = m[1]
      if (found.has(name)) continue
      const text2 = read(byName.get(name) ?? join(mainDir, name))
      found.set(name, text2)
      visit(text2)
    }
  }
  visit(source)
  return [...found.keys()].sort().map((name) => ({ name, source: found.get(name) as string }))
}

/** SHA-256 (hex) over everything that determines the cubin; fields length-prefixed so no two inputs collide. */
export function cacheKey(parts: {
  sourceFile: string
  source: string
  headers: NvrtcHeader[]
  options: string[]
  arch: string
  driverVersion: number
  nvrtcVersion: string
}): string {
  const h = createHash('sha256')
  const put = (tag: string, s: string) => {
    h.update(`${tag}:${Buffer.byteLength(s)}:`)
    h.update(s)
  }
  put('format', 'llcomm-cubin-v1')
  put('file', parts.sourceFile)
  put('src', parts.source)
  for (const hd of parts.headers) {
    put('hname', hd.name)
    put('hsrc', hd.source)
  }
  for (const o of parts.options) put('opt', o)
  put('arch', parts.arch)
  put('driver', String(parts.driverVersion))
  put('nvrtc', parts.nvrtcVersion)
  return h.digest('hex')
}

export function cachePath(cacheDir: string, key: string, arch: string): string {
  return join(cacheDir, `${arch}-${key.slice(0, 32)}.cubin`)
}

export function readCachedCubin(cacheDir: string, key: string, arch: string): Uint8Array | undefined {
  try {
    return new Uint8Array(readFileSync(cachePath(cacheDir, key, arch)))
  } catch {
    return undefined
  }
}

export function writeCachedCubin(cacheDir: string, key: string, arch: string, cubin: Uint8Array): void {
  try {
    mkdirSync(cacheDir, { recursive: true })
    const final = cachePath(cacheDir, key, arch)
    const tmp = `${final}.${process.pid}.${Date.now()}.tmp`
    writeFileSync(tmp, cubin)
    renameSync(tmp, final)
  } catch {
    // An unwritable cache only costs a recompile next time; never an error.
  }
}

export interface CompiledCubin {
  cubin: Uint8Array
  key: string
  fromCache: boolean
  compileMs: number
  log: string
}

/** Compiles (or fetches from the cache) one source file. `compile` is NVRTC, injected so tests can fake it. */
export function compileCubin(
  req: CompileRequest,
  compile: (
    source: string,
    name: string,
    headers: NvrtcHeader[],
    options: string[],
  ) => { cubin: Uint8Array; log: string },
): CompiledCubin {
  const inputs = compileInputs(req)
  const cacheDir = req.cacheDir ?? defaultCacheDir()
  const cached = readCachedCubin(cacheDir, inputs.key, req.arch)
  if (cached && cached.byteLength > 0) return { cubin: cached, key: inputs.key, fromCache: true, compileMs: 0, log: '' }
  const t0 = performance.now()
  const out = compile(inputs.source, req.sourceFile, inputs.headers, inputs.options)
  const compileMs = performance.now() - t0
  writeCachedCubin(cacheDir, inputs.key, req.arch, out.cubin)
  return { cubin: out.cubin, key: inputs.key, fromCache: false, compileMs, log: out.log }
}
