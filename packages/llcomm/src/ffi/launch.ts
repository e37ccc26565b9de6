/**
 * A kernel launch built once and issued many times: the CUlaunchConfig, its attributes (cooperative, PDL) and
 * the kernel's one by-value parameter struct live in one NativeBlock, so `launch()` is a single FFI crossing
 * (cuLaunchKernelEx) with four numbers and no allocation. Issue 4 measures this path against C++.
 *
 * Native layout (x86-64, cuda.h):
 *   0   CUlaunchConfig { u32 gridDimX,Y,Z; u32 blockDimX,Y,Z; u32 sharedMemBytes; pad; CUstream hStream @32;
 *                        CUlaunchAttribute *attrs @40; u32 numAttrs @48 }  (56 bytes)
 *   56  CUlaunchAttribute[3] { u32 id; pad[4]; union value[64] }         (72 bytes each)
 *   272 void *kernelParams[1] = { &params }
 *   280 void *extra[5] = { BUFFER_POINTER, &params, BUFFER_SIZE, &paramBytes, END }
 *   320 size_t paramBytes
 *   336 params (the kernel's struct, as packed by abi.ts)
 */
import type { CudaDriver } from './cuda-driver.js'
import { NativeBlock } from './native-memory.js'
import type { CuFunction, CuStream } from './types.js'

export const CU_LAUNCH_ATTRIBUTE_COOPERATIVE = 2
export const CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION = 4
export const CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION = 6
const CU_LAUNCH_PARAM_END = 0
const CU_LAUNCH_PARAM_BUFFER_POINTER = 1
const CU_LAUNCH_PARAM_BUFFER_SIZE = 2

const CONFIG_OFFSET = 0
const ATTRS_OFFSET = 56
const ATTR_BYTES = 72
const KERNEL_PARAMS_OFFSET = 272
const EXTRA_OFFSET = 280
const PARAM_SIZE_OFFSET = 320
const PARAMS_OFFSET = 336

export interface LaunchShape {
  gridDimX: number
  blockDimX: number
  sharedBytes: number
}

export interface LaunchFlags {
  /** All blocks co-resident or the launch fails (CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE) instead of hanging. */
  cooperative: boolean
  /** Programmatic stream serialization: may start before the previous kernel in the stream ends (PDL). */
  pdl: boolean
  /**
   * Thread-block cluster size along x (sm_90+; CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION {x, 1, 1}); it must divide the
   * grid. Absent or 1: no cluster attribute (an implicit cluster of one block).
   */
  clusterDimX?: number
}

/**
 * How the parameter struct reaches the driver: `kernelParams` = { &params } (the struct is the kernel's only
 * parameter) or `extra` = CU_LAUNCH_PARAM_BUFFER_POINTER/SIZE. Both hand the driver the same bytes, which it
 * copies at launch (and a stream capture copies into the graph node), so the block may be rewritten after.
 */
export type ParamPassing = 'kernelParams' | 'extra'

export class PreparedLaunch {
  readonly paramBytes: number
  private readonly block: NativeBlock
  private readonly driver: CudaDriver
  private readonly fn: number
  private readonly kernelParamsArg: number
  private readonly extraArg: number
  // The launch path's inputs as own fields (the block's address, the driver's launch function): launch() then reads
  // this object only, not the NativeBlock and the driver too. Between two driver launches the driver's own work
  // evicts much of the core's cache, so every object the JS side touches per launch can cost a miss
  // (docs/launch-overhead.md, "Fewer objects per launch").
  private readonly address: number
  private readonly launchKernelEx: CudaDriver['cuLaunchKernelExRaw']
  private currentStream = -1
  private lastParams: Uint8Array | undefined
  readonly name: string

  constructor(
    driver: CudaDriver,
    fn: CuFunction,
    name: string,
    shape: LaunchShape,
    flags: LaunchFlags,
    paramBytes: number,
    passing: ParamPassing = 'kernelParams',
  ) {
    this.driver = driver
    this.fn = fn
    this.name = name
    this.paramBytes = paramBytes
    this.block = new NativeBlock(PARAMS_OFFSET + Math.max(paramBytes, 8))
    const v = this.block.view
    const base = this.block.address
    v.setUint32(CONFIG_OFFSET + 0, shape.gridDimX, true)
    v.setUint32(CONFIG_OFFSET + 4, 1, true)
    v.setUint32(CONFIG_OFFSET + 8, 1, true)
    v.setUint32(CONFIG_OFFSET + 12, shape.blockDimX, true)
    v.setUint32(CONFIG_OFFSET + 16, 1, true)
    v.setUint32(CONFIG_OFFSET + 20, 1, true)
    v.setUint32(CONFIG_OFFSET + 24, shape.sharedBytes, true)
    v.setBigUint64(CONFIG_OFFSET + 40, BigInt(base + ATTRS_OFFSET), true)
    this.setFlags(flags)
    v.setBigUint64(KERNEL_PARAMS_OFFSET, BigInt(base + PARAMS_OFFSET), true)
    v.setBigUint64(EXTRA_OFFSET + 0, BigInt(CU_LAUNCH_PARAM_BUFFER_POINTER), true)
    v.setBigUint64(EXTRA_OFFSET + 8, BigInt(base + PARAMS_OFFSET), true)
    v.setBigUint64(EXTRA_OFFSET + 16, BigInt(CU_LAUNCH_PARAM_BUFFER_SIZE), true)
    v.setBigUint64(EXTRA_OFFSET + 24, BigInt(base + PARAM_SIZE_OFFSET), true)
    v.setBigUint64(EXTRA_OFFSET + 32, BigInt(CU_LAUNCH_PARAM_END), true)
    v.setBigUint64(PARAM_SIZE_OFFSET, BigInt(paramBytes), true)
    this.kernelParamsArg = passing === 'kernelParams' ? base + KERNEL_PARAMS_OFFSET : 0
    this.extraArg = passing === 'extra' ? base + EXTRA_OFFSET : 0
    this.address = base
    this.launchKernelEx = driver.cuLaunchKernelExRaw
  }

  /** Rewrites the attribute list (cooperative first, then PDL, then the cluster dimension); cheap, no FFI. */
  setFlags(flags: LaunchFlags): void {
    const v = this.block.view
    let n = 0
    const put = (id: number, values: readonly number[]) => {
      const at = ATTRS_OFFSET + n * ATTR_BYTES
      this.block.u8.fill(0, at, at + ATTR_BYTES)
      v.setUint32(at, id, true)
      // value.cooperative / value.programmaticStreamSerializationAllowed (one int) or value.clusterDim {x, y, z}
      for (const [i, x] of values.entries()) v.setUint32(at + 8 + 4 * i, x, true)
      n++
    }
    if (flags.cooperative) put(CU_LAUNCH_ATTRIBUTE_COOPERATIVE, [1])
    if (flags.pdl) put(CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION, [1])
    const c = flags.clusterDimX ?? 1
    if (!Number.isInteger(c) || c < 1) throw new RangeError(`${this.name}: cluster size ${c}`)
    if (c > 1) put(CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, [c, 1, 1])
    v.setUint32(CONFIG_OFFSET + 48, n, true)
  }

  /** Address of the native CUlaunchConfig (for cuOccupancyMaxActiveClusters, which takes one). */
  get configAddress(): number {
    return this.block.address + CONFIG_OFFSET
  }

  /** Copies the packed parameter struct in (its length must equal paramBytes). */
  /**
   * Copies the packed parameter struct in (its length must equal paramBytes). Passing the same array as last
   * time skips the copy: packed parameter arrays are treated as immutable once handed over.
   */
  setParams(bytes: Uint8Array): void {
    if (bytes === this.lastParams) return
    if (bytes.byteLength !== this.paramBytes) {
      throw new RangeError(
        `${this.name}: parameter struct is ${bytes.byteLength} bytes, launch was built for ${this.paramBytes}`,
      )
    }
    this.block.u8.set(bytes, PARAMS_OFFSET)
    this.lastParams = bytes
  }

  /** The parameter bytes in native memory, for in-place updates of single fields. */
  get params(): DataView {
    this.lastParams = undefined // the caller may write fields in place
    return new DataView(this.block.u8.buffer, PARAMS_OFFSET, this.paramBytes)
  }

  setStream(stream: CuStream): void {
    if (stream === this.currentStream) return
    this.block.view.setBigUint64(CONFIG_OFFSET + 32, BigInt(stream), true)
    this.currentStream = stream
  }

  /** One cuLaunchKernelEx; throws CUDA_ERROR with the kernel's name on failure. */
  launch(): void {
    const rc = this.launchKernelEx(this.address, this.fn, this.kernelParamsArg, this.extraArg)
    if (rc !== 0) throw this.driver.error(`cuLaunchKernelEx(${this.name})`, rc, { kernel: this.name })
  }

  /** setStream + launch. */
  launchOn(stream: CuStream): void {
    this.setStream(stream)
    this.launch()
  }

  /** A copy of the native block and its address, for layout tests (no GPU needed). */
  snapshot(): { address: number; bytes: Uint8Array } {
    return { address: this.block.address, bytes: this.block.u8.slice() }
  }

  dispose(): void {
    this.block.free()
  }
}
