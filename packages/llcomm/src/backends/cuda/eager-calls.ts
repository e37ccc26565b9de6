/**
 * The last few eager device calls of one kind, packed (the eager path must cost about what a C++ launch loop costs:
 * docs/launch-overhead.md). One cache per kind of call: deviceAllReduce, deviceAllReduceRmsNorm, deviceRmsNorm,
 * deviceAllReduceMany, and the per-process communicator's deviceAllReduce, deviceAllReduceRmsNorm and deviceAllReduceMany. A kind (EagerCallKind) names the argument values its packing depends on: `keyOf` copies them
 * (defaults filled in), `matches` compares a call's arguments with such a copy without allocating. A call whose
 * arguments match an entry's key reuses its packed launches: no validation, resolution or packing again.
 *
 * Sound because the packing depends only on the key and on the communicator's fixed configuration (devices, buffers,
 * timeout, tuning): so a key must hold every argument value that reaches the packed parameters or the launch shape
 * (every pointer, size, eps, scale, flag, option and stream). Each key type lists every field of its arguments
 * (`extends Record<keyof Required<Args>, unknown>`: a field added to the arguments and not to the key is a type error
 * in keyOf). Keys hold copies of the caller's arrays, so a caller may reuse or change its own: a pointer array
 * changed in place no longer matches.
 */
import type {
  AlgorithmChoice,
  AllReduceInfo,
  Dtype,
  FusedNormOptions,
  LlProtocol,
  ProcessDeviceAllReduceManyRequest,
  ProcessDeviceAllReduceRequest,
  ProcessDeviceAllReduceRmsNormRequest,
  ReduceOp,
} from '../../api/types.js'
import type { CuStream, DevicePtr } from '../../ffi/types.js'
import type { PreparedChunk } from './allreduce-launcher.js'
import type {
  DeviceAllReduceArgs,
  DeviceAllReduceInfo,
  DeviceAllReduceManyArgs,
  DeviceAllReduceRmsNormArgs,
  DeviceFallback,
  FusedDeviceInfo,
  FusedNormAlgorithm,
  PreparedDeviceAllReduce,
  PreparedFusedCall,
  PreparedFusedDeviceCall,
} from './device-call.js'

/** How many distinct eager calls of one kind stay packed (e.g. one per layer's buffer in a model step). */
export const EAGER_CALLS_KEPT = 8

/** What a packed call of one kind depends on, and how a call's arguments are compared with it. */
export interface EagerCallKind<A, K> {
  /** A private copy of every argument value the packed call depends on (defaults filled in). */
  keyOf(args: A): K
  /** True when `args` asks for exactly the call packed for `key` (no allocation). */
  matches(key: K, args: A): boolean
}

/** A packed eager call and the argument values it was packed for. */
export interface EagerCall<K, P, I> {
  key: K
  /** The streams the call runs on (a private copy, passed to issue() every time). */
  streams: CuStream[]
  prepared: P
  info: I
}

export class EagerCallCache<A, K, P, I> {
  private readonly kind: EagerCallKind<A, K>
  private readonly calls: EagerCall<K, P, I>[] = []
  private next = 0
  /** The entry find() returned or remember() kept last (one of `calls`), or undefined. */
  private last: EagerCall<K, P, I> | undefined

  private readonly kept: number

  /** `kept`: how many distinct calls stay packed (default EAGER_CALLS_KEPT). */
  constructor(kind: EagerCallKind<A, K>, kept = EAGER_CALLS_KEPT) {
    if (!Number.isInteger(kept) || kept < 1) throw new RangeError(`eager-call cache size ${kept}`)
    this.kind = kind
    this.kept = kept
  }

  /**
   * The packed call `args` asks for exactly, or undefined: the last call found or kept first (a loop that repeats
   * one call reads that entry only), then a linear scan of at most `kept` entries.
   */
  find(args: A): EagerCall<K, P, I> | undefined {
    const last = this.last
    if (last !== undefined && this.kind.matches(last.key, args)) return last
    const calls = this.calls
    for (let i = 0; i < calls.length; i++) {
      if (calls[i] !== last && this.kind.matches(calls[i].key, args)) {
        this.last = calls[i]
        return calls[i]
      }
    }
    return undefined
  }

  /**
   * Keeps a packed call for `args` (replacing the oldest once `kept` are kept). Call it only after
   * `args` were validated (the packing succeeded): keyOf copies them without checking.
   */
  remember(args: A, streams: CuStream[], prepared: P, info: I): EagerCall<K, P, I> {
    const entry: EagerCall<K, P, I> = { key: this.kind.keyOf(args), streams, prepared, info }
    if (this.calls.length < this.kept) this.calls.push(entry)
    else this.calls[this.next] = entry
    this.next = (this.next + 1) % this.kept
    this.last = entry
    return entry
  }

  /** Forgets every packed call (after recover(): the packed launches stay valid, but nothing relies on that). */
  clear(): void {
    this.calls.length = 0
    this.next = 0
    this.last = undefined
  }

  get size(): number {
    return this.calls.length
  }
}

// ---- comparisons (no allocation) ----

/** Equal numbers element by element (pointers, counts); false when `b` is not an array. */
function sameNumbers(a: readonly (number | bigint)[], b: unknown): boolean {
  if (!Array.isArray(b) || b.length !== a.length) return false
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false
  return true
}

/** Equal pointer lists (inputs[b][rank]) list by list. */
function samePointerLists(a: readonly (readonly number[])[], b: unknown): boolean {
  if (!Array.isArray(b) || b.length !== a.length) return false
  for (let i = 0; i < a.length; i++) if (!sameNumbers(a[i], b[i])) return false
  return true
}

/** The caller's stream arguments: the same `stream` and an equal `streams` list (or none, as before). */
function sameStreams(
  key: { stream: CuStream | undefined; streams: CuStream[] | undefined },
  args: { stream?: CuStream; streams?: readonly CuStream[] },
): boolean {
  return (
    args.stream === key.stream &&
    (args.streams === undefined
      ? key.streams === undefined
      : key.streams !== undefined && sameNumbers(key.streams, args.streams))
  )
}

// ---- deviceAllReduce ----

export interface DeviceAllReduceKey extends Record<keyof Required<DeviceAllReduceArgs>, unknown> {
  inputs: DevicePtr[]
  outputs: DevicePtr[]
  count: number
  dtype: Dtype
  op: ReduceOp
  algorithm: AlgorithmChoice
  protocol: LlProtocol | undefined
  pdl: boolean
  fallback: DeviceFallback
  deterministic: boolean | undefined
  stream: CuStream | undefined
  streams: CuStream[] | undefined
}

export const DEVICE_ALL_REDUCE_CALL: EagerCallKind<DeviceAllReduceArgs, DeviceAllReduceKey> = {
  keyOf: (args) => ({
    inputs: [...args.inputs],
    outputs: [...args.outputs],
    count: args.count,
    dtype: args.dtype,
    op: args.op ?? 'sum',
    algorithm: args.algorithm ?? 'auto',
    protocol: args.protocol,
    pdl: args.pdl ?? false,
    fallback: args.fallback ?? true,
    deterministic: args.deterministic,
    stream: args.stream,
    streams: args.streams ? [...args.streams] : undefined,
  }),
  matches: (key, args) =>
    args.count === key.count &&
    args.dtype === key.dtype &&
    (args.op ?? 'sum') === key.op &&
    (args.algorithm ?? 'auto') === key.algorithm &&
    args.protocol === key.protocol &&
    (args.pdl ?? false) === key.pdl &&
    (args.fallback ?? true) === key.fallback &&
    args.deterministic === key.deterministic &&
    sameStreams(key, args) &&
    sameNumbers(key.inputs, args.inputs) &&
    sameNumbers(key.outputs, args.outputs),
}

export type DeviceAllReduceCalls = EagerCallCache<
  DeviceAllReduceArgs,
  DeviceAllReduceKey,
  PreparedDeviceAllReduce,
  DeviceAllReduceInfo
>
/** The eager deviceAllReduce calls of one communicator. */
export const deviceAllReduceCalls = (): DeviceAllReduceCalls => new EagerCallCache(DEVICE_ALL_REDUCE_CALL)

// ---- deviceAllReduceRmsNorm and deviceRmsNorm (the same arguments; one cache each) ----

/** The fused call's shape and options as a key (defaults filled in): in process and per process alike. */
interface FusedNormOptionsKey extends Record<keyof Required<FusedNormOptions>, unknown> {
  rows: number
  hidden: number
  eps: number
  dtype: Dtype
  residualF32: boolean
  noResidualIn: boolean
  algorithm: FusedNormAlgorithm | 'auto'
  pdl: boolean
  outDtype: 'e4m3' | undefined
  outScale: number
}

function fusedNormOptionsKey(args: FusedNormOptions): FusedNormOptionsKey {
  return {
    rows: args.rows,
    hidden: args.hidden,
    eps: args.eps,
    dtype: args.dtype,
    // As given (with the default): the launcher reads these flags by truthiness, so a strict compare can only
    // re-pack a call that would have packed the same, never reuse one that would not.
    residualF32: args.residualF32 ?? false,
    noResidualIn: args.noResidualIn ?? false,
    algorithm: args.algorithm ?? 'auto',
    pdl: args.pdl ?? false,
    outDtype: args.outDtype,
    outScale: args.outScale ?? 1,
  }
}

/** eps and outScale by Object.is: -0 and 0 are equal numbers but pack different f32 bits. */
function sameFusedNormOptions(key: FusedNormOptionsKey, args: FusedNormOptions): boolean {
  return (
    args.rows === key.rows &&
    args.hidden === key.hidden &&
    Object.is(args.eps, key.eps) &&
    args.dtype === key.dtype &&
    (args.residualF32 ?? false) === key.residualF32 &&
    (args.noResidualIn ?? false) === key.noResidualIn &&
    (args.algorithm ?? 'auto') === key.algorithm &&
    (args.pdl ?? false) === key.pdl &&
    args.outDtype === key.outDtype &&
    Object.is(args.outScale ?? 1, key.outScale)
  )
}

/**
 * K, checked to name every field of argument type A (the rule the other keys state as Record<keyof Required<A>>): a
 * field added to the arguments and not to the key is a type error where the kind is declared.
 */
type KeyOf<A, K extends { [F in keyof Required<A>]: unknown }> = K

export interface FusedNormKey extends FusedNormOptionsKey {
  inputs: DevicePtr[]
  residuals: DevicePtr[]
  outputs: DevicePtr[]
  weights: DevicePtr[]
  stream: CuStream | undefined
  streams: CuStream[] | undefined
}

export const FUSED_NORM_CALL: EagerCallKind<
  DeviceAllReduceRmsNormArgs,
  KeyOf<DeviceAllReduceRmsNormArgs, FusedNormKey>
> = {
  keyOf: (args) => ({
    ...fusedNormOptionsKey(args),
    inputs: [...args.inputs],
    residuals: [...args.residuals],
    outputs: [...args.outputs],
    weights: [...args.weights],
    stream: args.stream,
    streams: args.streams ? [...args.streams] : undefined,
  }),
  matches: (key, args) =>
    sameFusedNormOptions(key, args) &&
    sameStreams(key, args) &&
    sameNumbers(key.inputs, args.inputs) &&
    sameNumbers(key.residuals, args.residuals) &&
    sameNumbers(key.outputs, args.outputs) &&
    sameNumbers(key.weights, args.weights),
}

export type FusedNormCalls = EagerCallCache<
  DeviceAllReduceRmsNormArgs,
  FusedNormKey,
  PreparedFusedDeviceCall,
  FusedDeviceInfo
>
/** The eager deviceAllReduceRmsNorm (or deviceRmsNorm) calls of one communicator. */
export const fusedNormCalls = (): FusedNormCalls => new EagerCallCache(FUSED_NORM_CALL)

// ---- deviceAllReduceMany ----

export interface AllReduceManyKey extends Record<keyof Required<DeviceAllReduceManyArgs>, unknown> {
  inputs: DevicePtr[][]
  outputs: DevicePtr[][]
  counts: number[]
  dtype: Dtype
  pdl: boolean
  stream: CuStream | undefined
  streams: CuStream[] | undefined
}

export const ALL_REDUCE_MANY_CALL: EagerCallKind<DeviceAllReduceManyArgs, AllReduceManyKey> = {
  keyOf: (args) => ({
    inputs: args.inputs.map((list) => [...list]),
    outputs: args.outputs.map((list) => [...list]),
    counts: [...args.counts],
    dtype: args.dtype,
    pdl: args.pdl ?? false,
    stream: args.stream,
    streams: args.streams ? [...args.streams] : undefined,
  }),
  matches: (key, args) =>
    args.dtype === key.dtype &&
    (args.pdl ?? false) === key.pdl &&
    sameStreams(key, args) &&
    sameNumbers(key.counts, args.counts) &&
    samePointerLists(key.inputs, args.inputs) &&
    samePointerLists(key.outputs, args.outputs),
}

export type AllReduceManyCalls = EagerCallCache<
  DeviceAllReduceManyArgs,
  AllReduceManyKey,
  PreparedFusedDeviceCall,
  FusedDeviceInfo
>
/** The eager deviceAllReduceMany calls of one communicator. */
export const allReduceManyCalls = (): AllReduceManyCalls => new EagerCallCache(ALL_REDUCE_MANY_CALL)

// ---- the per-process communicator's deviceAllReduce (one rank per process: one input, one output, one stream) ----

export interface ProcessDeviceAllReduceKey extends Record<keyof Required<ProcessDeviceAllReduceRequest>, unknown> {
  input: number | bigint
  output: number | bigint
  count: number
  dtype: Dtype
  op: ReduceOp
  algorithm: AlgorithmChoice
  stream: number | bigint | undefined
  protocol: LlProtocol | undefined
  pdl: boolean
  fallback: boolean
  deterministic: boolean | undefined
}

/**
 * Every field as given (defaults filled in), compared with ===: a pointer given once as a number and once as a
 * bigint is another key, which can only re-pack a call that would pack the same, never reuse one that would not.
 */
export const PROCESS_DEVICE_ALL_REDUCE_CALL: EagerCallKind<ProcessDeviceAllReduceRequest, ProcessDeviceAllReduceKey> = {
  keyOf: (r) => ({
    input: r.input,
    output: r.output,
    count: r.count,
    dtype: r.dtype,
    op: r.op ?? 'sum',
    algorithm: r.algorithm ?? 'auto',
    stream: r.stream,
    protocol: r.protocol,
    pdl: r.pdl ?? false,
    fallback: r.fallback ?? true,
    deterministic: r.deterministic,
  }),
  matches: (key, r) =>
    r.input === key.input &&
    r.output === key.output &&
    r.count === key.count &&
    r.dtype === key.dtype &&
    (r.op ?? 'sum') === key.op &&
    (r.algorithm ?? 'auto') === key.algorithm &&
    r.stream === key.stream &&
    r.protocol === key.protocol &&
    (r.pdl ?? false) === key.pdl &&
    (r.fallback ?? true) === key.fallback &&
    r.deterministic === key.deterministic,
}

/** What a cached per-process call issues: its prepared kernel chunks, or NCCL on the same pointers. */
export type ProcessPreparedCall =
  | { kind: 'kernel'; chunks: PreparedChunk[] }
  | { kind: 'nccl'; input: DevicePtr; output: DevicePtr; count: number; dtype: Dtype }

export type ProcessDeviceAllReduceCalls = EagerCallCache<
  ProcessDeviceAllReduceRequest,
  ProcessDeviceAllReduceKey,
  ProcessPreparedCall,
  AllReduceInfo
>
/** The eager deviceAllReduce calls of one per-process communicator (`kept` distinct calls). */
export const processDeviceAllReduceCalls = (kept: number): ProcessDeviceAllReduceCalls =>
  new EagerCallCache(PROCESS_DEVICE_ALL_REDUCE_CALL, kept)

// ---- the per-process communicator's fused calls (this rank's pointers, one stream) ----

/** Pointers and stream as given, compared with === (a number and a bigint for one address: another key, re-packed). */
export interface ProcessFusedNormKey extends FusedNormOptionsKey {
  input: number | bigint
  residual: number | bigint
  output: number | bigint
  weight: number | bigint
  stream: number | bigint | undefined
}

export const PROCESS_FUSED_NORM_CALL: EagerCallKind<
  ProcessDeviceAllReduceRmsNormRequest,
  KeyOf<ProcessDeviceAllReduceRmsNormRequest, ProcessFusedNormKey>
> = {
  keyOf: (r) => ({
    ...fusedNormOptionsKey(r),
    input: r.input,
    residual: r.residual,
    output: r.output,
    weight: r.weight,
    stream: r.stream,
  }),
  matches: (key, r) =>
    sameFusedNormOptions(key, r) &&
    r.input === key.input &&
    r.residual === key.residual &&
    r.output === key.output &&
    r.weight === key.weight &&
    r.stream === key.stream,
}

export type ProcessFusedNormCalls = EagerCallCache<
  ProcessDeviceAllReduceRmsNormRequest,
  ProcessFusedNormKey,
  PreparedFusedCall,
  FusedDeviceInfo
>
/** The eager deviceAllReduceRmsNorm calls of one per-process communicator (`kept` distinct calls). */
export const processFusedNormCalls = (kept: number): ProcessFusedNormCalls =>
  new EagerCallCache(PROCESS_FUSED_NORM_CALL, kept)

export interface ProcessAllReduceManyKey extends Record<keyof Required<ProcessDeviceAllReduceManyRequest>, unknown> {
  inputs: (number | bigint)[]
  outputs: (number | bigint)[]
  counts: number[]
  dtype: Dtype
  pdl: boolean
  stream: number | bigint | undefined
}

export const PROCESS_ALL_REDUCE_MANY_CALL: EagerCallKind<ProcessDeviceAllReduceManyRequest, ProcessAllReduceManyKey> = {
  keyOf: (r) => ({
    inputs: [...r.inputs],
    outputs: [...r.outputs],
    counts: [...r.counts],
    dtype: r.dtype,
    pdl: r.pdl ?? false,
    stream: r.stream,
  }),
  matches: (key, r) =>
    r.dtype === key.dtype &&
    (r.pdl ?? false) === key.pdl &&
    r.stream === key.stream &&
    sameNumbers(key.counts, r.counts) &&
    sameNumbers(key.inputs, r.inputs) &&
    sameNumbers(key.outputs, r.outputs),
}

export type ProcessAllReduceManyCalls = EagerCallCache<
  ProcessDeviceAllReduceManyRequest,
  ProcessAllReduceManyKey,
  PreparedFusedCall,
  FusedDeviceInfo
>
/** The eager deviceAllReduceMany calls of one per-process communicator (`kept` distinct calls). */
export const processAllReduceManyCalls = (kept: number): ProcessAllReduceManyCalls =>
  new EagerCallCache(PROCESS_ALL_REDUCE_MANY_CALL, kept)
