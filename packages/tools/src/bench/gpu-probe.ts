/**
 * Which GPUs this process can see, for default device lists and the machine field of a report: the driver
 * binding first (src/ffi, loaded lazily so the cpu path never touches libcuda), nvidia-smi second. A probe that
 * finds nothing returns no GPUs; it never guesses.
 */
import { execFileSync } from 'node:child_process'

export interface GpuProbe {
  names: string[]
  via: 'driver' | 'nvidia-smi' | 'none'
}

async function probeDriver(): Promise<string[] | undefined> {
  try {
    const { cudaDriver } = await import('llcomm/internal')
    const driver = cudaDriver()
    const count = driver.deviceCount()
    return Array.from({ length: count }, (_, i) => driver.deviceName(driver.device(i)))
  } catch {
    return undefined
  }
}

function probeNvidiaSmi(): string[] | undefined {
  try {
    const out = execFileSync('nvidia-smi', ['--query-gpu=name', '--format=csv,noheader'], {
      encoding: 'utf8',
      timeout: 10_000,
      stdio: ['ignore', 'pipe', 'ignore'],
    })
    return out
      .split('\n')
      .map((s) => s.trim())
      .filter(Boolean)
  } catch {
    return undefined
  }
}

let cached: Promise<GpuProbe> | undefined

export function probeGpus(): Promise<GpuProbe> {
  cached ??= (async () => {
    const fromDriver = await probeDriver()
    if (fromDriver && fromDriver.length > 0) return { names: fromDriver, via: 'driver' }
    const fromSmi = probeNvidiaSmi()
    if (fromSmi && fromSmi.length > 0) return { names: fromSmi, via: 'nvidia-smi' }
    return { names: [], via: 'none' }
  })()
  return cached
}

/** '8x NVIDIA H200' or 'NVIDIA H200, NVIDIA A100' (for the names of the devices used, or of all seen). */
export function describeGpus(names: readonly string[]): string | undefined {
  if (names.length === 0) return undefined
  const counts = new Map<string, number>()
  for (const n of names) counts.set(n, (counts.get(n) ?? 0) + 1)
  return [...counts].map(([n, c]) => (c > 1 ? `${c}x ${n}` : n)).join(', ')
}
