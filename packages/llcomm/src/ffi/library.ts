/**
 * Finds and loads the native libraries (libcuda, libnvrtc, libnccl) at run time. Nothing is loaded at import:
 * the cpu backend never touches this file. A library that cannot be loaded becomes LIBRARY_NOT_FOUND listing
 * every place searched, so a user on a machine without CUDA sees what to install or which variable to set.
 */
import { existsSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import koffi from 'koffi'
import { LlcommError } from '../errors.js'

export type NativeLibrary = ReturnType<typeof koffi.load>

export interface LibrarySpec {
  /** Short name for messages, e.g. 'libcuda'. */
  name: string
  /** Environment variable that names the exact file (checked first), e.g. LLCOMM_LIBCUDA. */
  envVar: string
  /** File names to try through the dynamic loader's own search (LD_LIBRARY_PATH, ld.so.cache). */
  sonames: string[]
  /** Directories to look in for files whose name starts with one of `sonames`' stems. */
  directories: () => string[]
  /** Ask the dynamic loader before the directories (libcuda: the driver's copy is the right one). */
  loaderFirst?: boolean
}

/** Python wheel folders that ship CUDA libraries (nvidia-cuda-nvrtc, nvidia-nccl-cu13, cu13 meta wheel). */
export function pythonWheelLibDirs(subdirs: string[]): string[] {
  const roots = [
    process.env.LLCOMM_PYTHON_SITE_PACKAGES,
    '/opt/torch/.venv/lib/python3.12/site-packages',
    ...globSitePackages('/usr/local/lib'),
    ...globSitePackages('/usr/lib'),
  ].filter((d): d is string => typeof d === 'string' && d.length > 0)
  const out: string[] = []
  for (const root of roots) for (const s of subdirs) out.push(join(root, 'nvidia', s, 'lib'))
  return out
}

function globSitePackages(prefix: string): string[] {
  const out: string[] = []
  try {
    for (const name of readdirSync(prefix)) {
      if (!name.startsWith('python3')) continue
      for (const leaf of ['site-packages', 'dist-packages']) {
        const d = join(prefix, name, leaf)
        if (existsSync(d)) out.push(d)
      }
    }
  } catch {
    // prefix absent: nothing to add
  }
  return out
}

export function cudaToolkitLibDirs(): string[] {
  const dirs: string[] = []
  for (const v of ['CUDA_HOME', 'CUDA_PATH']) {
    const root = process.env[v]
    if (root) dirs.push(join(root, 'lib64'), join(root, 'lib'))
  }
  dirs.push('/usr/local/cuda/lib64', '/usr/local/cuda/targets/x86_64-linux/lib')
  try {
    for (const name of readdirSync('/usr/local').sort().reverse()) {
      if (name.startsWith('cuda-')) dirs.push(join('/usr/local', name, 'lib64'))
    }
  } catch {
    // no /usr/local: nothing to add
  }
  return dirs
}

/** Files in `dir` named like `stem` or `stem.<version>` (libnvrtc.so.13, libnvrtc.so.12.4.127...). */
function versionedFiles(dir: string, stems: string[]): string[] {
  let names: string[]
  try {
    names = readdirSync(dir)
  } catch {
    return []
  }
  const hits = names.filter((n) => stems.some((s) => n === s || n.startsWith(`${s}.`)))
  // Prefer the shortest (the soname link) then the highest version, deterministically.
  hits.sort((a, b) => a.length - b.length || b.localeCompare(a))
  return hits.map((n) => join(dir, n))
}

const loaded = new Map<string, { lib: NativeLibrary; path: string }>()

/** Loads a library once per process; later calls return the same handle. */
export function loadLibrary(spec: LibrarySpec): { lib: NativeLibrary; path: string } {
  const cached = loaded.get(spec.name)
  if (cached) return cached
  const searched: string[] = []
  const failures: string[] = []
  const attempt = (path: string): { lib: NativeLibrary; path: string } | undefined => {
    searched.push(path)
    try {
      const lib = koffi.load(path)
      const hit = { lib, path }
      loaded.set(spec.name, hit)
      return hit
    } catch (e) {
      failures.push(`${path}: ${(e as Error).message.split('\n')[0]}`)
      return undefined
    }
  }
  const fromEnv = process.env[spec.envVar]
  if (fromEnv) {
    const hit = attempt(fromEnv)
    if (hit) return hit
  }
  if (spec.loaderFirst) {
    for (const soname of spec.sonames) {
      const hit = attempt(soname)
      if (hit) return hit
    }
  }
  for (const dir of spec.directories()) {
    for (const file of versionedFiles(dir, spec.sonames)) {
      const hit = attempt(file)
      if (hit) return hit
    }
    if (!searched.some((s) => s.startsWith(dir))) searched.push(`${dir}/ (no ${spec.sonames[0]}*)`)
  }
  // Last, the dynamic loader's own search (LD_LIBRARY_PATH, /etc/ld.so.cache), by bare soname.
  if (!spec.loaderFirst)
    for (const soname of spec.sonames) {
      const hit = attempt(soname)
      if (hit) return hit
    }
  throw new LlcommError(
    'LIBRARY_NOT_FOUND',
    `${spec.name} could not be loaded; set ${spec.envVar} to its path. Searched:\n  ${searched.join('\n  ')}`,
    { library: spec.name, envVar: spec.envVar, searched, failures },
  )
}

export const LIBCUDA: LibrarySpec = {
  name: 'libcuda',
  envVar: 'LLCOMM_LIBCUDA',
  sonames: ['libcuda.so.1', 'libcuda.so'],
  // The driver's library comes with the driver: usually on the loader path; these are the common mounts.
  directories: () => ['/usr/local/nvidia/lib64', '/usr/lib/x86_64-linux-gnu', '/usr/lib64', '/usr/lib/wsl/lib'],
  loaderFirst: true,
}

export const LIBNVRTC: LibrarySpec = {
  name: 'libnvrtc',
  envVar: 'LLCOMM_LIBNVRTC',
  sonames: ['libnvrtc.so'],
  directories: () => [...cudaToolkitLibDirs(), ...pythonWheelLibDirs(['cuda_nvrtc', 'cu13', 'cu12'])],
}

export const LIBNCCL: LibrarySpec = {
  name: 'libnccl',
  envVar: 'LLCOMM_LIBNCCL',
  sonames: ['libnccl.so'],
  directories: () => [
    ...pythonWheelLibDirs(['nccl', 'cu13', 'cu12']),
    ...cudaToolkitLibDirs(),
    '/usr/lib/x86_64-linux-gnu',
  ],
}
