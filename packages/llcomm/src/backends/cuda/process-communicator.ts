/**
 * The cuda backend with one process per rank. This process is one rank on one device (`device`, default 0;
 * several processes may share a GPU). The ranks meet through the TCP rendezvous and then:
 *
 *   1. each allocates its receive buffer, scratch, a 256-byte probe buffer and its error word, and writes the
 *      initial contents (deviceBufferLayout's fills), as the in-process communicator does for each rank;
 *   2. exports recvBuf, scratch and probe with cuIpcGetMemHandle; the handles go through the rendezvous; each rank
 *      maps every peer's (cuIpcOpenMemHandle) - these are the peer pointers of every launch's params;
 *   3. probes peer access for real (a driver that reports peer access that does not work has hung other
 *      libraries at load): each rank writes its rank + 1 into word `rank` of every peer's probe buffer on its
 *      stream and must see the stream finish within timeoutMs; after a barrier each rank checks that every peer's
 *      word arrived in its own probe buffer. Any failure is NO_DEVICE naming the pair, on every rank;
 *   4. rank 0 makes an ncclUniqueId and sends it through the rendezvous when every rank has NCCL and the ranks'
 *      devices are distinct; ncclCommInitRank runs (collectively) on the first nccl call.
 *
 * Launches: the in-process launcher (allreduce-launcher.ts) with a launch group of one rank (this one) and the
 * peer pointers from IPC, so the kernels, the parameter ABI, chunking and co-residency checks are the same.
 * deviceAllReduce enqueues on the caller's stream with no host synchronization (graph-capturable); read the device
 * error word with checkDeviceError() after the stream finished. allReduce(input) stages through device memory.
 *
 * close(): drains the stream, unmaps the peers' buffers, then a barrier (so that no rank frees memory a peer
 * still maps), then frees in reverse order and leaves the rendezvous. destroy(): the same without the barrier.
 */
import { createHash } from 'node:crypto'
import { loadTuningTable, type TuningTable } from '../../algorithms/auto.js'
import { type AlgorithmCapabilities, resolveAlgorithm as resolveWithCapabilities } from '../../algorithms/resolve.js'
import type {
  AlgorithmChoice,
  AlgorithmName,
  AllReduceInfo,
  AllReduceOptions,
  CudaProcessCommunicatorApi,
  Dtype,
  ProcessCommunicatorOptions,
  ProcessDeviceAllReduceRequest,
  RankAllReduceOutput,
  ReduceOp,
  TensorArray,
} from '../../api/types.js'
import { DTYPE_BYTES, DTYPES } from '../../api/types.js'
import { validateDeterministic, validateRankInput } from '../../communicator/validate.js'
import { isCallRefusal, LlcommError, type LlcommErrorCode } from '../../errors.js'
import {
  asDevicePtr,
  asStream,
  type CudaDriver,
  type CudaIpc,
  type CuStream,
  cudaDriver,
  cudaIpc,
  type DevicePtr,
  nccl as loadNccl,
  nvrtc as loadNvrtc,
  type Nccl,
  type NcclComm,
  ncclRank,
} from '../../ffi/index.js'
import { encodeRefusedSignature } from '../../protocol/call-signature.js'
import { resolveRendezvousSettings } from '../../rendezvous/address.js'
import { processAlive } from '../../rendezvous/process-liveness.js'
import { recoverProcessRank } from '../../rendezvous/recovery.js'
import { joinRendezvous, type Rendezvous } from '../../rendezvous/tcp-store.js'
import {
  LLCOMM_ERR_TIMEOUT,
  LLCOMM_ERROR_WORD_BYTES,
  LLCOMM_MAX_CHANNELS,
  LLCOMM_SCRATCH_SIGNATURE_OFFSET,
} from './abi.js'
import { AllReduceLauncher } from './allreduce-launcher.js'
import type {
  FusedDeviceInfo,
  ProcessDeviceAllReduceManyRequest,
  ProcessDeviceAllReduceRmsNormRequest,
} from './device-call.js'
import { DeviceSet } from './devices.js'
import {
  type ProcessPreparedCall,
  processAllReduceManyCalls,
  processDeviceAllReduceCalls,
  processFusedNormCalls,
} from './eager-calls.js'
import { copyErrorWord, decodeErrorWord, errorFromWord } from './error-word.js'
import { FusedLauncher, type PreparedFusedCall } from './fused-launcher.js'
import {
  DEFAULT_BUFFER_BYTES as CUDA_DEFAULT_BUFFER_BYTES,
  deviceBufferLayout,
  KERNEL_VARIANTS,
  kernelBuildDefines,
  kernelSources,
  parseTwoshotAllGather,
  SIGNATURE_BLOCK,
  SIGNATURE_CHECK,
  SIGNATURE_DEFERRED,
  SIGNATURE_KERNEL_BUILD,
} from './kernel-table.js'
import { checkLatestSignaturesOfRank, DEFERRED_SIGNATURE_SLOT_MASK } from './latest-signature.js'
import { DeviceAllocations } from './memory.js'
import { KernelModules } from './modules.js'
import { reclassifyTimeout, SIGNATURE_REGION_WORDS } from './timeout-signature.js'

export const CUDA_PROCESS_DEFAULTS = { timeoutMs: 10_000, bufferBytes: CUDA_DEFAULT_BUFFER_BYTES } as const
const PROBE_BYTES = 256
/** The in-process backend's auto preference and fallback order (communicator.ts), on this path too. */
const AUTO_PREFERENCE: readonly AlgorithmName[] = ['oneshot-ll', 'oneshot-sentinel', 'twoshot-sentinel', 'nccl', 'ring']
const FALLBACK_KERNELS: readonly AlgorithmName[] = ['ring', 'oneshot-barrier']
/** Prepared kernel calls kept for the eager path (one per distinct pointer/count/options set, like the layers of a model). */
const PREPARED_KEPT = 16

interface ExportedBuffers {
  ok: boolean
  message?: string
  code?: LlcommErrorCode
  recv?: string
  scratch?: string
  probe?: string
  device?: number
  visibleDevices?: string
  nccl?: boolean
  /** The device's architecture and SM count: the fused plans' cluster limits depend on them (deviceAllReduceRmsNorm). */
  deviceModel?: string
}

const b64 = (a: Uint8Array): string => Buffer.from(a).toString('base64')
const unb64 = (s: string): Uint8Array => new Uint8Array(Buffer.from(s, 'base64'))

/** A host view's deviceAllReduce of one staged buffer, with the call's options. */
function hostViewRequest(
  options: AllReduceOptions,
  input: DevicePtr,
  output: DevicePtr,
  count: number,
  dtype: Dtype,
): ProcessDeviceAllReduceRequest {
  const { op, algorithm, protocol, pdl, fallback, deterministic } = options
  return { input, output, count, dtype, op, algorithm, protocol, pdl, fallback, deterministic }
}

/** A CUdeviceptr given as a number or bigint (INVALID_ARGUMENT otherwise; zero and alignment checked by the callers). */
function devicePointer(v: unknown, what: string): DevicePtr {
  if (typeof v !== 'number' && typeof v !== 'bigint') {
    throw new LlcommError('INVALID_ARGUMENT', `${what} is not a device pointer (number or bigint)`)
  }
  try {
    return asDevicePtr(v)
  } catch (e) {
    throw new LlcommError('INVALID_ARGUMENT', `${what}: ${(e as Error).message}`)
  }
}

function positive(value: unknown, name: string): number {
  if (typeof value !== 'number' || !(value > 0) || !Number.isFinite(value)) {
    throw new LlcommError('INVALID_ARGUMENT', `${name} must be a positive number`, { [name]: value })
  }
  return value
}

export async function createCudaProcessCommunicator(
  options: ProcessCommunicatorOptions,
): Promise<CudaProcessCommunicator> {
  const { rank, worldSize, address } = resolveRendezvousSettings(options)
  if (worldSize > 64) throw new LlcommError('INVALID_ARGUMENT', `at most 64 ranks, got ${worldSize}`, { worldSize })
  const timeoutMs = positive(options.timeoutMs ?? CUDA_PROCESS_DEFAULTS.timeoutMs, 'timeoutMs')
  const rendezvousTimeoutMs = positive(options.rendezvousTimeoutMs ?? timeoutMs, 'rendezvousTimeoutMs')
  const bufferBytes = options.bufferBytes ?? CUDA_PROCESS_DEFAULTS.bufferBytes
  if (!Number.isInteger(bufferBytes) || bufferBytes < 4096 || bufferBytes % 256 !== 0) {
    throw new LlcommError(
      'INVALID_ARGUMENT',
      `bufferBytes must be a multiple of 256, at least 4096, got ${bufferBytes}`,
    )
  }
  const device = options.device ?? 0
  if (!Number.isInteger(device) || device < 0) {
    throw new LlcommError('INVALID_ARGUMENT', `device must be a non-negative integer, got ${String(device)}`)
  }
  const table = loadTuningTable(options.tuningTable)
  const digest = createHash('sha256').update(JSON.stringify(table)).digest('hex').slice(0, 16)
  // twoshot-sentinel's all-gather kernel (LLCOMM_TWOSHOT_ALLGATHER), read once, here; part of the rendezvous config,
  // so a rank whose environment says otherwise than rank 0's is refused at creation (with another value the same call
  // could run the push kernel at one rank and the pull kernel at another: kernel-table.ts TwoshotAllGatherMode).
  // The signature check's settings (LLCOMM_SIG_BLOCK, LLCOMM_SIG_DEFERRED: kernel-table.ts SIGNATURE_CHECK) likewise.
  const twoshotAllGather = parseTwoshotAllGather(process.env.LLCOMM_TWOSHOT_ALLGATHER)
  const rv = await joinRendezvous({
    address,
    rank,
    worldSize,
    timeoutMs: rendezvousTimeoutMs,
    config: {
      backend: 'cuda',
      worldSize,
      bufferBytes,
      tuningTable: digest,
      twoshotAllGather,
      signature: SIGNATURE_CHECK,
    },
  })
  const deterministic = validateDeterministic(options.deterministic)
  const comm = new CudaProcessCommunicator(rv, {
    device,
    timeoutMs,
    bufferBytes,
    table,
    cacheDir: options.cacheDir,
    deterministic,
    twoshotAllGather,
  })
  try {
    await comm.connect(rendezvousTimeoutMs)
  } catch (e) {
    comm.releaseAll(false)
    rv.destroy()
    throw e
  }
  rv.unref()
  return comm
}

export class CudaProcessCommunicator implements CudaProcessCommunicatorApi {
  readonly backend = 'cuda' as const
  readonly rank: number
  readonly size: number
  readonly device: number
  readonly timeoutMs: number
  readonly bufferBytes: number
  algorithms: readonly AlgorithmChoice[] = ['auto']
  private readonly rv: Rendezvous
  private readonly table: TuningTable
  private readonly cacheDir: string | undefined
  /** The communicator's `deterministic` default (CommunicatorOptionsBase; each call may override it). */
  readonly deterministic: boolean
  /** twoshot-sentinel's all-gather kernel choice ($LLCOMM_TWOSHOT_ALLGATHER at creation). */
  private readonly twoshotAllGather: 'auto' | 'push' | 'pull'
  private driver: CudaDriver | undefined
  private ipc: CudaIpc | undefined
  private deviceSet: DeviceSet | undefined
  private modules: KernelModules | undefined
  private allocs: DeviceAllocations | undefined
  private launcher: AllReduceLauncher | undefined
  /** The fused calls' launcher (deviceAllReduceRmsNorm): this rank's launch group, the IPC-mapped peers' buffers. */
  private fusedLauncher: FusedLauncher | undefined
  /** Why this communicator refuses fused calls (the ranks' devices differ in model), or undefined. */
  private fusedRefusal: string | undefined
  /** The stream of this rank's latest launch (claimStream). */
  private lastStream: CuStream | undefined
  /** recover() calls so far (each one's barriers are named after it). */
  private recoveries = 0
  private stream: CuStream | undefined
  private errorWord: DevicePtr | undefined
  private readonly recvBuf: DevicePtr[] = []
  private readonly scratch: DevicePtr[] = []
  private readonly probe: DevicePtr[] = []
  /** Peer allocations mapped with cuIpcOpenMemHandle (closed before our own are freed). */
  private readonly opened: DevicePtr[] = []
  private ncclReason: string | undefined = 'not negotiated'
  private ncclId: Uint8Array | undefined
  private ncclComm: NcclComm | undefined
  private ncclLib: Nccl | undefined
  private staging: { bytes: number; input: DevicePtr; output: DevicePtr } | undefined
  /** Packed eager calls: a repeated request skips validation, resolution and packing (eager-calls.ts). */
  private readonly eagerCalls = processDeviceAllReduceCalls(PREPARED_KEPT)
  /** The eager fused calls, packed (as the in-process communicator's): a repeated call skips checks and packing. */
  private readonly eagerNormCalls = processFusedNormCalls(PREPARED_KEPT)
  private readonly eagerManyCalls = processAllReduceManyCalls(PREPARED_KEPT)
  private state: 'open' | 'closed' = 'open'
  private broken: LlcommError | undefined
  /** The error the device error word gave (checkDeviceError), kept: the communicator does not recover. */
  private deviceFailure: LlcommError | undefined
  /**
   * The kernels check call signatures one launch late (LLCOMM_SIG_DEFERRED; kernel-table.ts SIGNATURE_DEFERRED):
   * checkDeviceError then checks each channel's last launch itself (latest-signature.ts), in this rank's scratch.
   */
  private readonly signatureDeferred = SIGNATURE_DEFERRED
  /** The epoch last checked by the host on each channel of this rank (latest-signature.ts). */
  private readonly latestChecked = new Uint32Array(LLCOMM_MAX_CHANNELS)
  private queue: Promise<unknown> = Promise.resolve()
  private closing: Promise<void> | undefined

  constructor(
    rv: Rendezvous,
    o: {
      device: number
      timeoutMs: number
      bufferBytes: number
      table: TuningTable
      cacheDir?: string
      deterministic?: boolean
      /**
       * kernel-table.ts TwoshotAllGatherMode, spelled out: this class's declaration is public, and importing the type
       * would pull kernel-table's declarations (and their node types) into a strict consumer's type check.
       */
      twoshotAllGather?: 'auto' | 'push' | 'pull'
    },
  ) {
    this.rv = rv
    this.rank = rv.rank
    this.size = rv.worldSize
    this.device = o.device
    this.timeoutMs = o.timeoutMs
    this.bufferBytes = o.bufferBytes
    this.table = o.table
    this.cacheDir = o.cacheDir
    this.deterministic = o.deterministic ?? false
    this.twoshotAllGather = o.twoshotAllGather ?? 'auto'
  }

  /** Steps 1-4 of the header. Every rank takes part in every gather, reporting its own failure there. */
  async connect(timeoutMs: number): Promise<void> {
    let mine: ExportedBuffers
    try {
      mine = this.allocateAndExport()
    } catch (e) {
      mine = { ok: false, message: (e as Error).message, code: e instanceof LlcommError ? e.code : undefined }
    }
    const all = await this.rv.allGather<ExportedBuffers>('llcomm/cuda/ipc', mine, timeoutMs)
    this.throwIfAnyFailed(all, 'set up its device buffers')
    let opened: { ok: boolean; message?: string } = { ok: true }
    try {
      this.openPeers(all)
      await this.writeProbes(timeoutMs)
    } catch (e) {
      opened = { ok: false, message: (e as Error).message }
    }
    this.throwIfAnyFailed(await this.rv.allGather('llcomm/cuda/probe-written', opened, timeoutMs), 'probe its peers')
    let checked: { ok: boolean; message?: string } = { ok: true }
    try {
      this.checkProbes()
    } catch (e) {
      checked = { ok: false, message: (e as Error).message }
    }
    this.throwIfAnyFailed(await this.rv.allGather('llcomm/cuda/probe-checked', checked, timeoutMs), 'see its peers')
    await this.negotiateNccl(all, timeoutMs)
    this.capabilities = undefined // made from the algorithms below at the first resolution
    this.algorithms = [
      ...new Set(KERNEL_VARIANTS.map((v) => v.algorithm)),
      ...(this.ncclReason ? [] : (['nccl'] as const)),
      'auto',
    ]
  }

  private throwIfAnyFailed(
    reports: readonly { ok: boolean; message?: string; code?: LlcommErrorCode }[],
    what: string,
  ): void {
    const bad = reports.findIndex((r) => !r.ok)
    if (bad < 0) return
    // The failing rank's own code (LIBRARY_NOT_FOUND, CUDA_ERROR, ...) on every rank; NO_DEVICE when it had none.
    throw new LlcommError(reports[bad].code ?? 'NO_DEVICE', `rank ${bad} could not ${what}: ${reports[bad].message}`, {
      rank: this.rank,
      peer: bad,
    })
  }

  private allocateAndExport(): ExportedBuffers {
    const driver = cudaDriver()
    this.driver = driver
    this.ipc = cudaIpc()
    const deviceSet = new DeviceSet(driver, [this.device])
    // One launch group holding this rank only: the launcher packs launchRanks = [rank] of nranks = worldSize.
    deviceSet.groups[0].ranks = [this.rank]
    this.deviceSet = deviceSet
    const group = deviceSet.groups[0]
    this.allocs = new DeviceAllocations(driver)
    this.modules = new KernelModules(driver, loadNvrtc(), {
      headers: kernelSources(),
      cacheDir: this.cacheDir,
      // The fused kernels' signature cluster (fused_signature.cuh) where the build has the signature block.
      extraOptions: kernelBuildDefines({ ...SIGNATURE_KERNEL_BUILD, fusedSignatureCluster: SIGNATURE_BLOCK }),
    })
    const layout = deviceBufferLayout(this.size, this.bufferBytes)
    const recv = this.allocs.alloc(group.context, layout.recvBufBytes, 'recvBuf')
    const scratch = this.allocs.alloc(group.context, layout.scratchBytes, 'scratch')
    const probe = this.allocs.alloc(group.context, PROBE_BYTES, 'probe')
    driver.memsetD32(probe, 0, PROBE_BYTES / 4)
    this.errorWord = this.allocs.alloc(group.context, LLCOMM_ERROR_WORD_BYTES, 'errorWord')
    this.recvBuf[this.rank] = recv
    this.scratch[this.rank] = scratch
    this.probe[this.rank] = probe
    // The initial contents must be in memory before any peer maps and writes these buffers (it synchronizes).
    this.writeOwnInitialContents()
    this.stream = driver.streamCreate()
    let ncclOk = false
    try {
      this.ncclLib = loadNccl()
      ncclRank()
      ncclOk = true
    } catch {
      ncclOk = false
    }
    return {
      ok: true,
      recv: b64(this.ipc.getMemHandle(recv)),
      scratch: b64(this.ipc.getMemHandle(scratch)),
      probe: b64(this.ipc.getMemHandle(probe)),
      device: this.device,
      visibleDevices: process.env.CUDA_VISIBLE_DEVICES ?? '',
      nccl: ncclOk,
      deviceModel: `${group.arch}|${group.smCount}`,
    }
  }

  private openPeers(all: readonly ExportedBuffers[]): void {
    const ipc = this.ipc as CudaIpc
    for (let p = 0; p < this.size; p++) {
      if (p === this.rank) continue
      const e = all[p]
      for (const [list, handle] of [
        [this.recvBuf, e.recv],
        [this.scratch, e.scratch],
        [this.probe, e.probe],
      ] as const) {
        const ptr = ipc.openMemHandle(unb64(handle as string))
        this.opened.push(ptr)
        list[p] = ptr
      }
    }
    // The buffers and deadline both launchers share (this rank's launch group, the IPC-mapped peers).
    const buffers = {
      nranks: this.size,
      recvBuf: this.recvBuf,
      scratch: this.scratch,
      errorWord: this.errorWord as DevicePtr,
      timeoutNs: this.timeoutMs * 1e6,
      bufferBytes: this.bufferBytes,
      layout: deviceBufferLayout(this.size, this.bufferBytes),
    }
    this.launcher = new AllReduceLauncher(
      this.driver as CudaDriver,
      this.deviceSet as DeviceSet,
      this.modules as KernelModules,
      { ...buffers, twoshotAllGather: this.twoshotAllGather },
    )
    this.fusedLauncher = new FusedLauncher(
      this.driver as CudaDriver,
      this.deviceSet as DeviceSet,
      this.modules as KernelModules,
      buffers,
      { perProcess: true, signatureCluster: SIGNATURE_BLOCK },
    )
    // The split plans depend on the devices' cluster occupancy (architecture, SMs): every rank must plan the same
    // launches, so fused calls need one device model on every rank. And per process only the signature cluster
    // (which needs the signature block's build) catches a rank whose fused call differs: without it (LLCOMM_SIG_BLOCK=0,
    // an A/B setting) such a call could return wrong data, so fused calls are refused then.
    const models = new Set(all.map((e) => e.deviceModel))
    this.fusedRefusal =
      models.size > 1
        ? `the ranks' devices differ (${[...models].join(', ')}); fused calls need one model`
        : !SIGNATURE_BLOCK
          ? 'per-process fused calls need the signature block (LLCOMM_SIG_BLOCK=0 leaves them unchecked)'
          : undefined
  }

  /** Writes rank + 1 into word `rank` of every peer's probe buffer; the stream must finish within timeoutMs. */
  private async writeProbes(timeoutMs: number): Promise<void> {
    const driver = this.driver as CudaDriver
    const stream = this.stream as CuStream
    for (let p = 0; p < this.size; p++) {
      if (p !== this.rank) driver.memsetD32Async((this.probe[p] + 4 * this.rank) as DevicePtr, this.rank + 1, 1, stream)
    }
    await this.waitForStream(timeoutMs, 'the peer-access probe')
  }

  private checkProbes(): void {
    const words = new Uint32Array(PROBE_BYTES / 4)
    ;(this.driver as CudaDriver).copyDtoH(words, this.probe[this.rank])
    for (let p = 0; p < this.size; p++) {
      if (p === this.rank) continue
      if (words[p] !== p + 1) {
        throw new LlcommError(
          'NO_DEVICE',
          `rank ${p}'s probe write never reached rank ${this.rank} (peer access broken)`,
          {
            rank: this.rank,
            peer: p,
          },
        )
      }
    }
  }

  private async negotiateNccl(all: readonly ExportedBuffers[], timeoutMs: number): Promise<void> {
    const devices = all.map((e) => `${e.visibleDevices}|${e.device}`)
    let reason: string | undefined
    if (this.size < 2) reason = 'the nccl baseline needs at least 2 ranks'
    else if (new Set(devices).size !== devices.length) reason = 'NCCL needs one rank per GPU (ranks share a device)'
    else if (!all.every((e) => e.nccl)) reason = 'libnccl could not be loaded on every rank'
    let id: string | undefined
    if (!reason && this.rank === 0) {
      try {
        id = b64(ncclRank().uniqueId())
      } catch (e) {
        id = undefined
        reason = (e as Error).message
      }
    }
    const offers = await this.rv.allGather<{ id?: string; reason?: string }>(
      'llcomm/cuda/nccl-id',
      this.rank === 0 ? { id, reason } : {},
      timeoutMs,
    )
    const offer = offers[0]
    this.ncclReason = reason ?? offer.reason ?? (offer.id ? undefined : 'rank 0 made no ncclUniqueId')
    if (!this.ncclReason && offer.id) this.ncclId = unb64(offer.id)
  }

  /** The NCCL communicator, made on the first nccl call: collective, every rank gets here in the same call. */
  private ncclCommunicator(): NcclComm {
    if (this.ncclComm !== undefined) return this.ncclComm
    if (!this.ncclId) throw new LlcommError('UNSUPPORTED_ALGORITHM', `nccl is not usable here: ${this.ncclReason}`)
    ;(this.deviceSet as DeviceSet).use((this.deviceSet as DeviceSet).groups[0])
    this.ncclComm = ncclRank().commInitRank(this.size, this.ncclId, this.rank)
    return this.ncclComm
  }

  private assertOpen(): void {
    if (this.state !== 'open') throw new LlcommError('CLOSED', 'the communicator is closed')
    if (this.broken) throw this.broken
    const dead = this.rv.deadPeer
    if (dead !== undefined) {
      this.broken = new LlcommError('PEER_FAILED', `rank ${this.rank}: peer ${dead} died (its process is gone)`, {
        rank: this.rank,
        peer: dead,
      })
      throw this.broken
    }
  }

  private hasKernel(algorithm: AlgorithmName, dtype: Dtype, op: ReduceOp): boolean {
    return KERNEL_VARIANTS.some((v) => v.algorithm === algorithm && v.dtype === dtype && v.op === op)
  }

  /** This rank's row of the capability table (algorithms/resolve.ts), made once the algorithms are known. */
  private capabilities: AlgorithmCapabilities | undefined

  private capabilityTable(): AlgorithmCapabilities {
    this.capabilities ??= {
      backend: 'cuda',
      ranks: this.size,
      available: this.algorithms.filter((a): a is AlgorithmName => a !== 'auto'),
      cannotServe: (algorithm, call) => {
        if (algorithm === 'nccl')
          return this.ncclReason === undefined ? undefined : `nccl is not usable per process here: ${this.ncclReason}`
        if (algorithm === 'nccl-symmetric')
          return 'nccl-symmetric is not usable per process here: not offered on this path'
        return this.hasKernel(algorithm, call.dtype, call.op)
          ? undefined
          : `${algorithm} has no kernel for ${call.dtype}/${call.op} on this communicator`
      },
      autoPreference: AUTO_PREFERENCE,
      fallbacks: ['nccl', ...FALLBACK_KERNELS],
      tuning: this.table,
    }
    return this.capabilities
  }

  /**
   * auto, fallbacks and determinism by the shared resolver (algorithms/resolve.ts), the in-process communicators'
   * rules: reported, never silent.
   */
  resolveAlgorithm(
    requested: AlgorithmChoice,
    dtype: Dtype,
    op: ReduceOp,
    bytes: number,
    fallback = true,
    deterministic = this.deterministic,
  ): { algorithm: AlgorithmName; fallbackReason?: string } {
    if (!DTYPES.includes(dtype)) throw new LlcommError('UNSUPPORTED_DTYPE', `dtype ${String(dtype)} is not supported`)
    if (op !== 'sum') throw new LlcommError('UNSUPPORTED_OP', `op ${String(op)} is not supported (sum only)`)
    const call = { dtype, op, count: Math.ceil(bytes / DTYPE_BYTES[dtype]), fallback, deterministic }
    return resolveWithCapabilities(requested, call, this.capabilityTable())
  }

  /** Enqueues this rank's part of the all-reduce on `stream`; no host synchronization (graph-capturable). */
  deviceAllReduce(request: ProcessDeviceAllReduceRequest): AllReduceInfo {
    this.assertOpen()
    try {
      const cached = this.eagerCalls.find(request)
      if (cached) {
        this.claimStream(cached.streams[0])
        this.issuePrepared(cached.prepared, cached.streams[0])
        return cached.info
      }
      return this.prepareAndIssueAllReduce(request)
    } catch (e) {
      return this.refuseOnDevice(e, request.stream)
    }
  }

  /** deviceAllReduce past the eager cache: checks, resolves, packs and issues a new request. */
  private prepareAndIssueAllReduce(request: ProcessDeviceAllReduceRequest): AllReduceInfo {
    const { count, dtype } = request
    if (!Number.isInteger(count) || count < 0) {
      throw new LlcommError('INVALID_ARGUMENT', `count must be a non-negative integer, got ${count}`)
    }
    const input = devicePointer(request.input, 'input')
    const output = devicePointer(request.output, 'output')
    for (const [what, p] of [
      ['input', input],
      ['output', output],
    ] as const) {
      if (p <= 0) throw new LlcommError('INVALID_ARGUMENT', `${what} is not a device pointer`)
      if (p % 16 !== 0) throw new LlcommError('MISALIGNED_BUFFER', `${what} 0x${p.toString(16)} is not 16-byte aligned`)
    }
    const op = request.op ?? 'sum'
    const stream =
      request.stream === undefined || request.stream === 0 ? (this.stream as CuStream) : asStream(request.stream)
    const { algorithm, fallbackReason } = this.resolveAlgorithm(
      request.algorithm ?? 'auto',
      dtype,
      op,
      count * DTYPE_BYTES[dtype],
      request.fallback ?? true,
      validateDeterministic(request.deterministic, this.deterministic),
    )
    let prepared: ProcessPreparedCall
    const kernelCall = {
      dtype,
      op,
      algorithm,
      protocol: request.protocol,
      pdl: request.pdl ?? false,
      streams: [stream],
    }
    if (count === 0) {
      // An empty call still takes this rank's signature epoch (AllReduceLauncher.prepareEmpty: the signature block
      // alone), so that a peer whose call is not empty meets it (MISMATCH on both sides) instead of this rank's next
      // call: an empty call that launched nothing left its rank one call behind, and its next call was reduced with
      // the peers' mismatched one, without an error. NCCL calls carry no signature: an empty one is NCCL's no-op.
      if (algorithm === 'nccl') return { algorithm, chunks: 0, ...(fallbackReason ? { fallbackReason } : {}) }
      if (!SIGNATURE_BLOCK)
        throw new LlcommError(
          'UNSUPPORTED_ALGORITHM',
          'an empty deviceAllReduce per process needs the signature block (it is its only launch); LLCOMM_SIG_BLOCK=0 is an A/B setting without it',
          { algorithm, count },
        )
      prepared = { kind: 'kernel', chunks: (this.launcher as AllReduceLauncher).prepareEmpty(kernelCall) }
      const info: AllReduceInfo = { algorithm, chunks: 0, ...(fallbackReason ? { fallbackReason } : {}) }
      this.claimStream(stream)
      this.claimStream(stream)
      this.issuePrepared(prepared, stream)
      return this.eagerCalls.remember(request, [stream], prepared, info).info
    }
    if (algorithm === 'nccl') {
      prepared = { kind: 'nccl', input, output, count, dtype }
    } else {
      const inputs: DevicePtr[] = new Array(this.size).fill(0)
      const outputs: DevicePtr[] = new Array(this.size).fill(0)
      inputs[this.rank] = input
      outputs[this.rank] = output
      const chunks = (this.launcher as AllReduceLauncher).prepare({ ...kernelCall, inputs, outputs, count })
      prepared = { kind: 'kernel', chunks }
    }
    const info: AllReduceInfo = {
      algorithm,
      chunks: prepared.kind === 'nccl' ? 1 : prepared.chunks.length,
      ...(fallbackReason ? { fallbackReason } : {}),
    }
    this.issuePrepared(prepared, stream)
    // Kept only once packed and issued without an error: the key then names a valid request.
    return this.eagerCalls.remember(request, [stream], prepared, info).info
  }

  /**
   * The fused AllReduce + residual add + RMSNorm of this rank on `stream` (the in-process deviceAllReduceRmsNorm's
   * kernels, plans and argument checks, with this rank's pointers): residual += allreduce(x); out =
   * rmsnorm(residual) * weight. No host synchronization (graph-capturable); read the device error word with
   * checkDeviceError() after the stream finished. Every rank must make the same call: each launch carries a
   * signature cluster (kernels/llcomm/fused_signature.cuh) that compares every rank's rows, hidden, dtype, eps, flags
   * and plan, so a rank that differs ends the call with MISMATCH on every rank. Refused (UNSUPPORTED_ALGORITHM) where
   * the ranks' devices differ in model, and under LLCOMM_SIG_BLOCK=0 (an A/B setting without the signature cluster).
   */
  deviceAllReduceRmsNorm(request: ProcessDeviceAllReduceRmsNormRequest): FusedDeviceInfo {
    this.assertFusedCallable()
    const cached = this.eagerNormCalls.find(request)
    if (cached) {
      this.claimOrRefuse(cached.streams[0], request.stream)
      cached.prepared.issue(cached.streams)
      return cached.info
    }
    const { input, residual, output, weight, stream: streamHandle, ...shape } = request
    const own = (v: unknown, what: string) => this.ownPointerList(v, what)
    let stream: CuStream
    let prepared: PreparedFusedCall
    try {
      stream = this.fusedStream(streamHandle)
      prepared = (this.fusedLauncher as FusedLauncher).prepareNorm(
        {
          ...shape,
          inputs: own(input, 'input'),
          residuals: own(residual, 'residual'),
          outputs: own(output, 'output'),
          weights: own(weight, 'weight'),
        },
        false,
      )
      this.claimStream(stream)
    } catch (e) {
      return this.refuseOnDevice(e, streamHandle)
    }
    prepared.issue([stream])
    const info = { algorithm: prepared.algorithm, launches: prepared.launches }
    return this.eagerNormCalls.remember(request, [stream], prepared, info).info
  }

  /**
   * Several AllReduces of different sizes on `stream`, usually in one launch (the in-process deviceAllReduceMany's
   * kernel, plans and argument checks, with this rank's pointer per buffer): outputs[b] = allreduce(inputs[b]) over
   * counts[b] elements, each bitwise equal to the in-process call's. No host synchronization (graph-capturable); read
   * the device error word with checkDeviceError() after the stream finished. Every rank must make the same call: each
   * launch carries a signature block (kernels/llcomm/fused_signature.cuh) that compares every rank's dtype, pieces
   * (buffer, offset, count) and plan, so a rank that differs ends the call with MISMATCH on every rank. Refused
   * (UNSUPPORTED_ALGORITHM) as deviceAllReduceRmsNorm is.
   */
  deviceAllReduceMany(request: ProcessDeviceAllReduceManyRequest): FusedDeviceInfo {
    this.assertFusedCallable()
    const cached = this.eagerManyCalls.find(request)
    if (cached) {
      this.claimOrRefuse(cached.streams[0], request.stream)
      cached.prepared.issue(cached.streams)
      return cached.info
    }
    const { inputs, outputs, counts, dtype, pdl, stream: streamHandle } = request
    let stream: CuStream
    let prepared: PreparedFusedCall
    try {
      if (!Array.isArray(inputs) || !Array.isArray(outputs) || !Array.isArray(counts))
        throw new LlcommError('INVALID_ARGUMENT', 'deviceAllReduceMany needs arrays inputs, outputs and counts')
      if (inputs.length !== counts.length || outputs.length !== counts.length)
        throw new LlcommError(
          'INVALID_ARGUMENT',
          `inputs (${inputs.length}), outputs (${outputs.length}) and counts (${counts.length}) need one entry per buffer`,
        )
      stream = this.fusedStream(streamHandle)
      prepared = (this.fusedLauncher as FusedLauncher).prepareMany({
        inputs: inputs.map((p, b) => this.ownPointerList(p, `inputs[${b}]`)),
        outputs: outputs.map((p, b) => this.ownPointerList(p, `outputs[${b}]`)),
        counts,
        dtype,
        pdl,
      })
      this.claimStream(stream)
    } catch (e) {
      return this.refuseOnDevice(e, streamHandle)
    }
    prepared.issue([stream])
    const info = { algorithm: prepared.algorithm, launches: prepared.launches }
    return this.eagerManyCalls.remember(request, [stream], prepared, info).info
  }

  /**
   * A call this rank refused (isCallRefusal: its arguments, checked before anything of it was issued) still takes a
   * signature epoch: one launch of the signature block alone with the refused signature (encodeRefusedSignature;
   * FusedLauncher.prepareSignatureOnly) on the call's stream (the communicator's if the handle itself is unusable),
   * so that peers who made the call fail with MISMATCH at that epoch instead of meeting this rank's next call (which
   * would hand them its data for theirs, without an error, where the signatures agreed). Where every rank refused,
   * the packets match and nothing fails. Then rethrows the refusal. Nothing is launched for other errors, on a
   * closed or failed communicator, or without the signature block (LLCOMM_SIG_BLOCK=0, an A/B setting).
   */
  private refuseOnDevice(e: unknown, streamHandle?: number | bigint): never {
    if (isCallRefusal(e) && this.state === 'open' && !this.broken && SIGNATURE_BLOCK && this.fusedLauncher) {
      let stream = this.stream as CuStream
      try {
        stream = this.fusedStream(streamHandle)
      } catch {
        // an unusable stream handle: the communicator's own stream
      }
      // Never beside this rank's previous call: on its stream while that is busy (BUSY's own refusal included).
      const last = this.lastStream
      if (last !== undefined && last !== stream && this.streamBusy(last)) stream = last
      this.lastStream = stream
      try {
        this.fusedLauncher.prepareSignatureOnly(encodeRefusedSignature()).issue([stream])
      } catch {
        // the launch failed (a device error): the refusal below is still this call's report
      }
    }
    throw e
  }

  /**
   * One epoch sequence per rank: this rank's launches must not run beside each other (two of them would read the
   * same signature and channel epochs). So, as the in-process communicator's claimStreams (docs/design.md §5): a call
   * on another stream than the previous call's fails with BUSY while that stream still has work (cuStreamQuery);
   * calls on the same stream, the usual case, cost no FFI call. Per process BUSY is a refusal on this rank alone, so
   * refuseOnDevice publishes the refused signature on the busy stream, after its work: the peers that made the call
   * fail with MISMATCH instead of meeting this rank's next call. A stream that cannot be queried (being captured
   * into a graph) is not second-guessed.
   */
  private claimStream(stream: CuStream): void {
    const last = this.lastStream
    if (last !== undefined && last !== stream && this.streamBusy(last))
      throw new LlcommError(
        'BUSY',
        `rank ${this.rank}: a call is still in flight on stream 0x${last.toString(16)}; order the streams (events) or use one stream per communicator`,
        { rank: this.rank },
      )
    this.lastStream = stream
  }

  /** claimStream for a cached call: its BUSY refused as any call's (refuseOnDevice). */
  private claimOrRefuse(stream: CuStream, streamHandle?: number | bigint): void {
    try {
      this.claimStream(stream)
    } catch (e) {
      this.refuseOnDevice(e, streamHandle)
    }
  }

  /** Whether `stream` still has work; false where it cannot be queried (e.g. while it is being captured). */
  private streamBusy(stream: CuStream): boolean {
    try {
      return !(this.driver as CudaDriver).streamQuery(stream)
    } catch {
      return false
    }
  }

  /** The per-process fused calls' common refusals: closed, or fusedRefusal (devices differ, no signature block). */
  private assertFusedCallable(): void {
    this.assertOpen()
    if (this.fusedRefusal)
      throw new LlcommError('UNSUPPORTED_ALGORITHM', `per-process fused calls: ${this.fusedRefusal}`)
  }

  /** This rank's pointer at its index of a per-rank list (the other entries are not read: one launch group). */
  private ownPointerList(v: unknown, what: string): DevicePtr[] {
    const list: DevicePtr[] = new Array(this.size).fill(0)
    list[this.rank] = devicePointer(v, what)
    return list
  }

  /** The caller's CUstream handle, or this communicator's stream (0 or omitted). */
  private fusedStream(handle: number | bigint | undefined): CuStream {
    return handle === undefined || handle === 0 ? (this.stream as CuStream) : asStream(handle)
  }

  /** One packed call on `stream`: its kernel chunks, or NCCL on the same pointers. */
  private issuePrepared(p: ProcessPreparedCall, stream: CuStream): void {
    if (p.kind === 'kernel') (this.launcher as AllReduceLauncher).issue(p.chunks, [stream])
    else (this.ncclLib as Nccl).allReduce(p.input, p.output, p.count, p.dtype, this.ncclCommunicator(), stream)
  }

  /**
   * Reads the device error word (after the stream finished): TIMEOUT naming rank, peer and epoch, MISMATCH naming
   * both ranks and signatures, or PEER_FAILED. A device TIMEOUT is first checked against the signature packets the
   * peers stored into this rank's scratch (timeout-signature.ts): one whose peer published another signature for
   * the failed launch is reported as MISMATCH, as the peer reports it. The first device failure is kept: later
   * calls report the same error (the error word is not cleared; a late peer's packet does not change the verdict).
   */
  checkDeviceError(): void {
    if (this.state !== 'open') return
    if (this.deviceFailure) throw this.deviceFailure
    const driver = this.driver as CudaDriver
    const words = copyErrorWord(driver, this.errorWord as DevicePtr)
    let e = errorFromWord(words)
    if (!e && this.signatureDeferred) {
      // The deferred build: this rank's last launch on each channel is checked by no kernel (latest-signature.ts).
      const m = checkLatestSignaturesOfRank(
        driver,
        this.scratch[this.rank] as DevicePtr,
        this.rank,
        this.size,
        this.latestChecked,
      )
      if (m) {
        this.broken = m
        this.deviceFailure = m
        throw m
      }
    }
    if (!e) return
    const w = decodeErrorWord(words)
    // Only this rank's blocks record into this word (one launch group of one rank): w.rank is this rank.
    // (the in-block check's builds only: with the signature block the device compared the packets itself)
    if (w.code === LLCOMM_ERR_TIMEOUT && w.rank === this.rank && !SIGNATURE_BLOCK) {
      const region = (this.scratch[this.rank] + LLCOMM_SCRATCH_SIGNATURE_OFFSET) as DevicePtr
      e = reclassifyTimeout(e, {
        timeout: w,
        nranks: this.size,
        slotMask: this.signatureDeferred ? DEFERRED_SIGNATURE_SLOT_MASK : 1,
        readRegion: () => {
          const copy = new Uint32Array(SIGNATURE_REGION_WORDS)
          driver.copyDtoH(copy, region)
          return copy
        },
      })
    }
    const peer = e.details.peer as number
    const dead = this.rv.deadPeer ?? (peer >= 0 && !processAlive(this.rv.pids[peer]) ? peer : undefined)
    this.broken =
      dead !== undefined
        ? new LlcommError('PEER_FAILED', `rank ${this.rank}: peer ${dead} died during the call (${e.message})`, {
            ...e.details,
            rank: this.rank,
            peer: dead,
          })
        : e
    this.deviceFailure = this.broken
    throw this.broken
  }

  /** Polls the stream (yielding to the event loop) until it is done; TIMEOUT past the kernels' own deadline. */
  private async waitForStream(limitMs: number, what: string): Promise<void> {
    const driver = this.driver as CudaDriver
    await this.waitUntil(limitMs, what, () => driver.streamQuery(this.stream as CuStream))
  }

  /** Polls `done` (yielding to the event loop) until it holds; TIMEOUT (the communicator failed) past `limitMs`. */
  private async waitUntil(limitMs: number, what: string, done: () => boolean): Promise<void> {
    const deadline = performance.now() + limitMs
    let spins = 0
    while (!done()) {
      if (performance.now() > deadline) {
        this.broken = new LlcommError('TIMEOUT', `rank ${this.rank}: ${what} did not finish within ${limitMs} ms`, {
          rank: this.rank,
          waitingFor: what,
        })
        throw this.broken
      }
      if (++spins > 200) await new Promise((resolve) => setImmediate(resolve))
    }
  }

  /** The host views' staging: a failed allocation (OUT_OF_MEMORY) refuses the call (refuseOnDevice). */
  private stagingOrRefuse(bytes: number): { input: DevicePtr; output: DevicePtr } {
    try {
      return this.stagingFor(bytes)
    } catch (e) {
      return this.refuseOnDevice(e)
    }
  }

  private stagingFor(bytes: number): { input: DevicePtr; output: DevicePtr } {
    const allocs = this.allocs as DeviceAllocations
    if (!this.staging || this.staging.bytes < bytes) {
      if (this.staging) {
        allocs.release(this.staging.input)
        allocs.release(this.staging.output)
      }
      const need = Math.max(bytes, 2 * (this.staging?.bytes ?? 4096))
      const ctx = (this.deviceSet as DeviceSet).groups[0].context
      this.staging = {
        bytes: need,
        input: allocs.alloc(ctx, need, 'stagingIn'),
        output: allocs.alloc(ctx, need, 'stagingOut'),
      }
    }
    return this.staging
  }

  /** Host arrays: copies in, runs on the communicator's stream, waits, checks the error word, copies out. */
  allReduce<T extends TensorArray>(input: T, options: AllReduceOptions = {}): Promise<RankAllReduceOutput<T>> {
    const run = this.queue.then(async () => {
      this.assertOpen()
      const dtype = options.dtype ?? 'f32'
      let count: number
      try {
        if (!DTYPES.includes(dtype))
          throw new LlcommError('UNSUPPORTED_DTYPE', `dtype ${String(dtype)} is not supported`)
        count = validateRankInput(input, dtype, this.rank)
      } catch (e) {
        return this.refuseOnDevice(e) // (deviceAllReduce refuses what it checks itself)
      }
      const bytes = count * DTYPE_BYTES[dtype]
      const output = (dtype === 'f32' ? new Float32Array(count) : new Uint16Array(count)) as T
      const driver = this.driver as CudaDriver
      // (an empty call too: deviceAllReduce launches its signature block alone, which every rank must take part in)
      const buf = this.stagingOrRefuse(Math.max(bytes, 16))
      if (bytes > 0) {
        driver.copyHtoD(buf.input, input, bytes)
        // A pageable copy returns once staged; finish its DMA before our non-blocking stream reads the input.
        driver.contextSynchronize()
      }
      const info = this.deviceAllReduce(hostViewRequest(options, buf.input, buf.output, count, dtype))
      await this.waitForStream(this.timeoutMs * 2 + 5000, 'the all-reduce')
      this.checkDeviceError()
      if (bytes > 0) driver.copyDtoH(output, buf.output, bytes)
      return Object.assign(output, { info })
    })
    this.queue = run.catch(() => undefined)
    return run
  }

  /**
   * Host arrays, several buffers as one call (the per-rank form of Communicator.allReduceMany): copies in, runs on
   * the communicator's stream, waits, checks the error word, copies out; one output per buffer. With algorithm
   * 'auto' and op 'sum' (the defaults) the buffers go through one deviceAllReduceMany (its launches carry the
   * group's signature; each result bit-identical to one oneshot-sentinel allReduce per buffer, as the in-process
   * host view); otherwise a launch of the group signature alone (FusedLauncher.prepareManyGroupSignature), then one
   * deviceAllReduce per buffer with the options. Either way a rank with another number of buffers or another count
   * fails with MISMATCH on every rank. Refused (UNSUPPORTED_ALGORITHM) where deviceAllReduceMany is.
   */
  allReduceMany<T extends TensorArray>(inputs: T[], options: AllReduceOptions = {}): Promise<RankAllReduceOutput<T>[]> {
    const run = this.queue.then(async () => {
      this.assertFusedCallable()
      const dtype = options.dtype ?? 'f32'
      let counts: number[]
      try {
        if (!Array.isArray(inputs) || inputs.length === 0)
          throw new LlcommError('INVALID_ARGUMENT', "allReduceMany needs a non-empty array of this rank's buffers")
        if (!DTYPES.includes(dtype))
          throw new LlcommError('UNSUPPORTED_DTYPE', `dtype ${String(dtype)} is not supported`)
        counts = inputs.map((input) => validateRankInput(input, dtype, this.rank))
      } catch (e) {
        return this.refuseOnDevice(e) // (the device calls below refuse what they check themselves)
      }
      const eb = DTYPE_BYTES[dtype]
      const offsets: number[] = []
      let total = 0
      for (const c of counts) {
        offsets.push(total)
        total += Math.max(256, Math.ceil((c * eb) / 256) * 256) // each buffer 256-byte aligned, an empty one too
      }
      const driver = this.driver as CudaDriver
      const buf = this.stagingOrRefuse(total)
      for (const [b, c] of counts.entries())
        if (c > 0) driver.copyHtoD((buf.input + offsets[b]) as DevicePtr, inputs[b], c * eb)
      // A pageable copy returns once staged; finish its DMA before our non-blocking stream reads the input.
      driver.contextSynchronize()
      const at = (base: DevicePtr, b: number) => (base + offsets[b]) as DevicePtr
      let infos: AllReduceInfo[]
      if ((options.algorithm ?? 'auto') === 'auto' && (options.op ?? 'sum') === 'sum') {
        const { launches } = this.deviceAllReduceMany({
          inputs: counts.map((_, b) => at(buf.input, b)),
          outputs: counts.map((_, b) => at(buf.output, b)),
          counts,
          dtype,
          pdl: options.pdl,
        })
        infos = counts.map(() => ({ algorithm: 'oneshot-sentinel', chunks: launches }))
      } else {
        this.claimOrRefuse(this.stream as CuStream)
        ;(this.fusedLauncher as FusedLauncher).prepareManyGroupSignature(counts, dtype).issue([this.stream as CuStream])
        infos = counts.map((count, b) =>
          this.deviceAllReduce(hostViewRequest(options, at(buf.input, b), at(buf.output, b), count, dtype)),
        )
      }
      await this.waitForStream(this.timeoutMs * 2 + 5000, 'the allReduceMany')
      this.checkDeviceError()
      return counts.map((c, b) => {
        const output = (dtype === 'f32' ? new Float32Array(c) : new Uint16Array(c)) as T
        if (c > 0) driver.copyDtoH(output, at(buf.output, b), c * eb)
        return Object.assign(output, { info: infos[b] })
      })
    })
    this.queue = run.catch(() => undefined)
    return run
  }

  /**
   * Recovery after a failed call (ProcessCommunicator.recover), queued behind this rank's host-view calls: this
   * rank's launches end first (the communicator's stream and, where the last call went on the caller's stream, the
   * whole context: a failed launch's waits end at their deadline or at the error word), then a rendezvous barrier, so
   * no rank's kernel still stores into a peer's buffers; then this rank's receive buffer, scratch (channel and
   * signature epochs, signature slots) and error word get their initial contents, as at creation; then a second
   * barrier, so no rank's next launch meets a peer's old state. Device views on the caller's streams must not be
   * issued until it resolves. NCCL's own communicator is not re-armed (an NCCL failure is NCCL's).
   */
  recover(): Promise<void> {
    const run = this.queue.then(async () => {
      if (this.state !== 'open') throw new LlcommError('CLOSED', 'the communicator is closed')
      const limitMs = 2 * this.timeoutMs + 5000
      await recoverProcessRank({
        rv: this.rv,
        rank: this.rank,
        backend: 'cuda',
        generation: ++this.recoveries,
        limitMs,
        drain: async () => {
          await this.waitForStream(limitMs, "recover: this rank's launches")
          const last = this.lastStream
          if (last !== undefined && last !== this.stream)
            await this.waitUntil(limitMs, "recover: the last call's stream", () => !this.streamBusy(last))
        },
        rearm: () => this.writeOwnInitialContents(),
      })
      this.broken = undefined
      this.deviceFailure = undefined
      this.latestChecked.fill(0)
      this.lastStream = undefined
    })
    this.queue = run.catch(() => undefined)
    return run
  }

  /** This rank's receive buffer, scratch and error word at their initial contents (creation and recover()). */
  private writeOwnInitialContents(): void {
    const driver = this.driver as CudaDriver
    const layout = deviceBufferLayout(this.size, this.bufferBytes)
    const recv = this.recvBuf[this.rank]
    const scratch = this.scratch[this.rank]
    driver.memsetD32(recv, 0, Math.ceil(layout.recvBufBytes / 4))
    driver.memsetD32(scratch, 0, Math.ceil(layout.scratchBytes / 4))
    for (const fill of layout.fills) {
      const base = fill.region === 'recv' ? recv : scratch
      driver.memsetD32((base + fill.offset) as DevicePtr, fill.word32, fill.bytes / 4)
    }
    driver.memsetD32(this.errorWord as DevicePtr, 0, LLCOMM_ERROR_WORD_BYTES / 4)
    // in memory before any peer writes these buffers again
    driver.contextSynchronize()
  }

  /** Drains, unmaps peers, a barrier (no rank frees what a peer still maps), frees, leaves. Idempotent. */
  close(): Promise<void> {
    if (!this.closing) {
      this.closing = (async () => {
        await this.queue
        if (this.state === 'closed') return
        this.state = 'closed'
        try {
          if (this.stream !== undefined) (this.driver as CudaDriver).streamSynchronize(this.stream)
          // A device call on the caller's stream may still run, reading and writing the peers' mapped buffers: the
          // whole context drains before they are unmapped.
          if (this.lastStream !== undefined && this.lastStream !== this.stream)
            (this.driver as CudaDriver).contextSynchronize()
        } catch {
          // a device error during the drain: still free everything below
        }
        this.closePeerMappings()
        try {
          await this.rv.barrier('llcomm/cuda/close', this.timeoutMs)
        } catch {
          // a dead or departed peer: it maps nothing of ours any more
        }
        this.releaseAll(true)
        await this.rv.close(this.timeoutMs)
      })()
    }
    return this.closing
  }

  /** Frees at once, without the close barrier. Idempotent. */
  async destroy(): Promise<void> {
    this.state = 'closed'
    this.releaseAll(true)
    this.rv.destroy()
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close()
  }

  private closePeerMappings(): void {
    while (this.opened.length > 0) {
      const p = this.opened.pop() as DevicePtr
      try {
        ;(this.ipc as CudaIpc).closeMemHandle(p)
      } catch {
        // keep going: one failure must not leak the rest
      }
    }
  }

  /** Frees everything this rank owns, in reverse order of creation; idempotent. */
  releaseAll(_drained: boolean): void {
    const attempt = (f: () => void): void => {
      try {
        f()
      } catch {
        // keep freeing
      }
    }
    this.state = 'closed'
    if (this.ncclComm !== undefined && this.ncclLib) {
      const c = this.ncclComm
      this.ncclComm = undefined
      attempt(() => (this.ncclLib as Nccl).commDestroy(c))
    }
    attempt(() => this.launcher?.disposeAll())
    this.launcher = undefined
    attempt(() => this.fusedLauncher?.disposeAll())
    this.fusedLauncher = undefined
    this.eagerCalls.clear()
    this.eagerNormCalls.clear()
    this.eagerManyCalls.clear()
    this.closePeerMappings()
    if (this.stream !== undefined) {
      const s = this.stream
      this.stream = undefined
      attempt(() => (this.driver as CudaDriver).streamDestroy(s))
    }
    attempt(() => this.allocs?.freeAll())
    attempt(() => this.modules?.unloadAll())
    attempt(() => this.deviceSet?.release())
    this.deviceSet = undefined
  }
}
