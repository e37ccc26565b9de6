/**
 * Option validation for both backends, in one place: the known keys of every options object (an unknown key is
 * INVALID_ARGUMENT, so a misspelt option never passes silently), the communicator defaults, and the checks of the
 * values shared by both backends. A backend checks only what is its own (ranks, devices, spinIterations, cacheDir).
 *
 * To add an option: append its key to the list of its object below and check its value where the object is
 * validated (validateAllReduceOptions in validate.ts for per-call options, validateCommunicatorOptions here).
 */
import type { Backend } from '../api/types.js'
import { LlcommError } from '../errors.js'

/**
 * Default capacity of each rank's LL buffer, bytes of payload per half (CommunicatorOptionsBase.bufferBytes), per
 * backend, in one table. cuda: 4 MiB (issue 22: at 8 virtual ranks 1 MB twoshot-sentinel runs in one launch instead
 * of two, 0.86 against 1.30 of oneshot-barrier; bench/results/cuda-h200-scale-goals-2026-12-02c.txt at this default,
 * bench/results/cuda-h200-bench-v8-bb4M-2026-12-02.json before it; 8-10 bytes of device memory per payload byte per
 * rank, 32-40 MiB at 2-64 ranks: deviceBufferLayout). cpu: 256 KiB: on the
 * CPU the channel is host memory (about 9 bytes per payload byte per rank with its three buffer kinds), and larger
 * messages are chunked at about the same cost per byte.
 */
export const DEFAULT_BUFFER_BYTES: Readonly<Record<Backend, number>> = { cpu: 256 * 1024, cuda: 4 << 20 }
/** Default per-wait deadline (CommunicatorOptionsBase.timeoutMs), both backends. */
export const DEFAULT_TIMEOUT_MS = 10_000
/**
 * Largest bufferBytes either backend accepts (2 GiB): beyond it the channel sizes overflow 32-bit offsets, and
 * twoshot-sentinel's 32-bit part arithmetic (kernels/llcomm/channel.cuh LlcParts) would wrap.
 */
export const MAX_BUFFER_BYTES = 2 ** 31

/** Keys of AllReduceOptions (api/types.ts). `deterministic` is validated as a boolean. */
export const ALLREDUCE_OPTION_KEYS: readonly string[] = [
  'algorithm',
  'dtype',
  'op',
  'protocol',
  'pdl',
  'fallback',
  'deterministic',
]
/** Keys of BenchmarkRequest (api/types.ts). */
export const BENCHMARK_REQUEST_KEYS: readonly string[] = [
  'algorithm',
  'dtype',
  'op',
  'count',
  'iters',
  'warmup',
  'skewUs',
  'computeUs',
  'protocol',
  'pdl',
  'deterministic',
]
/** Keys of CommunicatorOptionsBase and of each backend's options (api/types.ts). */
export const COMMUNICATOR_OPTION_KEYS: Readonly<Record<Backend, readonly string[]>> = {
  cpu: ['backend', 'timeoutMs', 'bufferBytes', 'tuningTable', 'deterministic', 'ranks', 'spinIterations'],
  cuda: ['backend', 'timeoutMs', 'bufferBytes', 'tuningTable', 'deterministic', 'devices', 'cacheDir', 'accumulation'],
}

/** Throws INVALID_ARGUMENT naming the first key of `o` that is not in `known`. */
export function checkKnownKeys(o: object, known: readonly string[], what: string): void {
  for (const key of Object.keys(o)) {
    if (!known.includes(key)) {
      throw new LlcommError('INVALID_ARGUMENT', `unknown ${what} option ${JSON.stringify(key)} (${known.join(', ')})`, {
        option: key,
        known: [...known],
      })
    }
  }
}

/** An optional boolean option; INVALID_ARGUMENT for any other value. */
export function optionalBoolean(value: unknown, name: string): boolean | undefined {
  if (value !== undefined && typeof value !== 'boolean') {
    throw new LlcommError('INVALID_ARGUMENT', `${name} must be a boolean`, { [name]: value })
  }
  return value
}

export interface CommonCommunicatorOptions {
  timeoutMs: number
  bufferBytes: number
  tuningTable: string | undefined
  deterministic: boolean
}

/**
 * The options both backends share, checked and defaulted. `extraKeys` are a backend's internal (test-only) keys,
 * accepted when the backend's own constructor is called directly, never through createCommunicator.
 */
export function validateCommunicatorOptions(
  backend: Backend,
  options: unknown,
  extraKeys: readonly string[] = [],
): CommonCommunicatorOptions {
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw new LlcommError('INVALID_ARGUMENT', 'createCommunicator needs an options object')
  }
  const o = options as Record<string, unknown>
  checkKnownKeys(o, [...COMMUNICATOR_OPTION_KEYS[backend], ...extraKeys], `${backend} communicator`)
  const timeoutMs = o.timeoutMs ?? DEFAULT_TIMEOUT_MS
  if (typeof timeoutMs !== 'number' || !(timeoutMs > 0) || !Number.isFinite(timeoutMs)) {
    throw new LlcommError('INVALID_ARGUMENT', `timeoutMs must be a positive number, got ${String(timeoutMs)}`, {
      timeoutMs,
    })
  }
  const bufferBytes = o.bufferBytes ?? DEFAULT_BUFFER_BYTES[backend]
  if (typeof bufferBytes !== 'number' || !Number.isInteger(bufferBytes) || bufferBytes < 1) {
    throw new LlcommError('INVALID_ARGUMENT', `bufferBytes must be a positive integer, got ${String(bufferBytes)}`, {
      bufferBytes,
    })
  }
  if (bufferBytes > MAX_BUFFER_BYTES) {
    throw new LlcommError('INVALID_ARGUMENT', `bufferBytes ${bufferBytes} is above the limit ${MAX_BUFFER_BYTES}`, {
      bufferBytes,
      max: MAX_BUFFER_BYTES,
    })
  }
  if (o.tuningTable !== undefined && typeof o.tuningTable !== 'string') {
    throw new LlcommError('INVALID_ARGUMENT', 'tuningTable must be a path (string)', { tuningTable: o.tuningTable })
  }
  const deterministic = optionalBoolean(o.deterministic, 'deterministic') ?? false
  return { timeoutMs, bufferBytes, tuningTable: o.tuningTable as string | undefined, deterministic }
}
