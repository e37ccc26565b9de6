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
 *   - `allReduce(inputs, options)` (SPEC §5 driver view): host arrays copied in and out, synchronous inside.
 */

import { chooseAlgorithm, loadTuningTable, type TuningTable } from '../../algorithms/auto.js'
import { DETERMINISTIC_FALLBACK, deterministicAlgorithms, enforceDeterminism } from '../../algorithms/determinism.js'
import type {
  AlgorithmChoice,
  AlgorithmName,
  AllReduceOptions,
  AllReduceOutputs,
  BenchmarkRequest,
  BenchmarkResult,
  Communicator,
  CudaCommunicatorOptions,
  Dtype,
  LlProtocol,
  ReduceOp,
  TensorArray,
} from '../../api/types.js'
import { ALL_ALGORITHMS, DTYPE_BYTES, DTYPES } from '../../api/types.js'
import { validateDeterministic } from '../../communicator/validate.js'
import { LlcommError } from '../../errors.js'
import {
  type CudaDriver,
  type CuStream,
  cudaDriver,
  type DevicePtr,
  nccl as loadNccl,
  nvrtc as loadNvrtc,
} from '../../ffi/index.js'
import { LLCOMM_ERROR_WORD_BYTES as ERROR_WORD_BYTES } from './abi.js'
import { AllReduceLauncher, type PreparedChunk } from './allreduce-launcher.js'
import { runCudaBenchmark } from './benchmark.js'
import { type DecodeStepRequest, type DecodeStepResult, runCudaDecodeStep } from './decode-step.js'
import { DeviceSet, validateDeviceList } from './devices.js'
import { readErrorWord } from './error-word.js'
import { deviceBufferLayout, KERNEL_VARIANTS, kernelSources } from './kernel-table.js'
import { DeviceAllocations } from './memory.js'
import { KernelModules } from './modules.js'
import { NcclBaseline, ncclUnavailableReason } from './nccl-baseline.js'

export const DEFAULT_TIMEOUT_MS = 10_000
export const DEFAULT_BUFFER_BYTES = 1 << 20

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
  fallback?: boolean
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

const ELEMENT_ARRAY: Readonly<Record<Dtype, string>> = { f32: 'Float32Array', f16: 'Uint16Array', bf16: 'Uint16Array' }
const NCCL_ALGORITHMS: readonly AlgorithmName[] = ['nccl', 'nccl-symmetric']
const AUTO_PREFERENCE: readonly AlgorithmName[] = ['oneshot-ll', 'oneshot-sentinel', 'twoshot-sentinel', 'nccl', 'ring']
/** Kernel algorithms that serve any shape, in the order a fallback tries them when NCCL is not usable. */
const FALLBACK_KERNELS: readonly AlgorithmName[] = ['ring', 'oneshot-barrier']

export async function createCudaCommunicator(options: CudaCommunicatorOptions): Promise<CudaCommunicator> {
  return new CudaCommunicator(options)
}

export class CudaCommunicator implements Communicator {
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
  private ncclBaseline: NcclBaseline | undefined
  private staging:
    | {
        bytes: number
        inputs: DevicePtr[]
        outputs: DevicePtr[]
        symmetric?: { inputs: DevicePtr[]; outputs: DevicePtr[] }
      }
    | undefined
  private closed = false
  private lastStreams: readonly CuStream[] | undefined
  private broken: LlcommError | undefined
  /**
   * The last few eager `deviceAllReduce` calls, packed (issue 4: the eager path must cost about what a C++ launch
   * loop costs). A call whose pointers, count, dtype, op, algorithm, protocol, pdl, fallback and streams all equal an
   * entry's reuses its packed launches: no validation, resolution or packing again (those depend only on these
   * values and on the communicator's fixed configuration), no allocation.
   */
  private readonly eagerCalls: EagerCall[] = []
  private eagerNext = 0

  constructor(options: CudaCommunicatorOptions) {
    const devices = validateDeviceList(options?.devices)
    const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS
    if (!(timeoutMs > 0) || !Number.isFinite(timeoutMs))
      throw new LlcommError('INVALID_ARGUMENT', `timeoutMs must be > 0, got ${timeoutMs}`)
    const bufferBytes = options.bufferBytes ?? DEFAULT_BUFFER_BYTES
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
    this.driver = cudaDriver()
    this.deviceSet = new DeviceSet(this.driver, devices)
    this.allocs = new DeviceAllocations(this.driver)
    const nv = loadNvrtc()
    this.modules = new KernelModules(this.driver, nv, { headers: kernelSources(), cacheDir: options.cacheDir })
    try {
      const layout = deviceBufferLayout(this.size, bufferBytes)
      const recvBuf = this.rankRecvBuf
      const scratch = this.rankScratch
      for (let r = 0; r < this.size; r++) {
        const g = this.deviceSet.groups[this.deviceSet.rankGroup[r]]
        recvBuf[r] = this.allocs.alloc(g.context, layout.recvBufBytes, `recvBuf[${r}]`)
        scratch[r] = this.allocs.alloc(g.context, layout.scratchBytes, `scratch[${r}]`)
        // Initial contents (contract): zero and sentinel ranges. Written once, synchronously, before any launch,
        // so every later kernel sees them (cuMemsetD32 on the null stream completes before we return).
        this.driver.memsetD32(recvBuf[r], 0, Math.ceil(layout.recvBufBytes / 4))
        this.driver.memsetD32(scratch[r], 0, Math.ceil(layout.scratchBytes / 4))
        for (const fill of layout.fills) {
          if (fill.offset % 4 !== 0 || fill.bytes % 4 !== 0) {
            throw new LlcommError(
              'INVALID_ARGUMENT',
              `deviceBufferLayout fill at ${fill.offset}+${fill.bytes} is not word-aligned`,
            )
          }
          const base = fill.region === 'recv' ? recvBuf[r] : scratch[r]
          this.driver.memsetD32((base + fill.offset) as DevicePtr, fill.word32, fill.bytes / 4)
        }
      }
      const g0 = this.deviceSet.groups[0]
      this.errorWord = this.allocs.alloc(g0.context, ERROR_WORD_BYTES, 'errorWord')
      this.driver.memsetD32(this.errorWord, 0, ERROR_WORD_BYTES / 4)
      // cuMemsetD32 to device memory may return before it is done (null stream of that device's context), and the
      // streams below are non-blocking: wait on every device's context, not only the current one.
      for (const g of this.deviceSet.groups) {
        this.deviceSet.use(g)
        this.driver.contextSynchronize()
      }
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
    this.libraries = { cuda: this.driver.libraryPath, nvrtc: nv.libraryPath, ...(ncclPath ? { nccl: ncclPath } : {}) }
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

  private assertOpen(): void {
    if (this.closed) throw new LlcommError('CLOSED', 'the communicator was closed')
    if (this.broken) {
      throw new LlcommError(
        'TIMEOUT',
        `the communicator is unusable after an earlier device timeout: ${this.broken.message}`,
        {
          ...this.broken.details,
        },
      )
    }
  }

  /** Resolves `auto` and fallbacks to the algorithm that will run (SPEC: reported, never silent). */
  resolveAlgorithm(
    requested: AlgorithmChoice,
    dtype: Dtype,
    op: ReduceOp,
    bytes: number,
    fallback = true,
    deterministic = false,
  ): { algorithm: AlgorithmName; fallbackReason?: string } {
    if (!deterministic) return this.resolveAny(requested, dtype, op, bytes, fallback, false)
    // Only among algorithms that keep determinism: `auto` from the start, a requested one after the usual rules.
    return enforceDeterminism(this.resolveAny(requested, dtype, op, bytes, fallback, true), 'cuda', fallback)
  }

  private resolveAny(
    requested: AlgorithmChoice,
    dtype: Dtype,
    op: ReduceOp,
    bytes: number,
    fallback: boolean,
    deterministic: boolean,
  ): { algorithm: AlgorithmName; fallbackReason?: string } {
    if (!DTYPES.includes(dtype))
      throw new LlcommError('UNSUPPORTED_DTYPE', `dtype ${String(dtype)} is not one of ${DTYPES.join(', ')}`)
    if (op !== 'sum') throw new LlcommError('UNSUPPORTED_OP', `op ${String(op)} is not supported (sum only)`)
    if (requested !== 'auto' && !ALL_ALGORITHMS.includes(requested)) {
      throw new LlcommError('UNSUPPORTED_ALGORITHM', `unknown algorithm ${JSON.stringify(requested)}`, {
        algorithm: requested,
      })
    }
    const all = this.algorithms.filter((a): a is AlgorithmName => a !== 'auto')
    const available = deterministic ? deterministicAlgorithms(all, 'cuda') : all
    if (requested === 'auto') {
      const preference = deterministic
        ? [...deterministicAlgorithms(AUTO_PREFERENCE, 'cuda'), DETERMINISTIC_FALLBACK]
        : AUTO_PREFERENCE
      const chosen = chooseAlgorithm(this.tuning, 'cuda', this.size, bytes, available, preference)
      if (NCCL_ALGORITHMS.includes(chosen) || this.hasKernel(chosen, dtype, op)) return { algorithm: chosen }
      requested = chosen
    } else if (
      available.includes(requested) &&
      (NCCL_ALGORITHMS.includes(requested) || this.hasKernel(requested, dtype, op))
    ) {
      return { algorithm: requested }
    }
    const reason =
      NCCL_ALGORITHMS.includes(requested) && this.ncclReason
        ? `${requested} is not usable here: ${this.ncclReason}`
        : `${requested} has no kernel for ${dtype}/${op} on this communicator`
    if (!fallback) throw new LlcommError('UNSUPPORTED_ALGORITHM', reason, { algorithm: requested })
    const to: AlgorithmName | undefined = deterministic
      ? [DETERMINISTIC_FALLBACK].find((a) => this.hasKernel(a, dtype, op))
      : available.includes('nccl')
        ? 'nccl'
        : FALLBACK_KERNELS.find((a) => this.hasKernel(a, dtype, op))
    if (!to)
      throw new LlcommError('UNSUPPORTED_ALGORITHM', `${reason}, and no fallback is available`, {
        algorithm: requested,
      })
    return { algorithm: to, fallbackReason: reason }
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
    return {
      algorithm,
      fallbackReason,
      chunks: chunks.length,
      issue: (streams = defaultStreams) => {
        this.claimStreams(streams)
        this.launcher.issue(chunks, streams)
      },
    }
  }

  /**
   * SPEC §5 concurrency: one epoch sequence per channel, so two streams must not run calls of one communicator
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
    const calls = this.eagerCalls
    for (let i = 0; i < calls.length; i++) {
      const c = calls[i]
      if (sameEagerCall(c, args)) {
        this.assertOpen()
        // c.streams is the entry's own copy, equal to the caller's streams (or the internal ones): the same array
        // every time, so claimStreams sees an unchanged stream set without a query.
        c.prepared.issue(c.streams)
        return c.info
      }
    }
    const p = this.prepareDeviceAllReduce(args)
    const streams = [...this.streamsOf(args)]
    const info: DeviceAllReduceInfo = { algorithm: p.algorithm, fallbackReason: p.fallbackReason, chunks: p.chunks }
    p.issue(streams)
    const entry: EagerCall = {
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
      argStreams: args.streams ? [...args.streams] : undefined,
      streams,
      prepared: p,
      info,
    }
    if (calls.length < EAGER_CALLS_KEPT) calls.push(entry)
    else calls[this.eagerNext] = entry
    this.eagerNext = (this.eagerNext + 1) % EAGER_CALLS_KEPT
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
    const e = readErrorWord(this.driver, this.errorWord)
    if (e) {
      this.broken = e
      throw e
    }
  }

  /** The NCCL clique, created on first use. */
  nccl(): NcclBaseline {
    if (this.ncclReason) throw new LlcommError('UNSUPPORTED_ALGORITHM', `nccl is not usable here: ${this.ncclReason}`)
    this.ncclBaseline ??= new NcclBaseline(loadNccl(), this.driver, this.deviceSet)
    return this.ncclBaseline
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

  async allReduce<T extends TensorArray>(inputs: T[], options: AllReduceOptions = {}): Promise<AllReduceOutputs<T>> {
    this.assertOpen()
    const dtype = options.dtype ?? 'f32'
    const op = options.op ?? 'sum'
    const count = validateHostInputs(inputs, this.size, dtype)
    const bytes = count * DTYPE_BYTES[dtype]
    const { algorithm, fallbackReason } = this.resolveAlgorithm(
      options.algorithm ?? 'auto',
      dtype,
      op,
      bytes,
      options.fallback ?? true,
      validateDeterministic(options.deterministic, this.deterministic),
    )
    const outputs = inputs.map(() => (dtype === 'f32' ? new Float32Array(count) : new Uint16Array(count))) as T[]
    let chunks = 0
    if (count > 0) {
      const buf = this.stagingFor(bytes, algorithm === 'nccl-symmetric')
      for (let r = 0; r < this.size; r++) {
        this.deviceSet.use(this.deviceSet.groups[this.deviceSet.rankGroup[r]])
        this.driver.copyHtoD(buf.inputs[r], inputs[r], bytes)
      }
      // A pageable cuMemcpyHtoD returns once the data is staged; the DMA into device memory runs on the context's
      // null stream, which our non-blocking streams do not wait for. Finish it on every device before the kernel.
      for (const g of this.deviceSet.groups) {
        this.deviceSet.use(g)
        this.driver.contextSynchronize()
      }
      const info = this.deviceAllReduce({
        inputs: buf.inputs,
        outputs: buf.outputs,
        count,
        dtype,
        op,
        algorithm,
        protocol: options.protocol,
        pdl: options.pdl,
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

  async benchmark(request: BenchmarkRequest): Promise<BenchmarkResult> {
    this.assertOpen()
    return runCudaBenchmark(this, this.driver, this.deviceSet, this.allocs, this.modules, request)
  }

  /** One tensor-parallel decode step per algorithm, timed by graph replay (`llcomm decode`; decode-step.ts). */
  async decodeStep(request: DecodeStepRequest): Promise<DecodeStepResult> {
    this.assertOpen()
    return runCudaDecodeStep(this, this.driver, this.deviceSet, this.allocs, this.modules, request)
  }

  /** Drains in-flight work, then frees everything in reverse order; idempotent. */
  async close(): Promise<void> {
    if (this.closed) return
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

  /** Frees everything without draining (a hung kernel still ends at its own deadline). Idempotent. */
  async destroy(): Promise<void> {
    this.releaseAll()
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close()
  }

  private releaseAll(): void {
    if (this.closed) return
    this.closed = true
    const attempt = (f: () => void) => {
      try {
        f()
      } catch {
        // keep freeing: one failure must not leak the rest
      }
    }
    attempt(() => this.ncclBaseline?.destroy())
    attempt(() => this.launcher?.disposeAll())
    for (const [i, s] of [...this.internalStreams.entries()].reverse()) {
      attempt(() => {
        this.deviceSet.use(this.deviceSet.groups[i])
        this.driver.streamDestroy(s)
      })
    }
    this.internalStreams.length = 0
    attempt(() => this.allocs.freeAll())
    attempt(() => this.modules.unloadAll())
    attempt(() => this.deviceSet.release())
  }
}

/** How many distinct eager deviceAllReduce calls stay packed (e.g. one per layer's buffer in a model step). */
const EAGER_CALLS_KEPT = 8

/** A packed eager call and the argument values it was packed for (copies: callers may reuse their arrays). */
interface EagerCall {
  inputs: DevicePtr[]
  outputs: DevicePtr[]
  count: number
  dtype: Dtype
  op: ReduceOp
  algorithm: AlgorithmChoice
  protocol: LlProtocol | undefined
  pdl: boolean
  fallback: boolean
  deterministic: boolean | undefined
  stream: CuStream | undefined
  argStreams: CuStream[] | undefined
  /** The streams the call runs on (a private copy, passed to issue() every time). */
  streams: CuStream[]
  prepared: PreparedDeviceAllReduce
  info: DeviceAllReduceInfo
}

function samePointers(a: readonly number[], b: unknown): boolean {
  if (!Array.isArray(b) || b.length !== a.length) return false
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false
  return true
}

/** True when `args` asks for exactly the call `c` was packed for (no allocation). */
function sameEagerCall(c: EagerCall, args: DeviceAllReduceArgs): boolean {
  return (
    args.count === c.count &&
    args.dtype === c.dtype &&
    (args.op ?? 'sum') === c.op &&
    (args.algorithm ?? 'auto') === c.algorithm &&
    args.protocol === c.protocol &&
    (args.pdl ?? false) === c.pdl &&
    (args.fallback ?? true) === c.fallback &&
    args.deterministic === c.deterministic &&
    args.stream === c.stream &&
    (args.streams === undefined
      ? c.argStreams === undefined
      : c.argStreams !== undefined && samePointers(c.argStreams, args.streams)) &&
    samePointers(c.inputs, args.inputs) &&
    samePointers(c.outputs, args.outputs)
  )
}

/** Checks the driver-view inputs; returns the element count. */
export function validateHostInputs(inputs: readonly TensorArray[], size: number, dtype: Dtype): number {
  if (!DTYPES.includes(dtype))
    throw new LlcommError('UNSUPPORTED_DTYPE', `dtype ${String(dtype)} is not one of ${DTYPES.join(', ')}`)
  if (!Array.isArray(inputs) || inputs.length !== size) {
    throw new LlcommError(
      'INVALID_ARGUMENT',
      `allReduce needs one input per rank (${size}), got ${Array.isArray(inputs) ? inputs.length : typeof inputs}`,
    )
  }
  const want = dtype === 'f32' ? Float32Array : Uint16Array
  const count = inputs[0]?.length ?? 0
  for (const [r, x] of inputs.entries()) {
    if (!(x instanceof want)) {
      throw new LlcommError('LENGTH_MISMATCH', `input ${r} must be a ${ELEMENT_ARRAY[dtype]} for ${dtype}`, { rank: r })
    }
    if (x.length !== count) {
      throw new LlcommError('LENGTH_MISMATCH', `input ${r} has ${x.length} elements, input 0 has ${count}`, { rank: r })
    }
  }
  return count
}
