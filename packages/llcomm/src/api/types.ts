/// <reference lib="esnext.disposable" preserve="true" />
// (AsyncDisposable and Symbol.asyncDispose: a consumer needs neither @types/node nor lib "esnext" for our .d.ts files)
/**
 * The whole public surface in one typed file (after esbuild's lib/shared/types.ts). Options are string-literal
 * unions. Names here are stable: tests and tools depend on them (docs/design.md §5).
 */

export type Backend = 'cpu' | 'cuda'
export type Dtype = 'f32' | 'f16' | 'bf16'
export type ReduceOp = 'sum'

/** Algorithms of docs/design.md §3. `nccl` and `nccl-symmetric` exist on the cuda backend only. */
export type AlgorithmName =
  | 'oneshot-ll'
  | 'oneshot-sentinel'
  | 'twoshot-sentinel'
  | 'twoshot-atomic'
  | 'oneshot-barrier'
  | 'ring'
  | 'nccl'
  | 'nccl-symmetric'
export type AlgorithmChoice = AlgorithmName | 'auto'

/** Synchronization format of LL packets. LL16 (cuda only) = 8 B data + 8 B flag; LL8 = 4 B data + 4 B flag. */
export type LlProtocol = 'll8' | 'll16'

/** Typed array per dtype: Float32Array for f32; raw IEEE bits in a Uint16Array for f16 and bf16. */
export type TensorArray = Float32Array | Uint16Array

export interface CommunicatorOptionsBase {
  /** Per-wait deadline in milliseconds: a peer that never arrives turns into LlcommError TIMEOUT. Default 10000. */
  timeoutMs?: number
  /**
   * Capacity of each rank's LL buffer in bytes of payload per half; larger messages are chunked. Default 4 MiB on
   * cuda (32-40 MiB of device memory per rank: deviceBufferLayout), 256 KiB on cpu (DEFAULT_BUFFER_BYTES).
   */
  bufferBytes?: number
  /** Path of a tuning table for `auto` (JSON as written by `llcomm tune`); the shipped default otherwise. */
  tuningTable?: string
  /** Default of every call's `deterministic` (AllReduceOptions). Default false. */
  deterministic?: boolean
}

export interface CpuCommunicatorOptions extends CommunicatorOptionsBase {
  backend: 'cpu'
  ranks: number
  /**
   * Busy-spin polls before a waiter blocks in Atomics.wait (ranks may outnumber cores). Default: 20,000 when
   * every rank has a core (os.availableParallelism()), else 0.
   */
  spinIterations?: number
}

/**
 * How f16/bf16 sums accumulate on the cuda backend. 'f32' (default): every algorithm adds in f32 and rounds once to
 * the dtype. 'dtype': ring rounds its partial sums to the dtype at every hop and twoshot-atomic adds with packed
 * 16-bit red.add (denser buffers, less exact); the other algorithms are unchanged. docs/kernels.md, "Numerics".
 */
export type Accumulation = 'f32' | 'dtype'

export interface CudaCommunicatorOptions extends CommunicatorOptionsBase {
  backend: 'cuda'
  /** Device ordinals, one per rank. A repeated index gives virtual ranks on one GPU. */
  devices: number[]
  /** Directory of the NVRTC cubin cache. Default: $LLCOMM_CACHE_DIR or ~/.cache/llcomm. */
  cacheDir?: string
  /** f16/bf16 accumulation of ring and twoshot-atomic (Accumulation). Default 'f32'. */
  accumulation?: Accumulation
}

export type CommunicatorOptions = CpuCommunicatorOptions | CudaCommunicatorOptions

/** Switches for ablations (docs/design.md §3: each optimization can be switched on or off per call). */
export interface AllReduceOptions {
  algorithm?: AlgorithmChoice
  dtype?: Dtype
  op?: ReduceOp
  /** LL packet format for oneshot-ll; 'll16' on cuda only. Default: 'll8' on cpu, the tuned choice on cuda. */
  protocol?: LlProtocol
  /** Programmatic dependent launch (cuda). */
  pdl?: boolean
  /** Fall back to `ring` (cpu) / `nccl` (cuda) when the algorithm cannot serve the shape. Default true. */
  fallback?: boolean
  /**
   * The rank-order f32 sum rounded once, bit-identical whatever algorithm, size, chunking or backend: `auto` picks only
   * algorithms that keep it, and another is replaced (info.fallbackReason) or, with `fallback: false`, refused
   * (UNSUPPORTED_ALGORITHM). Default: the communicator's `deterministic`, else false. docs/protocols.md.
   */
  deterministic?: boolean
}

export interface AllReduceInfo {
  /** The algorithm that actually ran (differs from the requested one after `auto` or a fallback). */
  algorithm: AlgorithmName
  /** Set when a fallback replaced the requested algorithm, with the reason. */
  fallbackReason?: string
  chunks: number
}

/** Result of the driver-view allReduce: one output per rank (same type as the inputs) plus what ran. */
export type AllReduceOutputs<T extends TensorArray = TensorArray> = T[] & { info: AllReduceInfo }

/** Timings measured inside the ranks, for `llcomm bench`. */
export interface BenchmarkRequest {
  algorithm: AlgorithmChoice
  dtype: Dtype
  op?: ReduceOp
  /** Elements per rank. */
  count: number
  iters: number
  warmup?: number
  /** Random per-rank delay (uniform 0..skewUs) before each call. */
  skewUs?: number
  /**
   * A fixed delay of computeUs on every rank before each call (added to the random skew): a stand-in for a model's
   * compute, so that each call starts right after a kernel, as in a decode step. The delay's own time is measured
   * apart and not counted in the collective's.
   */
  computeUs?: number
  protocol?: LlProtocol
  pdl?: boolean
}

export interface BenchmarkResult {
  algorithm: AlgorithmName
  /** Per-iteration collective time in µs (max over ranks, measured from the last rank's arrival). */
  timesUs: number[]
  /** Per-iteration time spent waiting for the last rank to arrive (skew), reported apart. */
  skewWaitUs: number[]
  /** Wrong elements against a float64 reference, over the checked iterations. */
  wrong: number
  /**
   * cpu: the timed loop as nccl-tests times it, back to back: (last finish of the last timed call − first
   * arrival of the first) / iters, in µs. Unlike `timesUs` it counts what a rank running ahead into the next
   * call saves (and any skew); on cuda, `timesUs` is already graph replay of back-to-back calls.
   */
  backToBackUs?: number
  /** Set when a fallback replaced the requested algorithm, with the reason (as AllReduceInfo.fallbackReason). */
  fallbackReason?: string
}

export interface Communicator extends AsyncDisposable {
  readonly backend: Backend
  readonly size: number
  /** Algorithm names usable on this communicator (always includes 'auto'). */
  readonly algorithms: readonly AlgorithmChoice[]
  allReduce<T extends TensorArray>(inputs: T[], options?: AllReduceOptions): Promise<AllReduceOutputs<T>>
  /**
   * Several AllReduces of different sizes in one call: buffers[b][rank] is rank `rank`'s input of buffer b; one
   * output list per buffer, each bit-identical to allReduce of that buffer alone with the same options (cuda:
   * one launch for the group unless an algorithm is forced; cpu: the buffers' calls queued as one).
   */
  allReduceMany<T extends TensorArray>(buffers: T[][], options?: AllReduceOptions): Promise<AllReduceOutputs<T>[]>
  benchmark(request: BenchmarkRequest): Promise<BenchmarkResult>
  /** Drains in-flight work, frees every resource; idempotent and awaitable. */
  close(): Promise<void>
  /** Aborts in-flight work and frees every resource; idempotent and awaitable. */
  destroy(): Promise<void>
  /**
   * After a failed call (TIMEOUT, MISMATCH, WORKER_FAILED, a device error) every later call rejects with that code
   * and no data until recover(): queued behind earlier calls, it brings every rank back to its initial state
   * (buffers re-armed, epochs agreed) with no barrier of the caller's own.
   */
  recover(): Promise<void>
}

export const ALL_ALGORITHMS: readonly AlgorithmName[] = [
  'oneshot-ll',
  'oneshot-sentinel',
  'twoshot-sentinel',
  'twoshot-atomic',
  'oneshot-barrier',
  'ring',
  'nccl',
  'nccl-symmetric',
]
/** The algorithms llcomm implements itself, on every backend (everything but the NCCL baselines). */
export const LLCOMM_ALGORITHMS: readonly AlgorithmName[] = [
  'oneshot-ll',
  'oneshot-sentinel',
  'twoshot-sentinel',
  'twoshot-atomic',
  'oneshot-barrier',
  'ring',
]
export const BARRIER_FREE_ALGORITHMS: readonly AlgorithmName[] = [
  'oneshot-ll',
  'oneshot-sentinel',
  'twoshot-sentinel',
  'twoshot-atomic',
]
export const DTYPES: readonly Dtype[] = ['f32', 'f16', 'bf16']
export const DTYPE_BYTES: Readonly<Record<Dtype, number>> = { f32: 4, f16: 2, bf16: 2 }

// ---- One process per rank (issue 20) ----

/** Where the ranks meet: rank 0 hosts a TCP store at HOST:PORT; 'env' reads LLCOMM_RANK, LLCOMM_WORLD_SIZE, LLCOMM_RENDEZVOUS. */
export type RendezvousSpec = `tcp://${string}` | 'env'

/**
 * Options of a per-rank communicator (one process per rank). Every rank passes the same worldSize, bufferBytes
 * and tuning table (the rendezvous refuses a group that disagrees: INVALID_ARGUMENT on every rank).
 */
export interface ProcessCommunicatorOptions extends CommunicatorOptionsBase {
  backend: Backend
  /** This process's rank, 0..worldSize-1 (from LLCOMM_RANK with rendezvous 'env'). */
  rank?: number
  /** Number of ranks (from LLCOMM_WORLD_SIZE with rendezvous 'env'). */
  worldSize?: number
  rendezvous: RendezvousSpec
  /** cuda: this rank's device ordinal. Default 0 (several processes may share one GPU). */
  device?: number
  /** Deadline of the rendezvous in ms (every rank must have joined by then). Default: timeoutMs. */
  rendezvousTimeoutMs?: number
  /** cpu: busy-spin polls before a wait blocks on its futex (as CpuCommunicatorOptions.spinIterations). */
  spinIterations?: number
  /** cuda: directory of the NVRTC cubin cache (as CudaCommunicatorOptions.cacheDir). */
  cacheDir?: string
}

/** One rank's output of a per-rank allReduce: the same typed array type as its input, with what ran. */
export type RankAllReduceOutput<T extends TensorArray = TensorArray> = T & { info: AllReduceInfo }

/** A per-rank communicator: this process is one rank of `size`. Calls are collective (every rank makes them). */
export interface ProcessCommunicator extends AsyncDisposable {
  readonly backend: Backend
  readonly rank: number
  readonly size: number
  /** Algorithm names usable on this communicator (always includes 'auto'). */
  readonly algorithms: readonly AlgorithmChoice[]
  /** This rank's input in, this rank's output out (a new array), after every rank has contributed. */
  allReduce<T extends TensorArray>(input: T, options?: AllReduceOptions): Promise<RankAllReduceOutput<T>>
  /**
   * Several AllReduces of this rank's buffers as one call, one output per buffer, each bit-identical to allReduce of
   * that buffer alone with the same options. Every rank passes the same number of buffers with the same counts: a
   * rank that does not fails with MISMATCH on every rank before any buffer's data is reduced (docs/protocols.md,
   * "Per process: a host-view allReduceMany's group signature").
   */
  allReduceMany<T extends TensorArray>(inputs: T[], options?: AllReduceOptions): Promise<RankAllReduceOutput<T>[]>
  /**
   * Recovery after a failed call whose ranks are all alive (MISMATCH, TIMEOUT, a refused call's MISMATCH): every
   * rank calls it, as a collective. It waits until this rank's work has ended (a failed call's waits end at their
   * deadline), meets the other ranks, re-arms this rank's buffers and epochs, meets them again; then calls work
   * again. Rejects with PEER_FAILED where a rank's process is gone (destroy() and create a new communicator), with
   * TIMEOUT where a rank does not come within twice timeoutMs and a margin (call it again on every rank).
   */
  recover(): Promise<void>
  /** Drains queued calls, leaves the group, frees every resource; idempotent and awaitable. */
  close(): Promise<void>
  /** Leaves at once, frees every resource (queued calls reject with CLOSED); idempotent and awaitable. */
  destroy(): Promise<void>
}

/** A device-buffer all-reduce on a per-rank cuda communicator (graph-capturable: no host sync inside). */
export interface ProcessDeviceAllReduceRequest {
  /** Device pointers (CUdeviceptr as a number or bigint) of `count` elements of `dtype`. */
  input: number | bigint
  output: number | bigint
  /**
   * Elements. 0 is a call too: it launches the call's signature block alone (every rank must make it, as any call;
   * a rank whose call is empty where its peers' is not fails with MISMATCH with them).
   */
  count: number
  dtype: Dtype
  op?: ReduceOp
  algorithm?: AlgorithmChoice
  /** CUstream handle (0 or omitted: the communicator's own stream). */
  stream?: number | bigint
  protocol?: LlProtocol
  pdl?: boolean
  fallback?: boolean
  /** As AllReduceOptions.deterministic. Default: the communicator's `deterministic`, else false. */
  deterministic?: boolean
}

/**
 * The fused kernels: oneshot / twoshot (whole rows per block), split / split-ll (a row shared by the blocks of a
 * thread-block cluster, sm_90+, on sentinel slots or LL16 packets), split-twoshot (the same row sharing with each
 * block's slots exchanged two-shot). docs/kernels.md.
 */
export type FusedNormAlgorithm = 'oneshot' | 'twoshot' | 'split' | 'split-ll' | 'split-twoshot'

/** The shape and options of a fused AllReduce + residual add + RMSNorm call, in process and per process. */
export interface FusedNormOptions {
  rows: number
  hidden: number
  eps: number
  dtype: Dtype
  /** The residual stream is f32 (else x's dtype). */
  residualF32?: boolean
  /** residual = allreduce(x), ignoring the residual's contents (the first layer). */
  noResidualIn?: boolean
  algorithm?: FusedNormAlgorithm | 'auto'
  pdl?: boolean
  /**
   * 'e4m3': the normalized output as FP8 e4m3, one byte per element: e4m3(y × outScale), round to nearest even,
   * saturated to ±448 (sm_89+). Default: x's dtype.
   */
  outDtype?: 'e4m3'
  /** The e4m3 output's per-tensor scale (the reciprocal of the dequantization scale). Default 1. */
  outScale?: number
}

/**
 * The per-process fused AllReduce + residual add + RMSNorm (CudaProcessCommunicatorApi.deviceAllReduceRmsNorm):
 * residual += allreduce(x); out = rmsnorm(residual) * weight, with this rank's pointers (CUdeviceptr as a number or
 * bigint) and one stream. Every rank must make the same call (rows, hidden, dtype, eps, flags, algorithm): a rank
 * that does not ends the call with MISMATCH on every rank (the fused signature, docs/protocols.md).
 */
export interface ProcessDeviceAllReduceRmsNormRequest extends FusedNormOptions {
  /** x, residual (read and written), out, weight of this rank. */
  input: number | bigint
  residual: number | bigint
  output: number | bigint
  weight: number | bigint
  /** CUstream handle (0 or omitted: the communicator's own stream). */
  stream?: number | bigint
}

/**
 * The per-process allReduceMany (CudaProcessCommunicatorApi.deviceAllReduceMany): several AllReduces of different
 * sizes, usually in one launch, each result bitwise equal to the in-process deviceAllReduceMany's. This rank's pointer
 * per buffer (CUdeviceptr as a number or bigint), counts[b] elements of buffer b, one stream. Every rank must make
 * the same call (dtype, buffer count, every count): a rank that does not ends the call with MISMATCH on every rank
 * (the allReduceMany signature, docs/protocols.md).
 */
export interface ProcessDeviceAllReduceManyRequest {
  inputs: (number | bigint)[]
  outputs: (number | bigint)[]
  counts: number[]
  dtype: Dtype
  pdl?: boolean
  /** CUstream handle (0 or omitted: the communicator's own stream). */
  stream?: number | bigint
}

/** What a fused device call launched: its kernel ('oneshot', 'split', …; 'rmsnorm', 'many') and launch count. */
export interface FusedDeviceInfo {
  algorithm: string
  launches: number
}

export interface CudaProcessCommunicatorApi extends ProcessCommunicator {
  readonly backend: 'cuda'
  readonly device: number
  /** Enqueues the all-reduce on `stream`; returns what will run (no wait for the GPU). */
  deviceAllReduce(request: ProcessDeviceAllReduceRequest): AllReduceInfo
  /** Enqueues the fused AllReduce + residual add + RMSNorm on `stream` (no wait for the GPU). */
  deviceAllReduceRmsNorm(request: ProcessDeviceAllReduceRmsNormRequest): FusedDeviceInfo
  /**
   * Enqueues several AllReduces of different sizes (usually one launch) on `stream` (no wait for the GPU). Refused
   * (UNSUPPORTED_ALGORITHM) as deviceAllReduceRmsNorm is: under LLCOMM_SIG_BLOCK=0, or where the ranks' devices differ.
   */
  deviceAllReduceMany(request: ProcessDeviceAllReduceManyRequest): FusedDeviceInfo
}
