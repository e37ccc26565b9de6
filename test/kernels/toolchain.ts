/**
 * Finding nvcc and a host C++ compiler for the kernel tests. Without nvcc the tests fail with a clear message,
 * unless LLCOMM_SKIP_NVCC=1 says that this machine is known to lack it.
 */
import { execFileSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { join } from 'node:path'

function onPath(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(':')) {
    if (dir && existsSync(join(dir, name))) return join(dir, name)
  }
  return undefined
}

/** nvcc from $NVCC, $CUDA_HOME/bin, PATH or /usr/local/cuda/bin; undefined when none. */
export function findNvcc(): string | undefined {
  const candidates = [
    process.env.NVCC,
    process.env.CUDA_HOME ? join(process.env.CUDA_HOME, 'bin', 'nvcc') : undefined,
    onPath('nvcc'),
    '/usr/local/cuda/bin/nvcc',
  ]
  return candidates.find((c): c is string => c !== undefined && existsSync(c))
}

/** A host C++17 compiler (g++, c++, clang++), or nvcc as the last resort. */
export function findHostCxx(): string | undefined {
  return onPath('g++') ?? onPath('c++') ?? onPath('clang++') ?? findNvcc()
}

export const SKIP_NVCC = process.env.LLCOMM_SKIP_NVCC === '1'

/** The skip reason when nvcc is missing and skipping is allowed; throws when it is missing and not allowed. */
export function requireNvcc(): { nvcc: string } | { skip: string } {
  const nvcc = findNvcc()
  if (nvcc) return { nvcc }
  if (SKIP_NVCC) return { skip: 'nvcc not found and LLCOMM_SKIP_NVCC=1' }
  throw new Error(
    'nvcc not found (looked at $NVCC, $CUDA_HOME/bin, PATH, /usr/local/cuda/bin): the kernel compile tests need it. ' +
      'Install the CUDA toolkit, or set LLCOMM_SKIP_NVCC=1 on a machine known to lack it.',
  )
}

export function nvccVersion(nvcc: string): string {
  const out = execFileSync(nvcc, ['--version'], { encoding: 'utf8' })
  return /release ([\d.]+)/.exec(out)?.[1] ?? 'unknown'
}
