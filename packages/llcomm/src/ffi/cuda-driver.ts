/**
 * The CUDA driver API through koffi. Only what llcomm uses is bound. Every CUresult is checked: a non-zero
 * result becomes LlcommError('CUDA_ERROR') naming the call, the numeric code and the driver's name for it.
 *
 * Calling convention used throughout: handles and device pointers are declared as `uint64_t` (on x86-64 SysV a
 * pointer and a 64-bit integer travel in the same register) so that they cross as plain numbers, with no
 * wrapper objects; out-parameters are a reused BigUint64Array / Int32Array scratch passed as `void *`
 * (koffi hands the callee a pointer to the typed array's memory for the duration of the call).
 */
import { LlcommError } from '../errors.js'
import { LIBCUDA, loadLibrary } from './library.js'
import type {
  CuContext,
  CuDevice,
  CuEvent,
  CuFunction,
  CuGraph,
  CuGraphExec,
  CuModule,
  CuStream,
  DevicePtr,
} from './types.js'

/** CUdevice_attribute values used here (cuda.h). */
const CUDA_ERROR_OUT_OF_MEMORY = 2
/** CUpointer_attribute CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL (cuda.h). */
export const CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9
export const CU_DEVICE_ATTRIBUTE = {
  MAX_THREADS_PER_BLOCK: 1,
  MULTIPROCESSOR_COUNT: 16,
  COMPUTE_CAPABILITY_MAJOR: 75,
  COMPUTE_CAPABILITY_MINOR: 76,
  MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: 97,
  COOPERATIVE_LAUNCH: 95,
  PCI_BUS_ID: 33,
  PCI_DEVICE_ID: 34,
} as const

export const CU_FUNC_ATTRIBUTE = {
  MAX_THREADS_PER_BLOCK: 0,
  SHARED_SIZE_BYTES: 1,
  NUM_REGS: 4,
  MAX_DYNAMIC_SHARED_SIZE_BYTES: 8,
} as const

/** CUstreamCaptureMode: THREAD_LOCAL forbids unsafe calls from this thread only. */
export const CU_STREAM_CAPTURE_MODE_THREAD_LOCAL = 1
export const CU_STREAM_NON_BLOCKING = 1
export const CU_EVENT_DEFAULT = 0
export const CU_EVENT_DISABLE_TIMING = 2
/** cuCtxEnablePeerAccess returns this when access was already enabled: not an error for us. */
export const CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED = 704
export const CUDA_ERROR_NOT_READY = 600

function fn(lib: ReturnType<typeof loadLibrary>['lib'], proto: string): (...args: unknown[]) => number {
  return lib.func(proto) as (...args: unknown[]) => number
}

export class CudaDriver {
  readonly libraryPath: string
  // Scratch for out-parameters; reused, so a call allocates nothing on the JS heap.
  private readonly u64 = new BigUint64Array(1)
  private readonly i32 = new Int32Array(2)
  private readonly f32 = new Float32Array(1)

  private readonly _cuInit
  private readonly _cuDriverGetVersion
  private readonly _cuGetErrorName
  private readonly _cuGetErrorString
  private readonly _cuDeviceGetCount
  private readonly _cuDeviceGet
  private readonly _cuDeviceGetName
  private readonly _cuDeviceGetAttribute
  private readonly _cuDeviceCanAccessPeer
  private readonly _cuDevicePrimaryCtxRetain
  private readonly _cuDevicePrimaryCtxRelease
  private readonly _cuCtxSetCurrent
  private readonly _cuCtxSynchronize
  private readonly _cuCtxEnablePeerAccess
  private readonly _cuMemAlloc
  private readonly _cuMemFree
  private readonly _cuMemcpyHtoD
  private readonly _cuMemcpyDtoH
  private readonly _cuMemcpyDtoD
  private readonly _cuMemcpyDtoDAsync
  private readonly _cuMemsetD32
  private readonly _cuMemsetD32Async
  private readonly _cuMemcpyHtoDAsync
  private readonly _cuMemcpyDtoHAsync
  private readonly _cuPointerGetAttribute
  private readonly _cuMemGetAddressRange
  private readonly _cuMemGetInfo
  private readonly u64b = new BigUint64Array(1)
  private readonly _cuModuleLoadData
  private readonly _cuModuleUnload
  private readonly _cuModuleGetFunction
  private readonly _cuFuncGetAttribute
  private readonly _cuFuncSetAttribute
  private readonly _cuOccupancyMaxActiveBlocksPerMultiprocessor
  private readonly _cuOccupancyMaxActiveClusters
  private readonly _cuStreamCreate
  private readonly _cuStreamDestroy
  private readonly _cuStreamSynchronize
  private readonly _cuStreamQuery
  private readonly _cuStreamWaitEvent
  private readonly _cuStreamBeginCapture
  private readonly _cuStreamEndCapture
  private readonly _cuGraphInstantiateWithFlags
  private readonly _cuGraphLaunch
  private readonly _cuGraphExecDestroy
  private readonly _cuGraphDestroy
  private readonly _cuEventCreate
  private readonly _cuEventDestroy
  private readonly _cuEventRecord
  private readonly _cuEventSynchronize
  private readonly _cuEventElapsedTime
  /** Raw binding of cuLaunchKernelEx for the launch path (src/ffi/launch.ts): (config, f, kernelParams, extra). */
  readonly cuLaunchKernelExRaw: (config: number, f: number, kernelParams: number, extra: number) => number

  constructor() {
    const { lib, path } = loadLibrary(LIBCUDA)
    this.libraryPath = path
    const f = (p: string) => fn(lib, p)
    this._cuInit = f('int cuInit(unsigned int flags)')
    this._cuDriverGetVersion = f('int cuDriverGetVersion(void *version)')
    this._cuGetErrorName = lib.func('int cuGetErrorName(int error, _Out_ const char **pStr)') as (
      e: number,
      out: unknown[],
    ) => number
    this._cuGetErrorString = lib.func('int cuGetErrorString(int error, _Out_ const char **pStr)') as (
      e: number,
      out: unknown[],
    ) => number
    this._cuDeviceGetCount = f('int cuDeviceGetCount(void *count)')
    this._cuDeviceGet = f('int cuDeviceGet(void *device, int ordinal)')
    this._cuDeviceGetName = f('int cuDeviceGetName(void *name, int len, int dev)')
    this._cuDeviceGetAttribute = f('int cuDeviceGetAttribute(void *pi, int attrib, int dev)')
    this._cuDeviceCanAccessPeer = f('int cuDeviceCanAccessPeer(void *canAccess, int dev, int peerDev)')
    this._cuDevicePrimaryCtxRetain = f('int cuDevicePrimaryCtxRetain(void *pctx, int dev)')
    this._cuDevicePrimaryCtxRelease = f('int cuDevicePrimaryCtxRelease_v2(int dev)')
    this._cuCtxSetCurrent = f('int cuCtxSetCurrent(uint64_t ctx)')
    this._cuCtxSynchronize = f('int cuCtxSynchronize()')
    this._cuCtxEnablePeerAccess = f('int cuCtxEnablePeerAccess(uint64_t peerContext, unsigned int flags)')
    this._cuMemAlloc = f('int cuMemAlloc_v2(void *dptr, size_t bytesize)')
    this._cuMemFree = f('int cuMemFree_v2(uint64_t dptr)')
    this._cuMemGetInfo = f('int cuMemGetInfo_v2(void *free, void *total)')
    this._cuMemcpyHtoD = f('int cuMemcpyHtoD_v2(uint64_t dst, const void *src, size_t bytes)')
    this._cuMemcpyDtoH = f('int cuMemcpyDtoH_v2(void *dst, uint64_t src, size_t bytes)')
    this._cuMemcpyDtoD = f('int cuMemcpyDtoD_v2(uint64_t dst, uint64_t src, size_t bytes)')
    this._cuMemcpyDtoDAsync = f('int cuMemcpyDtoDAsync_v2(uint64_t dst, uint64_t src, size_t bytes, uint64_t stream)')
    this._cuMemsetD32 = f('int cuMemsetD32_v2(uint64_t dst, unsigned int value, size_t n)')
    this._cuMemsetD32Async = f('int cuMemsetD32Async(uint64_t dst, unsigned int value, size_t n, uint64_t stream)')
    this._cuMemcpyHtoDAsync = f(
      'int cuMemcpyHtoDAsync_v2(uint64_t dst, const void *src, size_t bytes, uint64_t stream)',
    )
    this._cuMemcpyDtoHAsync = f('int cuMemcpyDtoHAsync_v2(void *dst, uint64_t src, size_t bytes, uint64_t stream)')
    this._cuPointerGetAttribute = f('int cuPointerGetAttribute(void *data, int attribute, uint64_t ptr)')
    this._cuMemGetAddressRange = f('int cuMemGetAddressRange_v2(void *pbase, void *psize, uint64_t dptr)')
    this._cuModuleLoadData = f('int cuModuleLoadData(void *module, const void *image)')
    this._cuModuleUnload = f('int cuModuleUnload(uint64_t module)')
    this._cuModuleGetFunction = f('int cuModuleGetFunction(void *hfunc, uint64_t module, const char *name)')
    this._cuFuncGetAttribute = f('int cuFuncGetAttribute(void *pi, int attrib, uint64_t hfunc)')
    this._cuFuncSetAttribute = f('int cuFuncSetAttribute(uint64_t hfunc, int attrib, int value)')
    this._cuOccupancyMaxActiveClusters = f(
      'int cuOccupancyMaxActiveClusters(void *numClusters, uint64_t func, uint64_t config)',
    )
    this._cuOccupancyMaxActiveBlocksPerMultiprocessor = f(
      'int cuOccupancyMaxActiveBlocksPerMultiprocessor(void *numBlocks, uint64_t func, int blockSize, size_t dynamicSMemSize)',
    )
    this._cuStreamCreate = f('int cuStreamCreate(void *phStream, unsigned int flags)')
    this._cuStreamDestroy = f('int cuStreamDestroy_v2(uint64_t stream)')
    this._cuStreamSynchronize = f('int cuStreamSynchronize(uint64_t stream)')
    this._cuStreamQuery = f('int cuStreamQuery(uint64_t stream)')
    this._cuStreamWaitEvent = f('int cuStreamWaitEvent(uint64_t stream, uint64_t event, unsigned int flags)')
    this._cuStreamBeginCapture = f('int cuStreamBeginCapture_v2(uint64_t stream, int mode)')
    this._cuStreamEndCapture = f('int cuStreamEndCapture(uint64_t stream, void *phGraph)')
    this._cuGraphInstantiateWithFlags = f(
      'int cuGraphInstantiateWithFlags(void *phGraphExec, uint64_t graph, unsigned long long flags)',
    )
    this._cuGraphLaunch = f('int cuGraphLaunch(uint64_t exec, uint64_t stream)')
    this._cuGraphExecDestroy = f('int cuGraphExecDestroy(uint64_t exec)')
    this._cuGraphDestroy = f('int cuGraphDestroy(uint64_t graph)')
    this._cuEventCreate = f('int cuEventCreate(void *phEvent, unsigned int flags)')
    this._cuEventDestroy = f('int cuEventDestroy_v2(uint64_t event)')
    this._cuEventRecord = f('int cuEventRecord(uint64_t event, uint64_t stream)')
    this._cuEventSynchronize = f('int cuEventSynchronize(uint64_t event)')
    this._cuEventElapsedTime = bindElapsedTime(lib)
    this.cuLaunchKernelExRaw = fn(
      lib,
      'int cuLaunchKernelEx(uint64_t config, uint64_t f, uint64_t kernelParams, uint64_t extra)',
    ) as (config: number, f: number, kernelParams: number, extra: number) => number
    this.check('cuInit', this._cuInit(0))
  }

  /** Turns a CUresult into an exception (no-op for CUDA_SUCCESS). */
  check(call: string, rc: number): void {
    if (rc !== 0) throw this.error(call, rc)
  }

  error(call: string, rc: number, extra: Record<string, unknown> = {}): LlcommError {
    const name = this.errorName(rc)
    const text = this.errorString(rc)
    // CUDA_ERROR_OUT_OF_MEMORY (2) gets its own code: callers can free memory or shrink a request and retry.
    const code = rc === CUDA_ERROR_OUT_OF_MEMORY ? 'OUT_OF_MEMORY' : 'CUDA_ERROR'
    return new LlcommError(code, `${call} failed: ${name} (${rc}): ${text}`, { call, code: rc, name, ...extra })
  }

  errorName(rc: number): string {
    const out: unknown[] = [null]
    return this._cuGetErrorName(rc, out) === 0 && typeof out[0] === 'string' ? out[0] : `CUresult ${rc}`
  }

  errorString(rc: number): string {
    const out: unknown[] = [null]
    return this._cuGetErrorString(rc, out) === 0 && typeof out[0] === 'string' ? out[0] : 'unknown error'
  }

  private outU64(call: string, rc: number): number {
    this.check(call, rc)
    const v = this.u64[0]
    if (v > BigInt(Number.MAX_SAFE_INTEGER)) {
      throw new LlcommError(
        'CUDA_ERROR',
        `${call} returned a handle above 2^53 (${v}); llcomm keeps handles as numbers`,
        { call },
      )
    }
    return Number(v)
  }

  private outI32(call: string, rc: number): number {
    this.check(call, rc)
    return this.i32[0]
  }

  driverVersion(): number {
    return this.outI32('cuDriverGetVersion', this._cuDriverGetVersion(this.i32))
  }

  deviceCount(): number {
    return this.outI32('cuDeviceGetCount', this._cuDeviceGetCount(this.i32))
  }

  device(ordinal: number): CuDevice {
    return this.outI32('cuDeviceGet', this._cuDeviceGet(this.i32, ordinal)) as CuDevice
  }

  deviceName(dev: CuDevice): string {
    const buf = Buffer.alloc(256)
    this.check('cuDeviceGetName', this._cuDeviceGetName(buf, buf.length, dev))
    const end = buf.indexOf(0)
    return buf.toString('utf8', 0, end < 0 ? buf.length : end)
  }

  deviceAttribute(dev: CuDevice, attribute: number): number {
    return this.outI32('cuDeviceGetAttribute', this._cuDeviceGetAttribute(this.i32, attribute, dev))
  }

  canAccessPeer(dev: CuDevice, peer: CuDevice): boolean {
    return this.outI32('cuDeviceCanAccessPeer', this._cuDeviceCanAccessPeer(this.i32, dev, peer)) !== 0
  }

  primaryContextRetain(dev: CuDevice): CuContext {
    return this.outU64('cuDevicePrimaryCtxRetain', this._cuDevicePrimaryCtxRetain(this.u64, dev)) as CuContext
  }

  primaryContextRelease(dev: CuDevice): void {
    this.check('cuDevicePrimaryCtxRelease', this._cuDevicePrimaryCtxRelease(dev))
  }

  setCurrent(ctx: CuContext): void {
    this.check('cuCtxSetCurrent', this._cuCtxSetCurrent(ctx))
  }

  contextSynchronize(): void {
    this.check('cuCtxSynchronize', this._cuCtxSynchronize())
  }

  /** Lets the current context access `peer`'s memory. Already enabled is fine (idempotent). */
  enablePeerAccess(peer: CuContext): void {
    const rc = this._cuCtxEnablePeerAccess(peer, 0)
    if (rc !== 0 && rc !== CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED) this.check('cuCtxEnablePeerAccess', rc)
  }

  memAlloc(bytes: number): DevicePtr {
    return this.outU64('cuMemAlloc', this._cuMemAlloc(this.u64, bytes)) as DevicePtr
  }

  memFree(ptr: DevicePtr): void {
    this.check('cuMemFree', this._cuMemFree(ptr))
  }

  /** Free and total memory of the current context's device, in bytes. */
  memGetInfo(): { freeBytes: number; totalBytes: number } {
    this.check('cuMemGetInfo', this._cuMemGetInfo(this.u64, this.u64b))
    return { freeBytes: Number(this.u64[0]), totalBytes: Number(this.u64b[0]) }
  }

  /** Synchronous copy from host memory (a typed array or Buffer, read during the call only). */
  copyHtoD(dst: DevicePtr, src: ArrayBufferView, bytes: number = src.byteLength): void {
    this.check('cuMemcpyHtoD', this._cuMemcpyHtoD(dst, src, bytes))
  }

  copyDtoH(dst: ArrayBufferView, src: DevicePtr, bytes: number = dst.byteLength): void {
    this.check('cuMemcpyDtoH', this._cuMemcpyDtoH(dst, src, bytes))
  }

  copyDtoD(dst: DevicePtr, src: DevicePtr, bytes: number): void {
    this.check('cuMemcpyDtoD', this._cuMemcpyDtoD(dst, src, bytes))
  }

  copyDtoDAsync(dst: DevicePtr, src: DevicePtr, bytes: number, stream: CuStream): void {
    this.check('cuMemcpyDtoDAsync', this._cuMemcpyDtoDAsync(dst, src, bytes, stream))
  }

  /**
   * Copy from host memory on a stream. From pageable memory (every JS typed array) the call returns once the bytes
   * are staged, so the array may change right after; the copy into device memory is ordered on `stream`.
   */
  copyHtoDAsync(dst: DevicePtr, src: ArrayBufferView, bytes: number, stream: CuStream): void {
    this.check('cuMemcpyHtoDAsync', this._cuMemcpyHtoDAsync(dst, src, bytes, stream))
  }

  /** Copy to host memory on a stream. Into pageable memory the call returns only once the copy is complete. */
  copyDtoHAsync(dst: ArrayBufferView, src: DevicePtr, bytes: number, stream: CuStream): void {
    this.check('cuMemcpyDtoHAsync', this._cuMemcpyDtoHAsync(dst, src, bytes, stream))
  }

  /** The ordinal of the device whose memory `ptr` points into (CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL). */
  pointerDeviceOrdinal(ptr: DevicePtr): number {
    return this.outI32(
      'cuPointerGetAttribute',
      this._cuPointerGetAttribute(this.i32, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, ptr),
    )
  }

  /** The allocation that holds `ptr`: its base address and size in bytes (cuMemGetAddressRange). */
  addressRange(ptr: DevicePtr): { base: DevicePtr; bytes: number } {
    this.check('cuMemGetAddressRange', this._cuMemGetAddressRange(this.u64, this.u64b, ptr))
    return { base: Number(this.u64[0]) as DevicePtr, bytes: Number(this.u64b[0]) }
  }

  memsetD32(dst: DevicePtr, word32: number, count32: number): void {
    this.check('cuMemsetD32', this._cuMemsetD32(dst, word32 >>> 0, count32))
  }

  memsetD32Async(dst: DevicePtr, word32: number, count32: number, stream: CuStream): void {
    this.check('cuMemsetD32Async', this._cuMemsetD32Async(dst, word32 >>> 0, count32, stream))
  }

  moduleLoadData(image: Uint8Array): CuModule {
    return this.outU64('cuModuleLoadData', this._cuModuleLoadData(this.u64, image)) as CuModule
  }

  moduleUnload(mod: CuModule): void {
    this.check('cuModuleUnload', this._cuModuleUnload(mod))
  }

  moduleFunction(mod: CuModule, name: string): CuFunction {
    const rc = this._cuModuleGetFunction(this.u64, mod, name)
    if (rc !== 0) throw this.error(`cuModuleGetFunction(${name})`, rc, { kernel: name })
    return Number(this.u64[0]) as CuFunction
  }

  functionAttribute(f: CuFunction, attribute: number): number {
    return this.outI32('cuFuncGetAttribute', this._cuFuncGetAttribute(this.i32, attribute, f))
  }

  setFunctionAttribute(f: CuFunction, attribute: number, value: number): void {
    this.check('cuFuncSetAttribute', this._cuFuncSetAttribute(f, attribute, value))
  }

  occupancyMaxActiveBlocksPerSm(f: CuFunction, threadsPerBlock: number, dynamicSharedBytes: number): number {
    return this.outI32(
      'cuOccupancyMaxActiveBlocksPerMultiprocessor',
      this._cuOccupancyMaxActiveBlocksPerMultiprocessor(this.i32, f, threadsPerBlock, dynamicSharedBytes),
    )
  }

  /**
   * Most clusters of the launch described by the native CUlaunchConfig at `configAddress` (its block size, shared
   * memory and cluster-dimension attribute) that can be co-resident on the device (cuOccupancyMaxActiveClusters).
   */
  occupancyMaxActiveClusters(f: CuFunction, configAddress: number): number {
    return this.outI32('cuOccupancyMaxActiveClusters', this._cuOccupancyMaxActiveClusters(this.i32, f, configAddress))
  }

  streamCreate(flags = CU_STREAM_NON_BLOCKING): CuStream {
    return this.outU64('cuStreamCreate', this._cuStreamCreate(this.u64, flags)) as CuStream
  }

  streamDestroy(s: CuStream): void {
    this.check('cuStreamDestroy', this._cuStreamDestroy(s))
  }

  streamSynchronize(s: CuStream): void {
    this.check('cuStreamSynchronize', this._cuStreamSynchronize(s))
  }

  /** True when all work on the stream is done; false while it runs (CUDA_ERROR_NOT_READY). */
  streamQuery(s: CuStream): boolean {
    const rc = this._cuStreamQuery(s)
    if (rc === CUDA_ERROR_NOT_READY) return false
    this.check('cuStreamQuery', rc)
    return true
  }

  /** Work submitted to `s` after this waits for `e` (also joins `s` into a capture that recorded `e`). */
  streamWaitEvent(s: CuStream, e: CuEvent): void {
    this.check('cuStreamWaitEvent', this._cuStreamWaitEvent(s, e, 0))
  }

  beginCapture(s: CuStream): void {
    this.check('cuStreamBeginCapture', this._cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL))
  }

  endCapture(s: CuStream): CuGraph {
    return this.outU64('cuStreamEndCapture', this._cuStreamEndCapture(s, this.u64)) as CuGraph
  }

  graphInstantiate(g: CuGraph): CuGraphExec {
    return this.outU64('cuGraphInstantiateWithFlags', this._cuGraphInstantiateWithFlags(this.u64, g, 0)) as CuGraphExec
  }

  graphLaunch(exec: CuGraphExec, s: CuStream): void {
    this.check('cuGraphLaunch', this._cuGraphLaunch(exec, s))
  }

  graphExecDestroy(exec: CuGraphExec): void {
    this.check('cuGraphExecDestroy', this._cuGraphExecDestroy(exec))
  }

  graphDestroy(g: CuGraph): void {
    this.check('cuGraphDestroy', this._cuGraphDestroy(g))
  }

  eventCreate(flags = CU_EVENT_DEFAULT): CuEvent {
    return this.outU64('cuEventCreate', this._cuEventCreate(this.u64, flags)) as CuEvent
  }

  eventDestroy(e: CuEvent): void {
    this.check('cuEventDestroy', this._cuEventDestroy(e))
  }

  eventRecord(e: CuEvent, s: CuStream): void {
    this.check('cuEventRecord', this._cuEventRecord(e, s))
  }

  eventSynchronize(e: CuEvent): void {
    this.check('cuEventSynchronize', this._cuEventSynchronize(e))
  }

  /** Milliseconds between two recorded events (resolution about 0.5 µs). */
  eventElapsedMs(start: CuEvent, end: CuEvent): number {
    this.check('cuEventElapsedTime', this._cuEventElapsedTime(this.f32, start, end))
    return this.f32[0]
  }
}

/** CUDA 12.8 added cuEventElapsedTime_v2 (CUDA 13 headers map the name to it); older drivers have only v1. */
function bindElapsedTime(
  lib: ReturnType<typeof loadLibrary>['lib'],
): (out: Float32Array, a: number, b: number) => number {
  try {
    return lib.func('int cuEventElapsedTime_v2(void *ms, uint64_t start, uint64_t end)') as (
      o: Float32Array,
      a: number,
      b: number,
    ) => number
  } catch {
    return lib.func('int cuEventElapsedTime(void *ms, uint64_t start, uint64_t end)') as (
      o: Float32Array,
      a: number,
      b: number,
    ) => number
  }
}

let driverSingleton: CudaDriver | undefined

/** The process-wide driver binding (loads libcuda and calls cuInit on first use). */
export function cudaDriver(): CudaDriver {
  driverSingleton ??= new CudaDriver()
  return driverSingleton
}
