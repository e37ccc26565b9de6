/**
 * Turns one AllReduce on device buffers into launches: the kernel variant, its launch shape, the co-residency
 * check, the packed parameter struct, chunking at maxCountPerCall, one cooperative launch per device per chunk.
 * Launch configs are built once per (kernel, device, shape, pdl) and reused (src/ffi/launch.ts).
 */

import type { AlgorithmName, Dtype, LlProtocol, ReduceOp } from '../../api/types.js'
import { DTYPE_BYTES } from '../../api/types.js'
import { LlcommError } from '../../errors.js'
import { CU_FUNC_ATTRIBUTE, type CudaDriver, type CuStream, type DevicePtr, PreparedLaunch } from '../../ffi/index.js'
import { signatureChunkBits } from '../../protocol/call-signature.js'
import { type AllReduceParamsHost, packAllReduceParams } from './abi.js'
import type { DeviceSet, LaunchGroup } from './devices.js'
import {
  type KernelBuildOptions,
  type KernelVariant,
  launchShape,
  launchVariant,
  SIGNATURE_BLOCK,
  selectKernel,
  type TwoshotAllGatherMode,
} from './kernel-table.js'
import type { KernelModules } from './modules.js'

/** The per-communicator device state every AllReduce launch points at. */
export interface CommunicatorDeviceState {
  nranks: number
  recvBuf: readonly DevicePtr[]
  scratch: readonly DevicePtr[]
  errorWord: DevicePtr
  timeoutNs: number
  /** The communicator's bufferBytes (launchShape() must see the same value as deviceBufferLayout()). */
  bufferBytes: number
  layout: AllReduceLayoutFields
  /** The kernel switches the modules were compiled with (communicator option `accumulation`); default abi.cuh's. */
  kernelBuild?: KernelBuildOptions
  /**
   * twoshot-sentinel's all-gather kernel choice ($LLCOMM_TWOSHOT_ALLGATHER, read when the communicator was created:
   * kernel-table.ts parseTwoshotAllGather); default 'auto'.
   */
  twoshotAllGather?: TwoshotAllGatherMode
}

/** The region fields of the params struct that come from deviceBufferLayout() (identical on every rank). */
export type AllReduceLayoutFields = Pick<AllReduceParamsHost, 'll' | 'sentinel' | 'll128' | 'plain'>

export interface KernelAllReduceCall {
  inputs: readonly DevicePtr[]
  outputs: readonly DevicePtr[]
  count: number
  dtype: Dtype
  op: ReduceOp
  algorithm: AlgorithmName
  protocol?: LlProtocol
  pdl: boolean
  /** One stream per launch group. */
  streams: readonly CuStream[]
  /**
   * Launch only these global ranks (each group's ranks filtered; a group left empty is not launched). For a rank
   * that makes its own call, such as the GPU test's mismatched calls (test/gpu/signature.test.ts). Default: all.
   */
  launchRanks?: readonly number[]
  /** Cooperative launch (default true). Two grids launched apart to run together (launchRanks) take false. */
  cooperative?: boolean
}

export interface PreparedChunk {
  launches: { group: LaunchGroup; launch: PreparedLaunch; params: Uint8Array }[]
}

export class AllReduceLauncher {
  private readonly driver: CudaDriver
  private readonly devices: DeviceSet
  private readonly modules: KernelModules
  private readonly state: CommunicatorDeviceState
  private readonly launches = new Map<string, PreparedLaunch>()

  constructor(driver: CudaDriver, devices: DeviceSet, modules: KernelModules, state: CommunicatorDeviceState) {
    this.driver = driver
    this.devices = devices
    this.modules = modules
    this.state = state
  }

  variant(algorithm: AlgorithmName, dtype: Dtype, op: ReduceOp, protocol?: LlProtocol): KernelVariant {
    return selectKernel(algorithm, dtype, op, protocol)
  }

  /** Launch config for one device, built on first use (with the occupancy check) and cached. */
  private launchFor(
    v: KernelVariant,
    group: LaunchGroup,
    blocksPerRank: number,
    threads: number,
    smem: number,
    pdl: boolean,
    cooperative = true,
  ): PreparedLaunch {
    const key = `${v.kernelName}|${group.index}|${group.ranks.length}|${blocksPerRank}|${threads}|${smem}|${pdl ? 1 : 0}|${cooperative ? 1 : 0}`
    let l = this.launches.get(key)
    if (l) return l
    const f = this.modules.function(group, v.sourceFile, v.kernelName)
    this.driver.setCurrent(group.context)
    if (smem > 48 * 1024) this.driver.setFunctionAttribute(f, CU_FUNC_ATTRIBUTE.MAX_DYNAMIC_SHARED_SIZE_BYTES, smem)
    // the launch's signature block after the data blocks (kernel-table.ts SIGNATURE_BLOCK)
    const grid = group.ranks.length * blocksPerRank + (SIGNATURE_BLOCK ? 1 : 0)
    const perSm = this.driver.occupancyMaxActiveBlocksPerSm(f, threads, smem)
    const fit = perSm * group.smCount
    if (grid > fit) {
      throw new LlcommError(
        'INVALID_ARGUMENT',
        `${v.kernelName}: ${group.ranks.length} ranks × ${blocksPerRank} blocks = ${grid} blocks on device ${group.ordinal} cannot all be ` +
          `co-resident (at most ${perSm} per SM × ${group.smCount} SMs = ${fit}); use fewer virtual ranks per device`,
        {
          kernel: v.kernelName,
          device: group.ordinal,
          ranksInLaunch: group.ranks.length,
          blocksPerRank,
          maxCoResidentBlocks: fit,
        },
      )
    }
    if (cooperative && !group.cooperativeLaunch) {
      throw new LlcommError('NO_DEVICE', `device ${group.ordinal} does not support cooperative launch`, {
        device: group.ordinal,
      })
    }
    l = new PreparedLaunch(
      this.driver,
      f,
      v.kernelName,
      { gridDimX: grid, blockDimX: threads, sharedBytes: smem },
      { cooperative, pdl },
      packAllReduceParams(this.emptyParams(group, blocksPerRank)).byteLength,
    )
    this.launches.set(key, l)
    return l
  }

  private emptyParams(group: LaunchGroup, blocksPerRank: number): AllReduceParamsHost {
    const zero: DevicePtr[] = new Array(this.state.nranks).fill(0)
    return this.params(group, blocksPerRank, zero, zero, blocksPerRank === 0 ? 0 : 1) // 0 blocks: an empty call's
  }

  private params(
    group: LaunchGroup,
    blocksPerRank: number,
    inputs: readonly DevicePtr[],
    outputs: readonly DevicePtr[],
    count: number,
    signatureChunk = 0,
  ): AllReduceParamsHost {
    const s = this.state
    return {
      input: inputs.map((p) => BigInt(p)),
      output: outputs.map((p) => BigInt(p)),
      recvBuf: s.recvBuf.map((p) => BigInt(p)),
      scratch: s.scratch.map((p) => BigInt(p)),
      errorWord: BigInt(s.errorWord),
      count: BigInt(count),
      timeoutNs: BigInt(Math.round(s.timeoutNs)),
      ll: s.layout.ll,
      sentinel: s.layout.sentinel,
      ll128: s.layout.ll128,
      plain: s.layout.plain,
      nranks: s.nranks,
      ranksInLaunch: group.ranks.length,
      blocksPerRank,
      signatureChunk,
      launchRanks: group.ranks,
    }
  }

  /**
   * Builds every launch of one call (chunks × devices) with its packed parameters, without issuing anything.
   * `issue()` of the result is then allocation-free: copy params, launch, per device per chunk.
   */
  prepare(call: KernelAllReduceCall): PreparedChunk[] {
    const { count, dtype } = call
    const v = this.variant(call.algorithm, dtype, call.op, call.protocol)
    const elemBytes = DTYPE_BYTES[dtype]
    // The chunking first: every launch's call signature carries its chunk index and the call's chunk count
    // (signature.ts), which every peer's kernel checks before it uses the launch's data.
    // Each launch's kernel: v, or for twoshot-sentinel its push or pull kernel (launchVariant: a function of the
    // launch's count and shape, so the same at every rank of a matched call; both kernels have v's capacity rule).
    const pieces: { n: number; shape: ReturnType<typeof launchShape>; kernel: KernelVariant }[] = []
    for (let done = 0; done < count; ) {
      const shape = launchShape(v, this.state.nranks, count - done, this.state.bufferBytes, this.state.kernelBuild)
      const n = Math.min(shape.maxCountPerCall, count - done)
      if (n <= 0)
        throw new LlcommError(
          'INVALID_ARGUMENT',
          `${v.kernelName}: launchShape gave maxCountPerCall ${shape.maxCountPerCall}`,
        )
      const kernel = launchVariant(v, this.state.nranks, n, shape.blocksPerRank, this.state.twoshotAllGather)
      pieces.push({ n, shape, kernel })
      done += n
    }
    const chunks: PreparedChunk[] = []
    let done = 0
    for (const [chunkIndex, { n, shape, kernel }] of pieces.entries()) {
      const signatureChunk = signatureChunkBits(chunkIndex, pieces.length)
      const offset = done * elemBytes
      if (done > 0 && offset % 16 !== 0) {
        throw new LlcommError(
          'MISALIGNED_BUFFER',
          `chunk boundary ${offset} bytes is not 16-byte aligned (maxCountPerCall ${shape.maxCountPerCall})`,
        )
      }
      const ins = call.inputs.map((p) => (p + offset) as DevicePtr)
      const outs = call.outputs.map((p) => (p + offset) as DevicePtr)
      const groups = call.launchRanks
        ? this.devices.groups
            .map((g) => ({ ...g, ranks: g.ranks.filter((r) => call.launchRanks?.includes(r)) }))
            .filter((g) => g.ranks.length > 0)
        : this.devices.groups
      const launches = groups.map((group) => {
        const launch = this.launchFor(
          kernel,
          group,
          shape.blocksPerRank,
          shape.threadsPerBlock,
          shape.sharedBytes,
          call.pdl,
          call.cooperative ?? true,
        )
        return {
          group,
          launch,
          params: new Uint8Array(
            packAllReduceParams(this.params(group, shape.blocksPerRank, ins, outs, n, signatureChunk)),
          ),
        }
      })
      chunks.push({ launches })
      done += n
    }
    return chunks
  }

  /**
   * An empty call (count 0) as one launch per group of the signature block alone: no data block (blocksPerRank 0,
   * so the grid is the signature block: kernels/llcomm/allreduce_common.cuh's guard sends every block there), the
   * call's signature with count 0 and chunk bits (0 of 0, as the CPU protocol's empty call). Per process, where each
   * rank makes its own call, an empty call still takes its signature epoch: a peer whose call is not empty then
   * compares packets of the same epoch (MISMATCH on both sides) instead of meeting this rank's next call, and
   * matched empty calls keep every rank's signature epoch in step. The channels' epochs and buffers are not touched
   * (the signature block has an epoch word of its own). Only in the signature-block build (SIGNATURE_BLOCK): the
   * in-block check's kernels have no block without data; the per-process caller refuses empty calls there.
   */
  prepareEmpty(call: Omit<KernelAllReduceCall, 'count' | 'inputs' | 'outputs'>): PreparedChunk[] {
    if (!SIGNATURE_BLOCK)
      throw new LlcommError('INTERNAL', 'an empty call launches the signature block alone: not in this build')
    const v = this.variant(call.algorithm, call.dtype, call.op, call.protocol)
    // The block's shape as a one-element call's (the signature block's code uses neither the dynamic shared memory
    // nor more threads than the launch's ranks x peers pairs need; the same shape keeps one kind of launch config).
    const shape = launchShape(v, this.state.nranks, 1, this.state.bufferBytes, this.state.kernelBuild)
    const none: DevicePtr[] = new Array(this.state.nranks).fill(0)
    const groups = call.launchRanks
      ? this.devices.groups
          .map((g) => ({ ...g, ranks: g.ranks.filter((r) => call.launchRanks?.includes(r)) }))
          .filter((g) => g.ranks.length > 0)
      : this.devices.groups
    const launches = groups.map((group) => ({
      group,
      launch: this.launchFor(v, group, 0, shape.threadsPerBlock, shape.sharedBytes, call.pdl, call.cooperative ?? true),
      params: new Uint8Array(packAllReduceParams(this.params(group, 0, none, none, 0, signatureChunkBits(0, 0)))),
    }))
    return [{ launches }]
  }

  /**
   * `issue(chunks, streams)` as one function. The usual call, one chunk in one launch on one device (every virtual
   * rank of a device in one launch), gets a function over that launch's own fields, without the loops over chunks and
   * launches: fewer objects touched per launch (docs/launch-overhead.md, "Fewer objects per launch").
   */
  issuer(chunks: readonly PreparedChunk[]): (streams: readonly CuStream[]) => void {
    if (chunks.length === 1 && chunks[0].launches.length === 1 && !this.devices.multiDevice) {
      const { group, launch, params } = chunks[0].launches[0]
      const index = group.index
      return (streams) => {
        launch.setParams(params)
        launch.launchOn(streams[index])
      }
    }
    return (streams) => this.issue(chunks, streams)
  }

  /** Issues prepared launches on the given streams (one per launch group). */
  issue(chunks: readonly PreparedChunk[], streams: readonly CuStream[]): void {
    const multi = this.devices.multiDevice
    for (const c of chunks) {
      for (const { group, launch, params } of c.launches) {
        if (multi) this.driver.setCurrent(group.context)
        launch.setParams(params)
        launch.launchOn(streams[group.index])
      }
    }
  }

  disposeAll(): void {
    for (const l of this.launches.values()) l.dispose()
    this.launches.clear()
  }
}
