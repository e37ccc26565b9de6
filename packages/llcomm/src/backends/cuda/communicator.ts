/**
 * The cuda communicator: `createCudaCommunicator({ backend: 'cuda', devices, timeoutMs, bufferBytes })`.
 *
 * Ownership (created in this order, freed in reverse by close()/destroy()):
 *   DeviceSet (primary contexts, peer access) → KernelModules (NVRTC/cubin cache, cuModuleLoadData)
 *   → DeviceAllocations (per-rank receive buffer and scratch, the error word, staging) → internal streams
 *   → launch configs → NCCL communicators and windows (lazily, for the nccl baselines).
 *
 * Three views:
 *   - `deviceAllReduce(args)`: device buffers, the caller's stream(s), no synchronization: graph-capturable.
 *     Call `checkDeviceError()` after the caller's stream has finished to turn a device timeout into TIMEOUT.
 *   - `prepareDeviceAllReduce(args)`: the same, pre-packed, for hot loops: `issue()` is allocation-free.
 *   - `allReduce(inputs, options)` (docs/design.md §5 driver view): host arrays copied in and out, synchronous inside.
 *
 * Lifecycle, the call queue, poisoning and recovery are CommunicatorBase's (src/communicator/base.ts): driver-view
 * calls (allReduce, benchmark, decodeStep) run one at a time in FIFO order, so the one staging pair is never used by
 * two calls at once and grows only between calls; inputs are copied at submission. A device failure (the error
 * word, or a stream that outlives its deadline) poisons every view until recover(), which waits for the internal
 * streams, re-writes every rank's receive buffer and scratch to their initial contents (sentinels re-armed, every
 * channel's epoch word back to 0 on every rank: the epochs agree on the device) and clears the error word. Device
 * views (deviceAllReduce, prepareDeviceAllReduce) run on the caller's streams, outside the queue: after a failure
 * there, synchronize those streams before recover().
 */

import { loadTuningTable, type TuningTable } from '../../algorithms/auto.js'
import { type AlgorithmCapabilities, type ResolveCall, resolveAlgorithm } from '../../algorithms/resolve.js'
import type {
  Accumulation,
  AlgorithmChoice,
  AlgorithmName,
  AllReduceOptions,
  AllReduceOutputs,
  BenchmarkRequest,
  BenchmarkResult,
  CudaCommunicatorOptions,
  Dtype,
  ReduceOp,
  TensorArray,
} from '../../api/types.js'
import { ALL_ALGORITHMS, DTYPE_BYTES, DTYPES } from '../../api/types.js'
import { CommunicatorBase, type PreparedCall } from '../../communicator/base.js'
import {
  DEFAULT_TIMEOUT_MS as COMMON_DEFAULT_TIMEOUT_MS,
  DEFAULT_BUFFER_BYTES as DEFAULT_BUFFER_BYTES_OF,
  validateCommunicatorOptions,
} from '../../communicator/options.js'
import {
  validateAllReduceOptions,
  validateBenchmarkRequest,
  validateDeterministic,
  validateInputs,
} from '../../communicator/validate.js'
import { LlcommError, toLlcommError } from '../../errors.js'
import {
  type CudaDriver,
  type CuStream,
  cudaDriver,
  type DevicePtr,
  nccl as loadNccl,
  nvrtc as loadNvrtc,
} from '../../ffi/index.js'
import {
  LLCOMM_ERROR_WORD_BYTES as ERROR_WORD_BYTES,
  LLCOMM_ERR_TIMEOUT,
  LLCOMM_MAX_CHANNELS,
  LLCOMM_SCRATCH_EPOCHS_OFFSET,
  LLCOMM_SCRATCH_SIGNATURE_OFFSET,
} from './abi.js'
import { AllReduceLauncher, type PreparedChunk } from './allreduce-launcher.js'
import { runCudaBenchmark } from './benchmark.js'
import type {
  CanServeQuery,
  CanServeResult,
  DeviceAllReduceArgs,
  DeviceAllReduceInfo,
  DeviceAllReduceManyArgs,
  DeviceAllReduceRmsNormArgs,
  DeviceFallback,
  DeviceGraph,
  FusedDeviceInfo,
  FusedProbe,
  PreparedDeviceAllReduce,
  PreparedFusedCall,
  PreparedFusedDeviceCall,
} from './device-call.js'
import { DeviceSet, validateDeviceList } from './devices.js'
import { allReduceManyCalls, deviceAllReduceCalls, type EagerCallCache, fusedNormCalls } from './eager-calls.js'
import { copyErrorWord, decodeErrorWord, errorFromWord } from './error-word.js'
import { FusedLauncher } from './fused-launcher.js'
import { CapturedGraph } from './graph.js'
import {
  accumulationBuild,
  deviceBufferLayout,
  FUSED_SIGNATURE_IN_PROCESS,
  KERNEL_VARIANTS,
  kernelBuildDefines,
  kernelSources,
  parseTwoshotAllGather,
  SIGNATURE_BLOCK,
  SIGNATURE_DEFERRED,
  SIGNATURE_KERNEL_BUILD,
} from './kernel-table.js'
import { checkLatestSignaturesOfRank, DEFERRED_SIGNATURE_SLOT_MASK } from './latest-signature.js'
import { DeviceAllocations } from './memory.js'
import { KernelModules } from './modules.js'
import { NcclBaseline, ncclUnavailableReason } from './nccl-baseline.js'
import { reclassifyTimeout, SIGNATURE_REGION_WORDS } from './timeout-signature.js'
import { UserDeviceResources } from './user-resources.js'

export const DEFAULT_TIMEOUT_MS = COMMON_DEFAULT_TIMEOUT_MS

/** The `accumulation` option: 'f32' (default) or 'dtype'; INVALID_ARGUMENT for anything else. */
export function validateAccumulation(value: unknown): Accumulation {
  if (value === undefined || value === 'f32' || value === 'dtype') return value ?? 'f32'
  throw new LlcommError('INVALID_ARGUMENT', `accumulation must be 'f32' or 'dtype', got ${JSON.stringify(value)}`, {
    accumulation: value,
  })
}
export const DEFAULT_BUFFER_BYTES = DEFAULT_BUFFER_BYTES_OF.cuda

export type {
  CanServeQuery,
  CanServeResult,
  DeviceAllReduceArgs,
  DeviceAllReduceInfo,
  DeviceAllReduceManyArgs,
  DeviceAllReduceRmsNormArgs,
  DeviceFallback,
  DeviceGraph,
  FusedDeviceInfo,
  FusedManyCall,
  FusedNormAlgorithm,
  FusedNormCall,
  PreparedDeviceAllReduce,
  PreparedFusedCall,
  PreparedFusedDeviceCall,
} from './device-call.js'

const NCCL_ALGORITHMS: readonly AlgorithmName[] = ['nccl', 'nccl-symmetric']
const ANY_ALGORITHM: readonly AlgorithmChoice[] = ['auto', ...ALL_ALGORITHMS]
const AUTO_PREFERENCE: readonly AlgorithmName[] = ['oneshot-ll', 'oneshot-sentinel', 'twoshot-sentinel', 'nccl', 'ring']
/** Kernel algorithms that serve any shape, in the order a fallback tries them when NCCL is not usable. */
const FALLBACK_KERNELS: readonly AlgorithmName[] = ['ring', 'oneshot-barrier']

/**
 * What the tools (`llcomm decode`, `llcomm sol`) need of a communicator to launch their own kernels beside its
 * collectives: its driver, devices, allocations and module cache. Reached only through `llcomm/internal`
 * (cudaCommunicatorInternals); the communicator owns them, so they are valid until its close().
 */
export interface CudaCommunicatorInternals {
  driver: CudaDriver
  deviceSet: DeviceSet
  allocations: DeviceAllocations
  modules: KernelModules
}
const INTERNALS = new WeakMap<CudaCommunicator, CudaCommunicatorInternals>()

/**
 * What a CudaCommunicator owns that outlives it when dropped without close(). It must not reference the
 * communicator (the registry's held value keeps it alive otherwise); `nccl` is filled in when the clique is made.
 */
interface DroppedCudaResources {
  driver: CudaDriver
  deviceSet: DeviceSet
  allocs: DeviceAllocations
  modules: KernelModules
  internalStreams: CuStream[]
  nccl: NcclBaseline | undefined
}

/** Runs one freeing step; a failure does not stop the next steps (one failure must not leak the rest). */
function attempt(step: () => void): void {
  try {
    step()
  } catch {
    // keep freeing
  }
}

/**
 * Frees what a communicator owns on the device, in close()'s order (NCCL, streams, memory, modules, contexts), each
 * step on its own. Work still queued on its streams finishes first: cuStreamDestroy lets queued work complete, and
 * cuMemFree waits for the device. close()/destroy() (releaseAll) and the registry below both end here.
 */
function releaseDeviceResources(o: DroppedCudaResources): void {
  attempt(() => o.nccl?.destroy())
  for (const [i, s] of [...o.internalStreams.entries()].reverse()) {
    attempt(() => {
      o.deviceSet.use(o.deviceSet.groups[i])
      o.driver.streamDestroy(s)
    })
  }
  o.internalStreams.length = 0
  attempt(() => o.allocs.freeAll())
  attempt(() => o.modules.unloadAll())
  attempt(() => o.deviceSet.release())
}

/** Dropped without close(): frees the device resources once the communicator is collected (issue 19 item 4). */
const droppedCudaCommunicators = new FinalizationRegistry<DroppedCudaResources>(releaseDeviceResources)

/** The internals of an open communicator (see CudaCommunicatorInternals). */
export function cudaCommunicatorInternals(comm: CudaCommunicator): CudaCommunicatorInternals {
  const internals = INTERNALS.get(comm)
  if (!internals) throw new LlcommError('INVALID_ARGUMENT', 'not a CudaCommunicator created by this library')
  return internals
}

export async function createCudaCommunicator(options: CudaCommunicatorOptions): Promise<CudaCommunicator> {
  return new CudaCommunicator(options)
}

export class CudaCommunicator extends CommunicatorBase {
  readonly backend = 'cuda' as const
  readonly size: number
  readonly devices: readonly number[]
  readonly algorithms: readonly AlgorithmChoice[]
  readonly timeoutMs: number
  readonly bufferBytes: number
  /** Where the native libraries were found (for reports). */
  readonly libraries: { cuda: string; nvrtc: string; nccl?: string }

  private readonly driver: CudaDriver
  private readonly deviceSet: DeviceSet
  private readonly modules: KernelModules
  private readonly allocs: DeviceAllocations
  /** Memory and streams handed out to the caller (allocate, createStream), released by close(). */
  private readonly user: UserDeviceResources
  /** Graphs captured through captureGraph(), destroyed by close(). */
  private readonly graphs = new Set<CapturedGraph>()
  private readonly launcher: AllReduceLauncher
  private readonly internalStreams: CuStream[] = []
  private readonly errorWord: DevicePtr
  private readonly rankRecvBuf: DevicePtr[] = []
  private readonly rankScratch: DevicePtr[] = []
  private readonly kernelAlgorithms: readonly AlgorithmName[]
  private readonly ncclReason: string | undefined
  private readonly tuning: TuningTable
  /** The communicator's `deterministic` default (CommunicatorOptionsBase). */
  private readonly deterministic: boolean
  /**
   * The device resources: the same objects as the fields above (and the NCCL clique, made on first use), kept apart
   * so that `droppedCudaCommunicators` can free them without holding the communicator.
   */
  private readonly owned: DroppedCudaResources
  private staging:
    | {
        bytes: number
        inputs: DevicePtr[]
        outputs: DevicePtr[]
        symmetric?: { inputs: DevicePtr[]; outputs: DevicePtr[] }
      }
    | undefined
  /** Set once releaseAll() has run (close or destroy): device memory, modules and contexts are gone. */
  private closed = false
  private lastStreams: readonly CuStream[] | undefined
  /** A device failure seen by checkDeviceError or a stream wait: device views refuse to launch until recover(). */
  private broken: LlcommError | undefined
  private readonly capabilities: AlgorithmCapabilities
  /** f16/bf16 accumulation of ring and twoshot-atomic (option `accumulation`, default 'f32'). */
  readonly accumulation: Accumulation
  /** Every rank's buffers at their initial contents (creation and recover()). */
  private readonly layout: ReturnType<typeof deviceBufferLayout>
  /**
   * The kernels check call signatures one launch late (LLCOMM_SIG_DEFERRED; kernel-table.ts SIGNATURE_DEFERRED):
   * checkDeviceError then checks each channel's last launch itself (latest-signature.ts).
   */
  private readonly signatureDeferred = SIGNATURE_DEFERRED
  /** Per rank, the epoch last checked on each channel by the host (latest-signature.ts); reset with the epochs. */
  private latestChecked: Uint32Array[] = []

  /** Hooks for tests and the long-run script (not public API). */
  readonly testHooks = {
    /**
     * Sets every channel's epoch word on every rank to `stored` (the next call's epoch is stored + 1), e.g. just
     * below 2^32 so that a run crosses the wrap. Only between calls (the internal streams idle).
     */
    setChannelEpochs: (stored: number): void => {
      if (!Number.isInteger(stored) || stored < 0 || stored > 0xffffffff) {
        throw new LlcommError('INVALID_ARGUMENT', 'setChannelEpochs needs a u32')
      }
      for (let r = 0; r < this.size; r++) {
        this.deviceSet.use(this.deviceSet.groups[this.deviceSet.rankGroup[r]])
        this.driver.memsetD32(
          (this.rankScratch[r] + LLCOMM_SCRATCH_EPOCHS_OFFSET) as DevicePtr,
          stored >>> 0,
          LLCOMM_MAX_CHANNELS,
        )
      }
      this.latestChecked = []
      this.synchronizeContexts()
    },
  }
  /**
   * The last few eager calls of each kind, packed (issue 4: the eager path must cost about what a C++ launch loop
   * costs; eager-calls.ts). A call whose arguments (pointers, sizes, options, streams: the kind's key) all equal an
   * entry's reuses its packed launches: no validation, resolution or packing again (those depend only on these
   * values and on the communicator's fixed configuration), no allocation.
   */
  private readonly eagerCalls = deviceAllReduceCalls()
  private readonly eagerNormCalls = fusedNormCalls()
  private readonly eagerReferenceNormCalls = fusedNormCalls()
  private readonly eagerManyCalls = allReduceManyCalls()

  constructor(options: CudaCommunicatorOptions) {
    super()
    const common = validateCommunicatorOptions('cuda', options)
    const devices = validateDeviceList(options?.devices)
    const timeoutMs = common.timeoutMs
    const bufferBytes = common.bufferBytes
    if (!Number.isInteger(bufferBytes) || bufferBytes < 4096 || bufferBytes % 256 !== 0) {
      throw new LlcommError(
        'INVALID_ARGUMENT',
        `bufferBytes must be an integer multiple of 256 and at least 4096, got ${bufferBytes}`,
      )
    }
    this.devices = [...devices]
    this.size = devices.length
    this.timeoutMs = timeoutMs
    this.bufferBytes = bufferBytes
    this.tuning = loadTuningTable(options.tuningTable)
    this.deterministic = validateDeterministic(options.deterministic)
    this.accumulation = validateAccumulation(options.accumulation)
    // twoshot-sentinel's all-gather kernel (LLCOMM_TWOSHOT_ALLGATHER: auto, push or pull), read once, here.
    const twoshotAllGather = parseTwoshotAllGather(process.env.LLCOMM_TWOSHOT_ALLGATHER)
    this.driver = cudaDriver()
    this.deviceSet = new DeviceSet(this.driver, devices)
    this.allocs = new DeviceAllocations(this.driver)
    this.user = new UserDeviceResources(this.driver, this.deviceSet, this.allocs)
    const nv = loadNvrtc()
    // f16/bf16 accumulation (option `accumulation`): compiled into the kernels (abi.cuh switches as NVRTC -D
    // options, part of the cubin cache key) and into the capacity rule of every launch (launchShape()).
    // (LLCOMM_FUSED_SIG_IN_PROCESS, an A/B setting: the fused kernels with the per-process signature cluster)
    const kernelBuild = {
      ...accumulationBuild(this.accumulation),
      ...SIGNATURE_KERNEL_BUILD,
      fusedSignatureCluster: FUSED_SIGNATURE_IN_PROCESS,
    }
    this.modules = new KernelModules(this.driver, nv, {
      headers: kernelSources(),
      cacheDir: options.cacheDir,
      extraOptions: kernelBuildDefines(kernelBuild),
    })
    this.owned = {
      driver: this.driver,
      deviceSet: this.deviceSet,
      allocs: this.allocs,
      modules: this.modules,
      internalStreams: this.internalStreams,
      nccl: undefined,
    }
    try {
      const layout = deviceBufferLayout(this.size, bufferBytes)
      this.layout = layout
      const recvBuf = this.rankRecvBuf
      const scratch = this.rankScratch
      for (let r = 0; r < this.size; r++) {
        const g = this.deviceSet.groups[this.deviceSet.rankGroup[r]]
        recvBuf[r] = this.allocs.alloc(g.context, layout.recvBufBytes, `recvBuf[${r}]`)
        scratch[r] = this.allocs.alloc(g.context, layout.scratchBytes, `scratch[${r}]`)
      }
      const g0 = this.deviceSet.groups[0]
      this.errorWord = this.allocs.alloc(g0.context, ERROR_WORD_BYTES, 'errorWord')
      this.writeInitialContents()
      for (const g of this.deviceSet.groups) {
        this.deviceSet.use(g)
        this.internalStreams.push(this.driver.streamCreate())
      }
      this.launcher = new AllReduceLauncher(this.driver, this.deviceSet, this.modules, {
        nranks: this.size,
        recvBuf,
        scratch,
        errorWord: this.errorWord,
        timeoutNs: timeoutMs * 1e6,
        bufferBytes,
        layout,
        kernelBuild,
        twoshotAllGather,
      })
    } catch (e) {
      this.releaseAll()
      throw e
    }
    this.kernelAlgorithms = [...new Set(KERNEL_VARIANTS.map((v) => v.algorithm))]
    this.ncclReason = ncclUnavailableReason(devices)
    let ncclPath: string | undefined
    let symmetric = false
    if (!this.ncclReason) {
      try {
        const n = loadNccl()
        ncclPath = n.libraryPath
        symmetric = n.hasSymmetricWindows
      } catch (e) {
        this.ncclReason = (e as Error).message
      }
    }
    const usable: AlgorithmName[] = [...this.kernelAlgorithms]
    if (!this.ncclReason) usable.push('nccl')
    if (!this.ncclReason && symmetric) usable.push('nccl-symmetric')
    this.algorithms = [...usable, 'auto']
    this.capabilities = {
      backend: 'cuda',
      ranks: this.size,
      available: usable,
      cannotServe: (algorithm, call) => this.cannotServe(algorithm, call),
      autoPreference: AUTO_PREFERENCE,
      fallbacks: ['nccl', ...FALLBACK_KERNELS],
      tuning: this.tuning,
    }
    this.libraries = { cuda: this.driver.libraryPath, nvrtc: nv.libraryPath, ...(ncclPath ? { nccl: ncclPath } : {}) }

    INTERNALS.set(this, {
      driver: this.driver,
      deviceSet: this.deviceSet,
      allocations: this.allocs,
      modules: this.modules,
    })
    // Dropped without close(): the registry frees the device memory, streams, modules and contexts once the object
    // is collected (issue 19 item 4); close() and destroy() unregister it.
    droppedCudaCommunicators.register(this, this.owned, this)
  }

  /** Device ordinal of each launch group (distinct device), in the order `streams` must follow. */
  get launchGroupDevices(): number[] {
    return this.deviceSet.groups.map((g) => g.ordinal)
  }

  /** A rank's receive buffer and scratch (for tests and tools, e.g. corrupting an epoch to provoke a timeout). */
  deviceBuffersOf(rank: number): { recvBuf: DevicePtr; scratch: DevicePtr; deviceOrdinal: number } {
    if (!Number.isInteger(rank) || rank < 0 || rank >= this.size)
      throw new LlcommError('INVALID_ARGUMENT', `no rank ${rank}`)
    return { recvBuf: this.rankRecvBuf[rank], scratch: this.rankScratch[rank], deviceOrdinal: this.devices[rank] }
  }

  /** The communicator's own streams, one per launch group (used by allReduce and benchmark). */
  get streams(): readonly CuStream[] {
    return this.internalStreams
  }

  /** Kernel cache statistics: compiled vs loaded from the on-disk cubin cache. */
  get compileStats(): { compiled: number; cached: number; compileMs: number } {
    return { ...this.modules.stats }
  }

  /**
   * Every rank's receive buffer and scratch at their initial contents (the contract of deviceBufferLayout: zero and
   * sentinel ranges; every channel's epoch word 0) and the error word clear. Synchronous: cuMemsetD32 on the null
   * stream may return before it is done and our streams are non-blocking, so every device's context is synchronized
   * before we return; every later launch then sees these contents. Only with no kernel of ours running.
   */
  private writeInitialContents(): void {
    const layout = this.layout
    this.latestChecked = [] // every epoch word back to 0: nothing checked by the host yet
    for (let r = 0; r < this.size; r++) {
      this.deviceSet.use(this.deviceSet.groups[this.deviceSet.rankGroup[r]])
      this.driver.memsetD32(this.rankRecvBuf[r], 0, Math.ceil(layout.recvBufBytes / 4))
      this.driver.memsetD32(this.rankScratch[r], 0, Math.ceil(layout.scratchBytes / 4))
      for (const fill of layout.fills) {
        if (fill.offset % 4 !== 0 || fill.bytes % 4 !== 0) {
          throw new LlcommError(
            'INVALID_ARGUMENT',
            `deviceBufferLayout fill at ${fill.offset}+${fill.bytes} is not word-aligned`,
          )
        }
        const base = fill.region === 'recv' ? this.rankRecvBuf[r] : this.rankScratch[r]
        this.driver.memsetD32((base + fill.offset) as DevicePtr, fill.word32, fill.bytes / 4)
      }
    }
    this.deviceSet.use(this.deviceSet.groups[0])
    this.driver.memsetD32(this.errorWord, 0, ERROR_WORD_BYTES / 4)
    this.synchronizeContexts()
  }

  private synchronizeContexts(): void {
    for (const g of this.deviceSet.groups) {
      this.deviceSet.use(g)
      this.driver.contextSynchronize()
    }
  }

  /** Device views: refused once closed, and after a device failure until recover() (see the header). */
  private assertOpen(): void {
    if (this.closed || this.state !== 'open') throw new LlcommError('CLOSED', `the communicator is ${this.state}`)
    if (this.broken) {
      throw new LlcommError(
        this.broken.code,
        `an earlier device call failed (${this.broken.message}); no call runs until recover()`,
        { ...this.broken.details, poisonedBy: this.broken.toJSON() },
      )
    }
  }

  /** Resolves `auto` and fallbacks to the algorithm that will run (docs/design.md §3: reported, never silent). */
  resolveAlgorithm(
    requested: AlgorithmChoice,
    dtype: Dtype,
    op: ReduceOp,
    bytes: number,
    fallback: DeviceFallback = true,
    deterministic = false,
  ): { algorithm: AlgorithmName; fallbackReason?: string } {
    if (fallback !== true && fallback !== false && fallback !== 'nccl') {
      throw new LlcommError('INVALID_ARGUMENT', `fallback must be 'nccl', true or false, got ${String(fallback)}`)
    }
    if (!DTYPES.includes(dtype))
      throw new LlcommError('UNSUPPORTED_DTYPE', `dtype ${String(dtype)} is not one of ${DTYPES.join(', ')}`)
    if (op !== 'sum') throw new LlcommError('UNSUPPORTED_OP', `op ${String(op)} is not supported (sum only)`)
    const call: ResolveCall = { dtype, op, count: Math.ceil(bytes / DTYPE_BYTES[dtype]), fallback, deterministic }
    return resolveAlgorithm(requested, call, this.capabilities)
  }

  /** The cuda row of the capability table: NCCL needs its library and distinct GPUs; a kernel needs its variant. */
  private cannotServe(algorithm: AlgorithmName, call: ResolveCall): string | undefined {
    if (NCCL_ALGORITHMS.includes(algorithm)) {
      if (this.ncclReason) return `${algorithm} is not usable here: ${this.ncclReason}`
      if (!this.algorithms.includes(algorithm)) return `${algorithm} is not usable here: this NCCL has no windows`
      return undefined
    }
    return this.hasKernel(algorithm, call.dtype, call.op)
      ? undefined
      : `${algorithm} has no kernel for ${call.dtype}/${call.op} on this communicator`
  }

  private hasKernel(algorithm: AlgorithmName, dtype: Dtype, op: ReduceOp): boolean {
    return KERNEL_VARIANTS.some((v) => v.algorithm === algorithm && v.dtype === dtype && v.op === op)
  }

  private streamsOf(args: { stream?: CuStream; streams?: readonly CuStream[] }): readonly CuStream[] {
    if (args.streams) {
      if (args.streams.length !== this.deviceSet.groups.length) {
        throw new LlcommError(
          'INVALID_ARGUMENT',
          `streams must have one stream per distinct device (${this.deviceSet.groups.length}), got ${args.streams.length}`,
        )
      }
      return args.streams
    }
    if (args.stream !== undefined) {
      if (this.deviceSet.multiDevice) {
        throw new LlcommError(
          'INVALID_ARGUMENT',
          'ranks span several devices: pass `streams`, one per device (launchGroupDevices order)',
        )
      }
      return [args.stream]
    }
    return this.internalStreams
  }

  private validateDeviceArgs(args: DeviceAllReduceArgs): void {
    const { inputs, outputs, count } = args
    if (
      !Array.isArray(inputs) ||
      inputs.length !== this.size ||
      !Array.isArray(outputs) ||
      outputs.length !== this.size
    ) {
      throw new LlcommError('INVALID_ARGUMENT', `inputs and outputs need one device pointer per rank (${this.size})`)
    }
    if (!Number.isInteger(count) || count < 0)
      throw new LlcommError('INVALID_ARGUMENT', `count must be a non-negative integer, got ${count}`)
    for (let r = 0; r < this.size; r++) {
      for (const [what, p] of [
        ['input', inputs[r]],
        ['output', outputs[r]],
      ] as const) {
        if (!Number.isSafeInteger(p) || p <= 0)
          throw new LlcommError('INVALID_ARGUMENT', `${what}[${r}] is not a device pointer`)
        if (p % 16 !== 0) {
          throw new LlcommError('MISALIGNED_BUFFER', `${what}[${r}] = 0x${p.toString(16)} is not 16-byte aligned`, {
            rank: r,
            what,
          })
        }
      }
    }
    if (!DTYPES.includes(args.dtype))
      throw new LlcommError('UNSUPPORTED_DTYPE', `dtype ${String(args.dtype)} is not one of ${DTYPES.join(', ')}`)
    const bytes = count * DTYPE_BYTES[args.dtype]
    if (bytes > 0) {
      for (let r = 0; r < this.size; r++) {
        this.user.checkDevicePointer(inputs[r], r, bytes, 'input')
        if (outputs[r] !== inputs[r]) this.user.checkDevicePointer(outputs[r], r, bytes, 'output')
      }
    }
  }

  /** Packs an AllReduce on device buffers once; `issue()` then launches it with no allocation. */
  prepareDeviceAllReduce(args: DeviceAllReduceArgs): PreparedDeviceAllReduce {
    this.assertOpen()
    this.validateDeviceArgs(args)
    const op = args.op ?? 'sum'
    const bytes = args.count * DTYPE_BYTES[args.dtype]
    const { algorithm, fallbackReason } = this.resolveAlgorithm(
      args.algorithm ?? 'auto',
      args.dtype,
      op,
      bytes,
      args.fallback ?? true,
      validateDeterministic(args.deterministic, this.deterministic),
    )
    const defaultStreams = this.streamsOf(args)
    if (args.count === 0) return { algorithm, fallbackReason, chunks: 0, issue: () => {} }
    if (NCCL_ALGORITHMS.includes(algorithm)) {
      const baseline = this.nccl()
      // Copies: the prepared call must not see later changes to the caller's arrays (deviceAllReduce reuses it).
      const inputs = [...args.inputs]
      const outputs = [...args.outputs]
      const { count, dtype } = args
      return {
        algorithm,
        fallbackReason,
        chunks: 1,
        issue: (streams = defaultStreams) => {
          this.claimStreams(streams)
          baseline.allReduce(inputs, outputs, count, dtype, streams)
        },
      }
    }
    const chunks: PreparedChunk[] = this.launcher.prepare({
      inputs: args.inputs,
      outputs: args.outputs,
      count: args.count,
      dtype: args.dtype,
      op,
      algorithm,
      protocol: args.protocol,
      pdl: args.pdl ?? false,
      streams: defaultStreams,
    })
    const launch = this.launcher.issuer(chunks)
    return {
      algorithm,
      fallbackReason,
      chunks: chunks.length,
      issue: (streams = defaultStreams) => {
        this.claimStreams(streams)
        launch(streams)
      },
    }
  }

  /**
   * docs/design.md §5 concurrency: one epoch sequence per channel, so two streams must not run calls of one communicator
   * at once. A call on a different stream than the previous call fails at once with BUSY while the previous
   * stream still has work in flight (cuStreamQuery). Calls on the same stream, the usual case, cost no FFI call.
   * A previous stream that cannot be queried (e.g. it is being captured into a graph) is not second-guessed.
   */
  private claimStreams(streams: readonly CuStream[]): void {
    const last = this.lastStreams
    if (last !== undefined && last !== streams) {
      for (let i = 0; i < streams.length; i++) {
        if (streams[i] === last[i]) continue
        let busy = false
        try {
          this.deviceSet.use(this.deviceSet.groups[i])
          busy = !this.driver.streamQuery(last[i])
        } catch {
          busy = false
        }
        if (busy) {
          throw new LlcommError(
            'BUSY',
            `a call of this communicator is still in flight on stream 0x${last[i].toString(16)} (device ${this.deviceSet.groups[i].ordinal}); ` +
              'order the streams (events) or use one communicator per stream',
            { device: this.deviceSet.groups[i].ordinal },
          )
        }
      }
    }
    this.lastStreams = streams
  }

  /** AllReduce on device buffers on the caller's stream(s); asynchronous and graph-capturable. */
  deviceAllReduce(args: DeviceAllReduceArgs): DeviceAllReduceInfo {
    const cached = this.eagerCalls.find(args)
    if (cached) {
      this.assertOpen()
      // cached.streams is the entry's own copy, equal to the caller's streams (or the internal ones): the same array
      // every time, so claimStreams sees an unchanged stream set without a query.
      cached.prepared.issue(cached.streams)
      return cached.info
    }
    this.assertOpen()
    const streams = [...this.streamsOf(args)]
    // BUSY is decided before the preparation, which can outlast the previous call (a 512-chunk call packs for about
    // 20 ms: bench/results/cuda-h200-busy-probe-2026-12-01.txt, research/scripts/probe/busy-probe.mjs); issue()
    // then finds the same streams claimed.
    this.claimStreams(streams)
    const p = this.prepareDeviceAllReduce(args)
    const info: DeviceAllReduceInfo = { algorithm: p.algorithm, fallbackReason: p.fallbackReason, chunks: p.chunks }
    p.issue(streams)
    this.eagerCalls.remember(args, streams, p, info)
    return info
  }

  /**
   * Reads the device error word (synchronous copy: call after the streams that ran the collective finished).
   * A timeout becomes LlcommError TIMEOUT naming rank, peer and epoch; the communicator is then unusable
   * (ranks' epochs have diverged) except for close().
   */
  checkDeviceError(): void {
    if (this.closed) return
    this.deviceSet.use(this.deviceSet.groups[0])
    const words = copyErrorWord(this.driver, this.errorWord)
    let e = errorFromWord(words)
    if (e && this.signatureDeferred) {
      // The deferred build has no check of a launch's own epoch on the device, so a mismatched call whose waits
      // never end records TIMEOUT: read against the packets of the waiting rank (timeout-signature.ts), as the
      // per-process communicator does.
      const w = decodeErrorWord(words)
      // (the in-block check's builds only: with the signature block the device compared the packets itself)
      if (w.code === LLCOMM_ERR_TIMEOUT && w.rank < this.size && !SIGNATURE_BLOCK) {
        this.deviceSet.use(this.deviceSet.groups[this.deviceSet.rankGroup[w.rank]])
        const region = (this.rankScratch[w.rank] + LLCOMM_SCRATCH_SIGNATURE_OFFSET) as DevicePtr
        e = reclassifyTimeout(e, {
          timeout: w,
          nranks: this.size,
          slotMask: DEFERRED_SIGNATURE_SLOT_MASK,
          readRegion: () => {
            const copy = new Uint32Array(SIGNATURE_REGION_WORDS)
            this.driver.copyDtoH(copy, region)
            return copy
          },
        })
      }
    }
    if (!e && this.signatureDeferred) e = this.checkLatestSignatures()
    if (e) {
      this.broken = e
      throw e
    }
  }

  /**
   * The deferred build: each channel's last launch is checked by no kernel, so compare its packets here, on every
   * rank (latest-signature.ts; only the channels whose epoch moved since the last check are read). After the
   * stream finished (checkDeviceError's contract).
   */
  private checkLatestSignatures(): LlcommError | undefined {
    for (let r = 0; r < this.size; r++) {
      this.latestChecked[r] ??= new Uint32Array(LLCOMM_MAX_CHANNELS)
      this.deviceSet.use(this.deviceSet.groups[this.deviceSet.rankGroup[r]])
      const e = checkLatestSignaturesOfRank(this.driver, this.rankScratch[r], r, this.size, this.latestChecked[r])
      if (e) return e
    }
    return undefined
  }

  /** The NCCL clique, created on first use. */
  nccl(): NcclBaseline {
    if (this.ncclReason) throw new LlcommError('UNSUPPORTED_ALGORITHM', `nccl is not usable here: ${this.ncclReason}`)
    this.owned.nccl ??= new NcclBaseline(loadNccl(), this.driver, this.deviceSet)
    return this.owned.nccl
  }

  private stagingFor(bytes: number, symmetric: boolean): { inputs: DevicePtr[]; outputs: DevicePtr[] } {
    const need = Math.max(256, Math.ceil(bytes / 256) * 256)
    if (!this.staging || this.staging.bytes < need) {
      if (this.staging) {
        for (const p of [...this.staging.inputs, ...this.staging.outputs]) this.allocs.release(p)
      }
      const inputs: DevicePtr[] = []
      const outputs: DevicePtr[] = []
      for (let r = 0; r < this.size; r++) {
        const g = this.deviceSet.groups[this.deviceSet.rankGroup[r]]
        inputs[r] = this.allocs.alloc(g.context, need, `stagingIn[${r}]`)
        outputs[r] = this.allocs.alloc(g.context, need, `stagingOut[${r}]`)
      }
      // Symmetric staging (NCCL memory, registered windows) is owned by the NcclBaseline; a larger request
      // registers a new pair (the old windows stay registered until close: bounded by the number of growths).
      this.staging = { bytes: need, inputs, outputs }
    }
    if (symmetric) {
      if (!this.staging.symmetric) {
        const n = this.nccl()
        this.staging.symmetric = {
          inputs: n.allocSymmetric(this.staging.bytes),
          outputs: n.allocSymmetric(this.staging.bytes),
        }
      }
      return this.staging.symmetric
    }
    return this.staging
  }

  /** The driver view's call, at submission: validated, resolved, the inputs copied (see the header). */
  protected kPrepareAllReduce<T extends TensorArray>(
    inputs: T[],
    options: AllReduceOptions | undefined,
  ): PreparedCall<AllReduceOutputs<T>> {
    // Every name is accepted here: the resolver decides availability, and falls back when allowed (nccl on one GPU).
    const validated = validateAllReduceOptions(options, ANY_ALGORITHM, { deterministic: this.deterministic })
    const { dtype, op } = validated
    const count = validateHostInputs(inputs, this.size, dtype)
    const bytes = count * DTYPE_BYTES[dtype]
    const { algorithm, fallbackReason } = this.resolveAlgorithm(
      validated.algorithm,
      dtype,
      op,
      bytes,
      validated.fallback,
      validated.deterministic,
    )
    let copies: T[]
    try {
      copies = inputs.map((x) => x.slice() as T)
    } catch (e) {
      throw toLlcommError(e, `copying ${this.size} inputs of ${bytes} bytes`)
    }
    return async () => {
      this.assertOpen()
      const outputs = copies.map(() => (dtype === 'f32' ? new Float32Array(count) : new Uint16Array(count))) as T[]
      let chunks = 0
      if (count > 0) {
        // The queue runs one driver-view call at a time: the staging pair is this call's alone until it returns.
        const buf = this.stagingFor(bytes, algorithm === 'nccl-symmetric')
        for (let r = 0; r < this.size; r++) {
          this.deviceSet.use(this.deviceSet.groups[this.deviceSet.rankGroup[r]])
          this.driver.copyHtoD(buf.inputs[r], copies[r], bytes)
        }
        // A pageable cuMemcpyHtoD returns once the data is staged; the DMA into device memory runs on the
        // context's null stream, which our non-blocking streams do not wait for. Finish it on every device first.
        this.synchronizeContexts()
        const info = this.deviceAllReduce({
          inputs: buf.inputs,
          outputs: buf.outputs,
          count,
          dtype,
          op,
          algorithm,
          protocol: validated.protocol,
          pdl: validated.pdl,
          fallback: false,
          streams: this.internalStreams,
        })
        chunks = info.chunks
        await this.synchronizeInternal()
        this.checkDeviceError()
        for (let r = 0; r < this.size; r++) {
          this.deviceSet.use(this.deviceSet.groups[this.deviceSet.rankGroup[r]])
          this.driver.copyDtoH(outputs[r], buf.outputs[r], bytes)
        }
      }
      const result = outputs as AllReduceOutputs<T>
      result.info = { algorithm, ...(fallbackReason ? { fallbackReason } : {}), chunks }
      return result
    }
  }

  /**
   * Waits for the internal streams without blocking the event loop for the whole timeout: polls with
   * cuStreamQuery, yielding between polls; the kernels' own deadline (timeoutNs) bounds the wait, plus a margin.
   */
  private async synchronizeInternal(): Promise<void> {
    const deadline = performance.now() + this.timeoutMs * 2 + 5_000
    for (const [i, s] of this.internalStreams.entries()) {
      this.deviceSet.use(this.deviceSet.groups[i])
      let spins = 0
      while (!this.driver.streamQuery(s)) {
        if (performance.now() > deadline) {
          this.broken = LlcommError.timeout({
            rank: -1,
            peer: -1,
            epoch: -1,
            waitingFor: `stream of device ${this.deviceSet.groups[i].ordinal}`,
          })
          throw this.broken
        }
        // Short calls finish within a few polls; longer ones yield to the event loop.
        if (++spins > 200) await new Promise((resolve) => setImmediate(resolve))
      }
    }
  }

  protected kPrepareBenchmark(request: BenchmarkRequest): PreparedCall<BenchmarkResult> {
    validateBenchmarkRequest(request, ANY_ALGORITHM)
    const copy = { ...request }
    return () => {
      this.assertOpen()
      return runCudaBenchmark(this, this.driver, this.deviceSet, this.allocs, this.modules, copy)
    }
  }

  /**
   * Whether a device call of this shape can run here, and what would run: the algorithm `auto` (or the one asked
   * for) resolves to, with any fallback and its reason; or, when none can, why. Nothing is launched or allocated.
   */
  canServe(query: CanServeQuery): CanServeResult {
    try {
      this.assertOpen()
      if (query === null || typeof query !== 'object')
        throw new LlcommError('INVALID_ARGUMENT', 'canServe needs { count, dtype, op? }')
      const { count, dtype } = query
      if (!Number.isSafeInteger(count) || count < 0)
        throw new LlcommError('INVALID_ARGUMENT', `count must be a non-negative integer, got ${String(count)}`)
      const bytes = count * (DTYPE_BYTES[dtype] ?? 0)
      const { algorithm, fallbackReason } = this.resolveAlgorithm(
        query.algorithm ?? 'auto',
        dtype,
        query.op ?? 'sum',
        bytes,
        query.fallback ?? true,
        validateDeterministic(query.deterministic, this.deterministic),
      )
      return { ok: true, algorithm, ...(fallbackReason ? { fallbackReason } : {}) }
    } catch (e) {
      if (e instanceof LlcommError) return { ok: false, code: e.code, reason: e.message }
      throw e
    }
  }

  /** Device memory on rank `rank`'s GPU (256-byte aligned), owned by this communicator until free() or close(). */
  allocate(rank: number, bytes: number): DevicePtr {
    this.assertOpen()
    return this.user.allocate(rank, bytes, this.size)
  }

  /** Frees memory from allocate(). */
  free(ptr: DevicePtr): void {
    if (this.closed) return
    this.user.free(ptr)
  }

  /** Copies a typed array to device memory (on `stream` when given; the array may be reused once this returns). */
  upload(ptr: DevicePtr, data: ArrayBufferView, stream?: CuStream): void {
    this.assertOpen()
    this.user.upload(ptr, data, stream)
  }

  /** Copies device memory into a typed array; returns once the bytes are there (after `stream`'s earlier work). */
  download(ptr: DevicePtr, data: ArrayBufferView, stream?: CuStream): void {
    this.assertOpen()
    this.user.download(ptr, data, stream)
  }

  /** A non-blocking stream on rank `rank`'s GPU, destroyed by close(). */
  createStream(rank: number): CuStream {
    this.assertOpen()
    return this.user.createStream(rank, this.size)
  }

  /**
   * Waits for `stream` without blocking the event loop, then reads the device error word: a collective that timed
   * out on the device is reported here as TIMEOUT (naming rank, peer and epoch).
   */
  async synchronize(stream: CuStream): Promise<void> {
    this.assertOpen()
    await this.user.synchronize(stream, this.timeoutMs)
    this.checkDeviceError()
  }

  /**
   * Captures what `body` enqueues on `streams` (default: the communicator's own, one per device) into one CUDA
   * graph; `launch()` replays it on the first stream. Prepare or make the calls once before capturing (setup such
   * as module loads and NCCL windows must not happen during a capture). Destroyed by destroy() or close().
   */
  captureGraph(body: () => void, streams: readonly CuStream[] = this.internalStreams): DeviceGraph {
    this.assertOpen()
    if (streams.length !== this.deviceSet.groups.length) {
      throw new LlcommError(
        'INVALID_ARGUMENT',
        `captureGraph needs one stream per distinct device (${this.deviceSet.groups.length}), got ${streams.length}`,
      )
    }
    const graph = CapturedGraph.capture(this.driver, streams, (i) => this.deviceSet.use(this.deviceSet.groups[i]), body)
    this.graphs.add(graph)
    return {
      launch: (stream?: CuStream) => {
        this.assertOpen()
        this.deviceSet.use(this.deviceSet.groups[0])
        graph.replay(stream)
      },
      destroy: () => {
        if (!this.graphs.delete(graph)) return
        this.deviceSet.use(this.deviceSet.groups[0])
        graph.destroy()
      },
    }
  }

  /**
   * Back to the initial state (see the header): every internal stream finished (kernels end at their own deadline,
   * so this is bounded), every rank's buffers and epochs re-written, the error word cleared.
   */
  protected async kRecover(): Promise<void> {
    if (this.closed) throw new LlcommError('CLOSED', 'the communicator was closed')
    const deadline = performance.now() + this.timeoutMs * 2 + 5_000
    for (const [i, s] of this.internalStreams.entries()) {
      this.deviceSet.use(this.deviceSet.groups[i])
      while (!this.driver.streamQuery(s)) {
        if (performance.now() > deadline) {
          throw new LlcommError(
            'CUDA_ERROR',
            `recover: the stream of device ${this.deviceSet.groups[i].ordinal} did not finish`,
            { device: this.deviceSet.groups[i].ordinal },
          )
        }
        await new Promise((resolve) => setImmediate(resolve))
      }
    }
    this.writeInitialContents()
    this.broken = undefined
    this.lastStreams = undefined
  }

  /** After the queue has drained: waits for the internal streams, then frees everything in reverse order. */
  protected async kClose(): Promise<void> {
    try {
      for (const [i, s] of this.internalStreams.entries()) {
        this.deviceSet.use(this.deviceSet.groups[i])
        this.driver.streamSynchronize(s)
      }
    } catch {
      // a device error during drain: still free everything below
    }
    this.releaseAll()
  }

  /** Frees everything without draining (a hung kernel still ends at its own deadline). */
  protected async kDestroy(): Promise<void> {
    this.releaseAll()
  }

  private releaseAll(): void {
    if (this.closed) return
    this.closed = true
    droppedCudaCommunicators.unregister(this)
    for (const g of this.graphs) attempt(() => g.destroy())
    this.graphs.clear()
    attempt(() => this.user.releaseAll())
    attempt(() => this.launcher?.disposeAll())
    attempt(() => this.fusedLauncher?.disposeAll())
    releaseDeviceResources(this.owned)
  }

  // ---- fused calls (issue 21; fused-launcher.ts) ----
  private fusedLauncher: FusedLauncher | undefined

  private fused(): FusedLauncher {
    this.assertOpen()
    this.fusedLauncher ??= new FusedLauncher(
      this.driver,
      this.deviceSet,
      this.modules,
      {
        nranks: this.size,
        recvBuf: this.rankRecvBuf,
        scratch: this.rankScratch,
        errorWord: this.errorWord,
        timeoutNs: this.timeoutMs * 1e6,
        bufferBytes: this.bufferBytes,
        layout: deviceBufferLayout(this.size, this.bufferBytes),
      },
      { signatureCluster: FUSED_SIGNATURE_IN_PROCESS },
    )
    return this.fusedLauncher
  }

  private preparedOn(p: PreparedFusedCall, args: { stream?: CuStream; streams?: readonly CuStream[] }) {
    const defaultStreams = [...this.streamsOf(args)]
    return {
      algorithm: p.algorithm,
      launches: p.launches,
      issue: (streams: readonly CuStream[] = defaultStreams) => {
        this.claimStreams(streams)
        p.issue(streams)
      },
    }
  }

  /**
   * Packs a fused AllReduce + residual add + RMSNorm on device buffers ([rows][hidden] per rank): residual +=
   * allreduce(x); out = rmsnorm(residual) * weight. `issue()` launches it (graph-capturable, allocation-free).
   */
  prepareDeviceAllReduceRmsNorm(args: DeviceAllReduceRmsNormArgs): PreparedFusedDeviceCall {
    return this.preparedOn(this.fused().prepareNorm(args, false), args)
  }

  /**
   * Bench only (scripts/bench-fused.mjs --probes): a cost-decomposition probe kernel on the split plan's launch
   * shape (FusedProbe in device-call.ts). Not part of the public API; the probes' outputs are not results.
   */
  prepareDeviceFusedProbe(args: DeviceAllReduceRmsNormArgs, probe: FusedProbe): PreparedFusedDeviceCall {
    return this.preparedOn(this.fused().prepareNorm(args, false, probe), args)
  }

  /**
   * An eager fused call: the entry of `cache` that `args` asks for exactly, issued on the entry's own copy of the
   * streams (the same array every time: claimStreams sees an unchanged stream set without a query); else the
   * streams claimed first (BUSY before the preparation, as deviceAllReduce), then `prepare`, issue, and the packed
   * call kept. `prepare` is the prepare method itself (called on this: no closure per call).
   */
  private eagerFused<A extends { stream?: CuStream; streams?: readonly CuStream[] }, K>(
    cache: EagerCallCache<A, K, PreparedFusedDeviceCall, FusedDeviceInfo>,
    args: A,
    prepare: (this: CudaCommunicator, args: A) => PreparedFusedDeviceCall,
  ): FusedDeviceInfo {
    this.assertOpen()
    const cached = cache.find(args)
    if (cached) {
      cached.prepared.issue(cached.streams)
      return cached.info
    }
    const streams = [...this.streamsOf(args)]
    this.claimStreams(streams)
    const p = prepare.call(this, args)
    const info: FusedDeviceInfo = { algorithm: p.algorithm, launches: p.launches }
    p.issue(streams)
    cache.remember(args, streams, p, info)
    return info
  }

  /**
   * The fused AllReduce + residual add + RMSNorm on the caller's stream(s); asynchronous and graph-capturable. The
   * last few distinct calls stay packed (eager-calls.ts): a repeated call costs about one issue().
   */
  deviceAllReduceRmsNorm(args: DeviceAllReduceRmsNormArgs): FusedDeviceInfo {
    return this.eagerFused(this.eagerNormCalls, args, this.prepareDeviceAllReduceRmsNorm)
  }

  /**
   * The unfused composition's RMSNorm (kernels/allreduce/rmsnorm.cu): residual += x; out = rmsnorm(residual) *
   * weight, with x the AllReduce's output, the fused kernels' exact arithmetic (bit-identical results). One launch
   * for every rank of a device; no communication.
   */
  prepareDeviceRmsNorm(args: DeviceAllReduceRmsNormArgs): PreparedFusedDeviceCall {
    return this.preparedOn(this.fused().prepareNorm(args, true), args)
  }

  /** The reference RMSNorm on the caller's stream(s), eager (its own cache of packed calls, as the fused call). */
  deviceRmsNorm(args: DeviceAllReduceRmsNormArgs): FusedDeviceInfo {
    return this.eagerFused(this.eagerReferenceNormCalls, args, this.prepareDeviceRmsNorm)
  }

  /** Packs several AllReduces of different sizes (inputs[b][rank]) into one launch (more when they overflow it). */
  prepareDeviceAllReduceMany(args: DeviceAllReduceManyArgs): PreparedFusedDeviceCall {
    return this.preparedOn(this.fused().prepareMany(args), args)
  }

  /** Several AllReduces in one launch; each result bit-identical to one oneshot-sentinel call per buffer. */
  deviceAllReduceMany(args: DeviceAllReduceManyArgs): FusedDeviceInfo {
    return this.eagerFused(this.eagerManyCalls, args, this.prepareDeviceAllReduceMany)
  }

  /**
   * Host view of allReduceMany: host arrays in (buffers[b][rank]), one output list per buffer. With algorithm
   * 'auto' (default) the buffers go through one allreduce_many launch; with a forced algorithm, one allReduce per
   * buffer with it. Results are bit-identical to one allReduce per buffer with the one-shot sentinel kernel.
   */
  override allReduceMany<T extends TensorArray>(
    buffers: T[][],
    options: AllReduceOptions = {},
  ): Promise<AllReduceOutputs<T>[]> {
    // A forced algorithm or op: one queued allReduce per buffer (the base's form).
    if ((options.algorithm ?? 'auto') !== 'auto' || (options.op ?? 'sum') !== 'sum')
      return super.allReduceMany(buffers, options)
    return this.submit(() => {
      if (!Array.isArray(buffers) || buffers.length === 0)
        throw new LlcommError('INVALID_ARGUMENT', 'allReduceMany needs a non-empty array of buffers (buffers[b][rank])')
      const dtype = options.dtype ?? 'f32'
      const counts = buffers.map((inputs) => validateHostInputs(inputs, this.size, dtype))
      // Read at submission (as allReduce does): later changes to the caller's arrays do not reach the result.
      const copies = buffers.map((inputs) => inputs.map((x) => x.slice() as T))
      return () => this.runAllReduceMany(copies, counts, dtype, options.pdl)
    }, 'allReduceMany')
  }

  /** The queued body of the host-view allReduceMany: stage every buffer, one allreduce_many launch, copy out. */
  private async runAllReduceMany<T extends TensorArray>(
    buffers: T[][],
    counts: number[],
    dtype: Dtype,
    pdl: boolean | undefined,
  ): Promise<AllReduceOutputs<T>[]> {
    this.assertOpen()
    const eb = DTYPE_BYTES[dtype]
    const offsets: number[] = []
    let total = 0
    for (const c of counts) {
      offsets.push(total)
      total += Math.ceil((c * eb) / 256) * 256 // each buffer 256-byte aligned in the staging area
    }
    const outputs = buffers.map((inputs, b) =>
      inputs.map(() => (dtype === 'f32' ? new Float32Array(counts[b]) : new Uint16Array(counts[b])) as T),
    )
    let launches = 0
    const live = counts.map((c, b) => ({ c, b })).filter((x) => x.c > 0)
    if (live.length > 0) {
      const buf = this.stagingFor(total, false)
      for (let r = 0; r < this.size; r++) {
        this.deviceSet.use(this.deviceSet.groups[this.deviceSet.rankGroup[r]])
        for (const { c, b } of live)
          this.driver.copyHtoD((buf.inputs[r] + offsets[b]) as DevicePtr, buffers[b][r], c * eb)
      }
      for (const g of this.deviceSet.groups) {
        this.deviceSet.use(g)
        this.driver.contextSynchronize() // the pageable copies are done before the kernel (as in allReduce)
      }
      const at = (list: readonly DevicePtr[], b: number) => list.map((p) => (p + offsets[b]) as DevicePtr)
      const info = this.deviceAllReduceMany({
        inputs: live.map(({ b }) => at(buf.inputs, b)),
        outputs: live.map(({ b }) => at(buf.outputs, b)),
        counts: live.map(({ c }) => c),
        dtype,
        pdl,
        streams: this.internalStreams,
      })
      launches = info.launches
      await this.synchronizeInternal()
      this.checkDeviceError()
      for (let r = 0; r < this.size; r++) {
        this.deviceSet.use(this.deviceSet.groups[this.deviceSet.rankGroup[r]])
        for (const { c, b } of live)
          this.driver.copyDtoH(outputs[b][r], (buf.outputs[r] + offsets[b]) as DevicePtr, c * eb)
      }
    }
    return outputs.map((o) =>
      Object.assign(o, { info: { algorithm: 'oneshot-sentinel' as AlgorithmName, chunks: launches } }),
    )
  }
}

/** Checks the driver-view inputs (the shared rules of src/communicator/validate.ts); returns the element count. */
export function validateHostInputs(inputs: readonly TensorArray[], size: number, dtype: Dtype): number {
  if (!DTYPES.includes(dtype))
    throw new LlcommError('UNSUPPORTED_DTYPE', `dtype ${String(dtype)} is not one of ${DTYPES.join(', ')}`)
  return validateInputs(inputs, size, dtype)
}
