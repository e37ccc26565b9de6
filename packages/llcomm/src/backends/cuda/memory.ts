/**
 * Device allocations with one owner: every allocation is recorded with its context and freed in reverse order by
 * `freeAll()` (idempotent). Nothing is left to the garbage collector.
 */
import type { CuContext, CudaDriver, DevicePtr } from '../../ffi/index.js'

interface Allocation {
  ptr: DevicePtr
  bytes: number
  context: CuContext
  label: string
  free: (ptr: DevicePtr) => void
}

export class DeviceAllocations {
  private readonly driver: CudaDriver
  private readonly live: Allocation[] = []

  constructor(driver: CudaDriver) {
    this.driver = driver
  }

  /** Allocates on `context`'s device (made current); `bytes` rounded up to 256 so every buffer is 256-aligned. */
  alloc(context: CuContext, bytes: number, label: string): DevicePtr {
    this.driver.setCurrent(context)
    const rounded = Math.max(256, Math.ceil(bytes / 256) * 256)
    const ptr = this.driver.memAlloc(rounded)
    this.live.push({ ptr, bytes: rounded, context, label, free: (p) => this.driver.memFree(p) })
    return ptr
  }

  /** Records memory that another allocator produced (ncclMemAlloc) so it is freed in the same reverse order. */
  adopt(context: CuContext, ptr: DevicePtr, bytes: number, label: string, free: (ptr: DevicePtr) => void): void {
    this.live.push({ ptr, bytes, context, label, free })
  }

  /** Frees one allocation now (e.g. a staging buffer being grown). */
  release(ptr: DevicePtr): void {
    const i = this.live.findIndex((a) => a.ptr === ptr)
    if (i < 0) return
    const [a] = this.live.splice(i, 1)
    this.driver.setCurrent(a.context)
    a.free(a.ptr)
  }

  get totalBytes(): number {
    return this.live.reduce((s, a) => s + a.bytes, 0)
  }

  freeAll(): void {
    let first: unknown
    while (this.live.length > 0) {
      const a = this.live.pop() as Allocation
      try {
        this.driver.setCurrent(a.context)
        a.free(a.ptr)
      } catch (e) {
        first ??= e
      }
    }
    if (first) throw first
  }
}
