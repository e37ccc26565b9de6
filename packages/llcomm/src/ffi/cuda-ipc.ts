/**
 * CUDA IPC through koffi, for one process per rank: a rank exports its receive buffer and scratch
 * (cuIpcGetMemHandle, a 64-byte CUipcMemHandle that travels through the rendezvous as base64), and every peer maps
 * them into its own address space (cuIpcOpenMemHandle_v2 with CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) and unmaps them
 * before the exporter frees them (cuIpcCloseMemHandle; the communicator's close barrier orders the two). A handle
 * of the exporting process itself cannot be opened (the driver refuses): a rank uses its own pointers.
 * Kept apart from cuda-driver.ts (same library, same error formatting) so that the per-process path adds code
 * without editing the in-process driver bindings.
 */
import koffi from 'koffi'
import { cudaDriver } from './cuda-driver.js'
import { LIBCUDA, loadLibrary } from './library.js'
import type { DevicePtr } from './types.js'

export const CU_IPC_HANDLE_BYTES = 64
/** cuIpcOpenMemHandle flag: enable peer access lazily (the only flag the driver defines). */
export const CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS = 1

const IpcHandleStruct = koffi.struct('llcomm_CUipcMemHandle', {
  reserved: koffi.array('uint8_t', CU_IPC_HANDLE_BYTES, 'Typed'),
})

export class CudaIpc {
  private readonly u64 = new BigUint64Array(1)
  private readonly _get: (out: Uint8Array, ptr: number) => number
  private readonly _open: (out: BigUint64Array, handle: { reserved: Uint8Array }, flags: number) => number
  private readonly _close: (ptr: number) => number

  constructor() {
    const { lib } = loadLibrary(LIBCUDA)
    this._get = lib.func('int cuIpcGetMemHandle(void *pHandle, uint64_t dptr)') as CudaIpc['_get']
    this._open = lib.func('cuIpcOpenMemHandle_v2', 'int', [
      'void *',
      IpcHandleStruct,
      'unsigned int',
    ]) as CudaIpc['_open']
    this._close = lib.func('int cuIpcCloseMemHandle(uint64_t dptr)') as CudaIpc['_close']
  }

  private check(call: string, rc: number): void {
    if (rc !== 0) throw cudaDriver().error(call, rc)
  }

  /** The handle of the allocation that starts at `ptr` (from cuMemAlloc in this process). */
  getMemHandle(ptr: DevicePtr): Uint8Array {
    const out = new Uint8Array(CU_IPC_HANDLE_BYTES)
    this.check('cuIpcGetMemHandle', this._get(out, ptr))
    return out
  }

  /** Maps a peer's allocation into this process (current context); close it with closeMemHandle. */
  openMemHandle(handle: Uint8Array): DevicePtr {
    if (handle.byteLength !== CU_IPC_HANDLE_BYTES) {
      throw cudaDriver().error('cuIpcOpenMemHandle', 1, { handleBytes: handle.byteLength })
    }
    this.check('cuIpcOpenMemHandle', this._open(this.u64, { reserved: handle }, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS))
    return Number(this.u64[0]) as DevicePtr
  }

  closeMemHandle(ptr: DevicePtr): void {
    this.check('cuIpcCloseMemHandle', this._close(ptr))
  }
}

let ipcSingleton: CudaIpc | undefined
export function cudaIpc(): CudaIpc {
  ipcSingleton ??= new CudaIpc()
  return ipcSingleton
}
