/**
 * Argument validation shared by both backends: option values, dtype against the typed array, equal lengths,
 * algorithm names against what the communicator offers. Every failure is an LlcommError with a stable code.
 */
import {
  type AlgorithmChoice,
  type AllReduceOptions,
  type BenchmarkRequest,
  DTYPES,
  type Dtype,
  type LlProtocol,
  type ReduceOp,
  type TensorArray,
} from '../api/types.js'
import { LlcommError } from '../errors.js'
import { ALLREDUCE_OPTION_KEYS, BENCHMARK_REQUEST_KEYS, checkKnownKeys, optionalBoolean } from './options.js'

const OPS: readonly ReduceOp[] = ['sum']
const PROTOCOLS: readonly LlProtocol[] = ['ll8', 'll16']

export interface ValidatedOptions {
  algorithm: AlgorithmChoice
  dtype: Dtype
  op: ReduceOp
  protocol?: LlProtocol
  pdl: boolean
  fallback: boolean
  /** The rank-order f32 sum rounded once, whatever the algorithm (src/algorithms/determinism.ts). */
  deterministic: boolean
}

/** `deterministic` of a call or a communicator: a boolean, or absent (then `fallbackValue`). */
export function validateDeterministic(value: unknown, fallbackValue = false): boolean {
  if (value === undefined) return fallbackValue
  if (typeof value !== 'boolean') {
    throw new LlcommError('INVALID_ARGUMENT', 'deterministic must be a boolean', { deterministic: value })
  }
  return value
}

/**
 * Checks an AllReduceOptions object (defaults: auto, f32, sum, fallback on, deterministic as the communicator's
 * `defaults.deterministic`, else off).
 */
export function validateAllReduceOptions(
  options: AllReduceOptions | undefined,
  available: readonly AlgorithmChoice[],
  defaults: { deterministic?: boolean } = {},
): ValidatedOptions {
  if (options !== undefined && (options === null || typeof options !== 'object')) {
    throw new LlcommError('INVALID_ARGUMENT', 'allReduce options must be an object')
  }
  const o = options ?? {}
  checkKnownKeys(o, ALLREDUCE_OPTION_KEYS, 'allReduce')
  const deterministic = validateDeterministic(
    (o as { deterministic?: unknown }).deterministic,
    defaults.deterministic ?? false,
  )
  const dtype = validateDtype(o.dtype ?? 'f32')
  const op = validateOp(o.op ?? 'sum')
  const algorithm = validateAlgorithm(o.algorithm ?? 'auto', available)
  if (o.protocol !== undefined && !PROTOCOLS.includes(o.protocol)) {
    throw new LlcommError('INVALID_ARGUMENT', `unknown protocol ${JSON.stringify(o.protocol)} (ll8 | ll16)`, {
      protocol: o.protocol,
    })
  }
  if (o.fallback !== undefined && typeof o.fallback !== 'boolean') {
    throw new LlcommError('INVALID_ARGUMENT', 'fallback must be a boolean', { fallback: o.fallback })
  }
  if (o.pdl !== undefined && typeof o.pdl !== 'boolean') {
    throw new LlcommError('INVALID_ARGUMENT', 'pdl must be a boolean', { pdl: o.pdl })
  }
  return {
    algorithm,
    dtype,
    op,
    protocol: o.protocol,
    pdl: o.pdl ?? false,
    fallback: o.fallback ?? true,
    deterministic,
  }
}

export function validateDtype(dtype: unknown): Dtype {
  if (typeof dtype !== 'string' || !DTYPES.includes(dtype as Dtype)) {
    throw new LlcommError('UNSUPPORTED_DTYPE', `unsupported dtype ${JSON.stringify(dtype)} (${DTYPES.join(' | ')})`, {
      dtype,
    })
  }
  return dtype as Dtype
}

export function validateOp(op: unknown): ReduceOp {
  if (typeof op !== 'string' || !OPS.includes(op as ReduceOp)) {
    throw new LlcommError('UNSUPPORTED_OP', `unsupported op ${JSON.stringify(op)} (${OPS.join(' | ')})`, { op })
  }
  return op as ReduceOp
}

export function validateAlgorithm(algorithm: unknown, available: readonly AlgorithmChoice[]): AlgorithmChoice {
  if (typeof algorithm !== 'string' || !available.includes(algorithm as AlgorithmChoice)) {
    throw new LlcommError(
      'UNSUPPORTED_ALGORITHM',
      `algorithm ${JSON.stringify(algorithm)} is not available here (${available.join(', ')})`,
      { algorithm, available: [...available] },
    )
  }
  return algorithm as AlgorithmChoice
}

/** The typed array a dtype travels in. */
export function expectedArrayName(dtype: Dtype): 'Float32Array' | 'Uint16Array' {
  return dtype === 'f32' ? 'Float32Array' : 'Uint16Array'
}

/**
 * One rank's input: the right typed array for the dtype (else INVALID_ARGUMENT: a wrong type is not a length
 * mismatch), over a buffer that is not detached. Returns its length.
 */
export function validateRankInput(input: unknown, dtype: Dtype, rank?: number): number {
  const ok = dtype === 'f32' ? input instanceof Float32Array : input instanceof Uint16Array
  if (!ok) {
    const got = ArrayBuffer.isView(input) ? input.constructor.name : typeof input
    throw new LlcommError(
      'INVALID_ARGUMENT',
      `${rank === undefined ? 'input' : `input of rank ${rank}`} must be a ${expectedArrayName(dtype)} for dtype ${dtype}, got ${got}`,
      { rank, dtype, got },
    )
  }
  const array = input as TensorArray
  if (array.length === 0 && isDetached(array)) {
    throw new LlcommError(
      'INVALID_ARGUMENT',
      `${rank === undefined ? 'input' : `input of rank ${rank}`} is over a detached ArrayBuffer (transferred away)`,
      { rank },
    )
  }
  return array.length
}

/** A typed array over a detached buffer reads as length 0; only constructing a view over the buffer tells. */
function isDetached(array: TensorArray): boolean {
  try {
    new Uint8Array(array.buffer, 0, 0)
    return false
  } catch {
    return true
  }
}

/** The driver view's inputs: one typed array per rank, the right type, equal lengths. Returns the element count. */
export function validateInputs(inputs: unknown, size: number, dtype: Dtype): number {
  if (!Array.isArray(inputs)) throw new LlcommError('INVALID_ARGUMENT', 'inputs must be an array of typed arrays')
  if (inputs.length !== size) {
    throw new LlcommError('INVALID_ARGUMENT', `expected ${size} inputs (one per rank), got ${inputs.length}`, {
      expected: size,
      got: inputs.length,
    })
  }
  let count = -1
  for (let r = 0; r < size; r++) {
    const length = validateRankInput(inputs[r], dtype, r)
    if (count === -1) count = length
    else if (length !== count) {
      throw new LlcommError('LENGTH_MISMATCH', `input of rank ${r} has ${length} elements, rank 0 has ${count}`, {
        rank: r,
        length,
        expected: count,
      })
    }
  }
  return count
}

/** A benchmark request; returns it with defaults filled in. */
export function validateBenchmarkRequest(
  request: BenchmarkRequest,
  available: readonly AlgorithmChoice[],
): Required<Omit<BenchmarkRequest, 'protocol'>> & { protocol?: LlProtocol } {
  if (request === null || typeof request !== 'object') {
    throw new LlcommError('INVALID_ARGUMENT', 'benchmark needs a request object')
  }
  checkKnownKeys(request, BENCHMARK_REQUEST_KEYS, 'benchmark')
  const options = validateAllReduceOptions(
    {
      algorithm: request.algorithm,
      dtype: request.dtype,
      op: request.op,
      protocol: request.protocol,
      pdl: request.pdl,
    },
    available,
  )
  const nonNegativeInt = (name: string, v: unknown, min: number): number => {
    if (typeof v !== 'number' || !Number.isInteger(v) || v < min) {
      throw new LlcommError('INVALID_ARGUMENT', `${name} must be an integer >= ${min}`, { [name]: v })
    }
    return v
  }
  const skewUs = request.skewUs ?? 0
  if (typeof skewUs !== 'number' || !(skewUs >= 0) || !Number.isFinite(skewUs)) {
    throw new LlcommError('INVALID_ARGUMENT', 'skewUs must be a finite number >= 0', { skewUs })
  }
  const computeUs = request.computeUs ?? 0
  if (typeof computeUs !== 'number' || !(computeUs >= 0) || !Number.isFinite(computeUs)) {
    throw new LlcommError('INVALID_ARGUMENT', 'computeUs must be a finite number >= 0', { computeUs })
  }
  return {
    algorithm: options.algorithm,
    dtype: options.dtype,
    op: options.op,
    count: nonNegativeInt('count', request.count, 1),
    iters: nonNegativeInt('iters', request.iters, 1),
    warmup: nonNegativeInt('warmup', request.warmup ?? 0, 0),
    skewUs,
    computeUs,
    protocol: options.protocol,
    pdl: options.pdl,
  }
}
