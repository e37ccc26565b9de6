/**
 * The device-buffer calls as the CUDA communicator takes them (deviceAllReduce, prepareDeviceAllReduce and the fused
 * calls): argument and result types only, apart from communicator.ts so that its helpers (benchmark.ts,
 * eager-calls.ts) need not import it.
 */
import type {
  AlgorithmChoice,
  AlgorithmName,
  Dtype,
  FusedDeviceInfo,
  FusedNormOptions,
  LlProtocol,
  ReduceOp,
} from '../../api/types.js'
import type { LlcommErrorCode } from '../../errors.js'
import type { CuStream, DevicePtr } from '../../ffi/types.js'

/** Arguments of a device-buffer AllReduce. Pointers are indexed by global rank. */
export interface DeviceAllReduceArgs {
  inputs: readonly DevicePtr[]
  outputs: readonly DevicePtr[]
  /** Elements per rank. */
  count: number
  dtype: Dtype
  op?: ReduceOp
  algorithm?: AlgorithmChoice
  protocol?: LlProtocol
  pdl?: boolean
  /**
   * What runs when llcomm's kernels cannot serve the call: 'nccl' (NCCL on the same streams; an error where NCCL is
   * not usable), true (the default: NCCL where usable, else a kernel that serves any shape), false (an
   * UNSUPPORTED_ALGORITHM error instead). What ran is in the returned info.
   */
  fallback?: DeviceFallback
  /** The rank-order f32 sum rounded once (src/algorithms/determinism.ts); default: the communicator's. */
  deterministic?: boolean
  /** The caller's stream, when all ranks live on one device. */
  stream?: CuStream
  /** One stream per distinct device (launch group), in order of first appearance in `devices`. */
  streams?: readonly CuStream[]
}

export interface DeviceAllReduceInfo {
  algorithm: AlgorithmName
  fallbackReason?: string
  chunks: number
}

/** A device AllReduce packed once; `issue()` launches it again (same pointers and count) without allocating. */
export interface PreparedDeviceAllReduce extends DeviceAllReduceInfo {
  issue(streams?: readonly CuStream[]): void
}

/** CudaCommunicator fallback policy for device calls (DeviceAllReduceArgs.fallback). */
export type DeviceFallback = 'nccl' | boolean

/** A question for canServe(): could a device call of this shape run here? */
export interface CanServeQuery {
  /** Elements per rank. */
  count: number
  dtype: Dtype
  op?: ReduceOp
  algorithm?: AlgorithmChoice
  fallback?: DeviceFallback
  deterministic?: boolean
}

/** canServe()'s answer: what would run (and whether it is a fallback), or why nothing can. */
export type CanServeResult =
  | { ok: true; algorithm: AlgorithmName; fallbackReason?: string }
  | { ok: false; code: LlcommErrorCode; reason: string }

/** A CUDA graph captured by CudaCommunicator.captureGraph(); `launch()` replays it. */
export interface DeviceGraph {
  /** Replays the graph on `stream` (default: the first stream it was captured on). */
  launch(stream?: CuStream): void
  destroy(): void
}

// ---- the fused calls (issue 21: fused-launcher.ts launches them) ----

export type { FusedNormAlgorithm } from '../../api/types.js'

/** A fused call's pointers, one per rank by global rank: x, residual (read and written), out, weight. */
export interface FusedNormCall extends FusedNormOptions {
  inputs: readonly DevicePtr[]
  residuals: readonly DevicePtr[]
  outputs: readonly DevicePtr[]
  weights: readonly DevicePtr[]
}

export interface FusedManyCall {
  inputs: readonly (readonly DevicePtr[])[]
  outputs: readonly (readonly DevicePtr[])[]
  counts: readonly number[]
  dtype: Dtype
  pdl?: boolean
}

/** Arguments of the fused AllReduce + residual + RMSNorm (and of the reference RMSNorm); pointers by global rank. */
export interface DeviceAllReduceRmsNormArgs extends FusedNormCall {
  stream?: CuStream
  streams?: readonly CuStream[]
}
/** Arguments of deviceAllReduceMany: inputs[b][rank], outputs[b][rank], counts[b] elements per rank. */
export interface DeviceAllReduceManyArgs extends FusedManyCall {
  stream?: CuStream
  streams?: readonly CuStream[]
}

// The per-process request and the info every fused call returns are public types (api/types.ts), so that
// CudaProcessCommunicatorApi can name them.
export type {
  FusedDeviceInfo,
  ProcessDeviceAllReduceManyRequest,
  ProcessDeviceAllReduceRmsNormRequest,
} from '../../api/types.js'
export interface PreparedFusedDeviceCall extends FusedDeviceInfo {
  issue(streams?: readonly CuStream[]): void
}

/** A fused call packed once: issue() launches it again (same pointers and shape) without allocating. */
export interface PreparedFusedCall {
  /** 'oneshot' / 'twoshot' / 'split' / 'split-ll' / 'split-twoshot' (fused RMSNorm), 'rmsnorm' (reference), 'many'. */
  algorithm: string
  launches: number
  issue(streams: readonly CuStream[]): void
}

/** The split fused kernels (a row shared by a thread-block cluster; fused-launcher.ts). */
export type FusedSplitAlgorithm = 'split' | 'split-ll' | 'split-twoshot'

/**
 * A probe launch: `kernel` (in `sourceFile`, default FUSED_PROBE_SOURCE) launched with the shape the split planner
 * gives `plan` (rows per launch, blocks per rank, cluster size), with or without the cluster and cooperative
 * attributes. Never reached by a library call; the probe kernels other than the shipped ones give wrong outputs
 * (timing only).
 */
export interface FusedProbe {
  kernel: string
  sourceFile?: string
  plan: FusedSplitAlgorithm
  /** Launch with the plan's cluster dimension (else none: the kernel sees clusters of one). */
  cluster: boolean
  cooperative: boolean
  /** Pass the plan's cluster size in flags >> 8 (kernels with LLC_SPLIT_PROBE_C_FROM_FLAGS). */
  flagC?: boolean
  /** The 16-byte parameter struct of llcomm_fused_probe_empty_small (errorWord, rows) instead of the fused one. */
  smallParams?: boolean
  /** A SPREAD kernel: refused (INVALID_ARGUMENT) unless fusedSplitSpreadApplies to every launch. */
  spread?: boolean
}
