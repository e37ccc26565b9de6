/**
 * NCCL through koffi, for the `nccl` and `nccl-symmetric` baselines. Every ncclResult_t is checked and becomes
 * LlcommError('NCCL_ERROR') naming the call, the code, NCCL's string for it and, where there is a communicator,
 * ncclGetLastError's text. NVLink multicast (NVLS) is never used: NCCL_NVLS_ENABLE=0 is put in the environment
 * before the first communicator is created, when the user has not set it (a program that uses multicast can put
 * a shared host's GPUs out of service).
 */
import { LlcommError } from '../errors.js'
import { LIBNCCL, loadLibrary } from './library.js'
import type { CuStream, DevicePtr, NcclComm, NcclWindow } from './types.js'

export type NcclDataType = 'f32' | 'f16' | 'bf16'
/** ncclDataType_t values (nccl.h): ncclFloat16 = 6, ncclFloat32 = 7, ncclBfloat16 = 9. */
export const NCCL_DATA_TYPE: Readonly<Record<NcclDataType, number>> = { f16: 6, f32: 7, bf16: 9 }
/** ncclRedOp_t: ncclSum = 0. */
export const NCCL_SUM = 0
/** ncclCommWindowRegister flag: register for the symmetric kernels (NCCL >= 2.27). */
export const NCCL_WIN_COLL_SYMMETRIC = 0x01

export class Nccl {
  readonly libraryPath: string
  private readonly i32 = new Int32Array(1)
  private readonly u64 = new BigUint64Array(1)
  private readonly _getVersion
  private readonly _getErrorString
  private readonly _getLastError
  private readonly _commInitAll
  private readonly _commDestroy
  private readonly _commFinalize
  private readonly _allReduce
  private readonly _groupStart
  private readonly _groupEnd
  private readonly _memAlloc: ((...args: unknown[]) => number) | undefined
  private readonly _memFree: ((...args: unknown[]) => number) | undefined
  private readonly _windowRegister: ((...args: unknown[]) => number) | undefined
  private readonly _windowDeregister: ((...args: unknown[]) => number) | undefined

  constructor() {
    const { lib, path } = loadLibrary(LIBNCCL)
    this.libraryPath = path
    const f = (p: string) => lib.func(p) as (...args: unknown[]) => number
    const optional = (p: string) => {
      try {
        return f(p)
      } catch {
        return undefined // older NCCL: the symmetric baseline is then not offered
      }
    }
    this._getVersion = f('int ncclGetVersion(void *version)')
    this._getErrorString = lib.func('const char *ncclGetErrorString(int result)') as (r: number) => string
    this._getLastError = lib.func('const char *ncclGetLastError(uint64_t comm)') as (c: number) => string
    this._commInitAll = f('int ncclCommInitAll(void *comms, int ndev, const int *devlist)')
    this._commDestroy = f('int ncclCommDestroy(uint64_t comm)')
    this._commFinalize = f('int ncclCommFinalize(uint64_t comm)')
    this._allReduce = f(
      'int ncclAllReduce(uint64_t sendbuff, uint64_t recvbuff, size_t count, int datatype, int op, uint64_t comm, uint64_t stream)',
    )
    this._groupStart = f('int ncclGroupStart()')
    this._groupEnd = f('int ncclGroupEnd()')
    this._memAlloc = optional('int ncclMemAlloc(void *ptr, size_t size)')
    this._memFree = optional('int ncclMemFree(uint64_t ptr)')
    this._windowRegister = optional(
      'int ncclCommWindowRegister(uint64_t comm, uint64_t buff, size_t size, void *win, int winFlags)',
    )
    this._windowDeregister = optional('int ncclCommWindowDeregister(uint64_t comm, uint64_t win)')
  }

  private check(call: string, rc: number, comm?: NcclComm): void {
    if (rc === 0) return
    const name = this._getErrorString(rc) ?? `ncclResult ${rc}`
    let last = ''
    try {
      last = this._getLastError(comm ?? 0) ?? ''
    } catch {
      last = ''
    }
    throw new LlcommError('NCCL_ERROR', `${call} failed: ${name} (${rc})${last ? `: ${last}` : ''}`, {
      call,
      code: rc,
      name,
      lastError: last,
    })
  }

  /** NCCL_VERSION_CODE, e.g. 22703 for 2.27.3. */
  versionCode(): number {
    this.check('ncclGetVersion', this._getVersion(this.i32))
    return this.i32[0]
  }

  version(): { major: number; minor: number; patch: number; code: number } {
    const code = this.versionCode()
    // Since 2.9: code = major*10000 + minor*100 + patch.
    return { major: Math.floor(code / 10000), minor: Math.floor(code / 100) % 100, patch: code % 100, code }
  }

  /** True when ncclMemAlloc and ncclCommWindowRegister exist and the version is at least 2.27. */
  get hasSymmetricWindows(): boolean {
    return !!(this._memAlloc && this._windowRegister) && this.versionCode() >= 22700
  }

  /** One communicator per listed device, all in this process (a single-thread clique). */
  commInitAll(devices: number[]): NcclComm[] {
    if (process.env.NCCL_NVLS_ENABLE === undefined) process.env.NCCL_NVLS_ENABLE = '0'
    const comms = new BigUint64Array(devices.length)
    this.check('ncclCommInitAll', this._commInitAll(comms, devices.length, Int32Array.from(devices)))
    return Array.from(comms, (c) => Number(c) as NcclComm)
  }

  commDestroy(comm: NcclComm): void {
    this.check('ncclCommDestroy', this._commDestroy(comm), comm)
  }

  commFinalize(comm: NcclComm): void {
    this.check('ncclCommFinalize', this._commFinalize(comm), comm)
  }

  allReduce(
    send: DevicePtr,
    recv: DevicePtr,
    count: number,
    dtype: NcclDataType,
    comm: NcclComm,
    stream: CuStream,
  ): void {
    this.check('ncclAllReduce', this._allReduce(send, recv, count, NCCL_DATA_TYPE[dtype], NCCL_SUM, comm, stream), comm)
  }

  groupStart(): void {
    this.check('ncclGroupStart', this._groupStart())
  }

  groupEnd(): void {
    this.check('ncclGroupEnd', this._groupEnd())
  }

  /** Memory from NCCL's allocator (needed for symmetric windows); the current context's device. */
  memAlloc(bytes: number): DevicePtr {
    if (!this._memAlloc)
      throw new LlcommError('NCCL_ERROR', 'ncclMemAlloc is not in this libnccl', { call: 'ncclMemAlloc' })
    this.check('ncclMemAlloc', this._memAlloc(this.u64, bytes))
    return Number(this.u64[0]) as DevicePtr
  }

  memFree(ptr: DevicePtr): void {
    if (!this._memFree) return
    this.check('ncclMemFree', this._memFree(ptr))
  }

  /** Registers a buffer for NCCL's symmetric kernels; collective over the clique (call inside a group). */
  windowRegister(comm: NcclComm, ptr: DevicePtr, bytes: number): NcclWindow {
    if (!this._windowRegister) {
      throw new LlcommError('NCCL_ERROR', 'ncclCommWindowRegister is not in this libnccl', {
        call: 'ncclCommWindowRegister',
      })
    }
    const out = new BigUint64Array(1)
    this.check('ncclCommWindowRegister', this._windowRegister(comm, ptr, bytes, out, NCCL_WIN_COLL_SYMMETRIC), comm)
    return Number(out[0]) as NcclWindow
  }

  windowDeregister(comm: NcclComm, win: NcclWindow): void {
    if (!this._windowDeregister) return
    this.check('ncclCommWindowDeregister', this._windowDeregister(comm, win), comm)
  }
}

let ncclSingleton: Nccl | undefined
export function nccl(): Nccl {
  ncclSingleton ??= new Nccl()
  return ncclSingleton
}
