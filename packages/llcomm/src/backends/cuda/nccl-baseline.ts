/**
 * The NCCL baselines of the cuda backend: `nccl` (ncclCommInitAll over the distinct GPUs, one rank each, group
 * calls) and `nccl-symmetric` (buffers from ncclMemAlloc registered with ncclCommWindowRegister, NCCL >= 2.27).
 * NVLink multicast stays off: Nccl.commInitAll sets NCCL_NVLS_ENABLE=0 when unset; nothing here creates a
 * multicast object or issues multimem instructions.
 */
import type { Dtype } from '../../api/types.js'
import { LlcommError } from '../../errors.js'
import type { CudaDriver, CuStream, DevicePtr, Nccl, NcclComm, NcclWindow } from '../../ffi/index.js'
import type { DeviceSet } from './devices.js'

/** Why NCCL cannot serve this device list, or undefined when it can. */
export function ncclUnavailableReason(devices: readonly number[]): string | undefined {
  const distinct = new Set(devices)
  if (distinct.size !== devices.length) return 'NCCL needs one rank per GPU (virtual ranks repeat a device)'
  if (devices.length < 2) return 'the NCCL baselines need at least 2 distinct GPUs'
  return undefined
}

export class NcclBaseline {
  readonly comms: NcclComm[]
  private readonly nccl: Nccl
  private readonly driver: CudaDriver
  private readonly devices: DeviceSet
  private readonly windows: { comm: NcclComm; win: NcclWindow }[] = []
  private readonly symBuffers: { ptr: DevicePtr; group: number }[] = []
  private destroyed = false

  constructor(nccl: Nccl, driver: CudaDriver, devices: DeviceSet) {
    this.nccl = nccl
    this.driver = driver
    this.devices = devices
    // ncclCommInitAll makes each device's primary context current in turn; restore ours afterwards.
    this.comms = nccl.commInitAll(devices.groups.map((g) => g.ordinal))
    devices.use(devices.groups[0])
  }

  get symmetricSupported(): boolean {
    return this.nccl.hasSymmetricWindows
  }

  /** One ncclAllReduce per rank inside a group call (the single-thread clique needs the group). */
  allReduce(
    sends: readonly DevicePtr[],
    recvs: readonly DevicePtr[],
    count: number,
    dtype: Dtype,
    streams: readonly CuStream[],
  ): void {
    this.nccl.groupStart()
    try {
      for (const g of this.devices.groups) {
        const rank = g.ranks[0]
        this.driver.setCurrent(g.context)
        this.nccl.allReduce(sends[rank], recvs[rank], count, dtype, this.comms[g.index], streams[g.index])
      }
    } finally {
      this.nccl.groupEnd()
    }
  }

  /**
   * Per-rank buffers from ncclMemAlloc, registered as symmetric windows (collective: inside one group call).
   * Returned pointers are indexed by global rank; they stay owned by this object and are freed by destroy().
   */
  allocSymmetric(bytes: number): DevicePtr[] {
    if (!this.symmetricSupported) {
      throw new LlcommError('UNSUPPORTED_ALGORITHM', 'nccl-symmetric needs NCCL >= 2.27 with ncclCommWindowRegister')
    }
    const ptrs: DevicePtr[] = []
    for (const g of this.devices.groups) {
      this.driver.setCurrent(g.context)
      const p = this.nccl.memAlloc(bytes)
      this.symBuffers.push({ ptr: p, group: g.index })
      ptrs[g.ranks[0]] = p
    }
    this.nccl.groupStart()
    try {
      for (const g of this.devices.groups) {
        this.driver.setCurrent(g.context)
        const comm = this.comms[g.index]
        this.windows.push({ comm, win: this.nccl.windowRegister(comm, ptrs[g.ranks[0]], bytes) })
      }
    } finally {
      this.nccl.groupEnd()
    }
    return ptrs
  }

  /** Deregisters windows, frees NCCL memory, destroys the communicators, in reverse order; idempotent. */
  destroy(): void {
    if (this.destroyed) return
    this.destroyed = true
    let first: unknown
    const attempt = (f: () => void) => {
      try {
        f()
      } catch (e) {
        first ??= e
      }
    }
    if (this.windows.length > 0) {
      attempt(() => this.nccl.groupStart())
      for (const w of this.windows.splice(0).reverse()) attempt(() => this.nccl.windowDeregister(w.comm, w.win))
      attempt(() => this.nccl.groupEnd())
    }
    for (const b of this.symBuffers.splice(0).reverse()) {
      attempt(() => {
        this.driver.setCurrent(this.devices.groups[b.group].context)
        this.nccl.memFree(b.ptr)
      })
    }
    for (const c of [...this.comms].reverse()) attempt(() => this.nccl.commDestroy(c))
    if (first) throw first
  }
}
