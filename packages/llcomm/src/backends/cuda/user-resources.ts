/**
 * Device memory and streams for programs without CUDA bindings of their own (CudaCommunicator.allocate, upload,
 * download, free, createStream, synchronize). Everything handed out here is owned by the communicator: close()
 * destroys the streams and frees the memory (releaseAll), in reverse order of creation, before the contexts go.
 *
 * Also the checks a device call makes on pointers it did not allocate (checkDevicePointer): the pointer's device
 * and the extent of its allocation, asked of the driver (cuPointerGetAttribute, cuMemGetAddressRange), so that a
 * buffer on the wrong GPU or too small for `count` fails typed before anything is launched.
 */
import { LlcommError } from '../../errors.js'
import type { CudaDriver, CuStream, DevicePtr } from '../../ffi/index.js'
import type { DeviceSet, LaunchGroup } from './devices.js'
import type { DeviceAllocations } from './memory.js'

/** What synchronize() waits for at most beyond the kernels' own deadline before it reports a TIMEOUT. */
const SYNCHRONIZE_MARGIN_MS = 5_000

export class UserDeviceResources {
  private readonly driver: CudaDriver
  private readonly deviceSet: DeviceSet
  private readonly allocations: DeviceAllocations
  /** Allocations handed out by allocate(): pointer → (rank's launch group, bytes asked for). */
  private readonly memory = new Map<DevicePtr, { group: LaunchGroup; bytes: number }>()
  /** Streams handed out by createStream(), in creation order, with their launch group. */
  private readonly streams = new Map<CuStream, LaunchGroup>()

  constructor(driver: CudaDriver, deviceSet: DeviceSet, allocations: DeviceAllocations) {
    this.driver = driver
    this.deviceSet = deviceSet
    this.allocations = allocations
  }

  private groupOfRank(rank: number, size: number): LaunchGroup {
    if (!Number.isInteger(rank) || rank < 0 || rank >= size) {
      throw new LlcommError('INVALID_ARGUMENT', `rank must be an integer in [0, ${size}), got ${String(rank)}`)
    }
    return this.deviceSet.groups[this.deviceSet.rankGroup[rank]]
  }

  allocate(rank: number, bytes: number, size: number): DevicePtr {
    const group = this.groupOfRank(rank, size)
    if (!Number.isSafeInteger(bytes) || bytes <= 0) {
      throw new LlcommError('INVALID_ARGUMENT', `bytes must be a positive integer, got ${String(bytes)}`)
    }
    // DeviceAllocations rounds up to 256 bytes: every pointer handed out is 256-byte aligned, more than the
    // 16 bytes the kernels need.
    const ptr = this.allocations.alloc(group.context, bytes, `user[${rank}]`)
    this.memory.set(ptr, { group, bytes })
    return ptr
  }

  free(ptr: DevicePtr): void {
    if (!this.memory.delete(ptr)) {
      throw new LlcommError('INVALID_ARGUMENT', `0x${Number(ptr).toString(16)} was not allocated by this communicator`)
    }
    this.allocations.release(ptr)
  }

  /** The group a stream runs on: ours from createStream, else the device of the current context's choice. */
  private useGroupOf(stream: CuStream | undefined, ptr: DevicePtr): void {
    const own = stream === undefined ? undefined : this.streams.get(stream)
    const group = own ?? this.memory.get(ptr)?.group ?? this.groupOfPointer(ptr)
    this.deviceSet.use(group)
  }

  private groupOfPointer(ptr: DevicePtr): LaunchGroup {
    const ordinal = this.driver.pointerDeviceOrdinal(ptr)
    const group = this.deviceSet.groups.find((g) => g.ordinal === ordinal)
    if (!group) {
      throw new LlcommError(
        'INVALID_ARGUMENT',
        `0x${Number(ptr).toString(16)} is on device ${ordinal}, which no rank uses`,
      )
    }
    return group
  }

  private checkCopy(ptr: DevicePtr, data: ArrayBufferView, what: string): void {
    if (!ArrayBuffer.isView(data)) throw new LlcommError('INVALID_ARGUMENT', `${what} needs a typed array or DataView`)
    const bytes = this.bytesFrom(ptr)
    if (data.byteLength > bytes) {
      throw new LlcommError(
        'INVALID_ARGUMENT',
        `${what} of ${data.byteLength} bytes does not fit the ${bytes} bytes at 0x${Number(ptr).toString(16)}`,
        { bytes: data.byteLength, capacity: bytes },
      )
    }
  }

  /** Bytes from `ptr` to the end of its allocation (ours from the table, another library's from the driver). */
  private bytesFrom(ptr: DevicePtr): number {
    const held = this.memory.get(ptr)
    if (held) return held.bytes
    const range = this.driver.addressRange(ptr)
    return range.bytes - (ptr - range.base)
  }

  /** Host → device. On a stream the copy is ordered there; the array may be reused as soon as this returns. */
  upload(ptr: DevicePtr, data: ArrayBufferView, stream?: CuStream): void {
    this.checkCopy(ptr, data, 'upload')
    this.useGroupOf(stream, ptr)
    if (stream === undefined) {
      this.driver.copyHtoD(ptr, data, data.byteLength)
      // A pageable cuMemcpyHtoD may return before the DMA lands; later work on non-blocking streams must see it.
      this.driver.contextSynchronize()
    } else this.driver.copyHtoDAsync(ptr, data, data.byteLength, stream)
  }

  /** Device → host; returns once the bytes are in `data` (after the stream's earlier work, when one is given). */
  download(ptr: DevicePtr, data: ArrayBufferView, stream?: CuStream): void {
    this.checkCopy(ptr, data, 'download')
    this.useGroupOf(stream, ptr)
    if (stream === undefined) this.driver.copyDtoH(data, ptr, data.byteLength)
    else this.driver.copyDtoHAsync(data, ptr, data.byteLength, stream)
  }

  createStream(rank: number, size: number): CuStream {
    const group = this.groupOfRank(rank, size)
    this.deviceSet.use(group)
    const stream = this.driver.streamCreate()
    this.streams.set(stream, group)
    return stream
  }

  /**
   * Waits until `stream` has finished, yielding to the event loop between polls; a stream that outlives the
   * kernels' own deadline (timeoutMs) by more than a margin is reported as TIMEOUT instead of waited on forever.
   */
  async synchronize(stream: CuStream, timeoutMs: number, marginMs = SYNCHRONIZE_MARGIN_MS): Promise<void> {
    const group = this.streams.get(stream)
    if (group) this.deviceSet.use(group)
    const deadline = performance.now() + timeoutMs + marginMs
    let polls = 0
    while (!this.driver.streamQuery(stream)) {
      if (performance.now() > deadline) {
        throw LlcommError.timeout({ rank: -1, peer: -1, epoch: -1, waitingFor: `stream 0x${stream.toString(16)}` })
      }
      if (++polls > 100) await new Promise((resolve) => setImmediate(resolve))
    }
  }

  /**
   * Checks a pointer a device call is given for rank `rank`: it must be on that rank's device and its allocation
   * must hold `bytes` from it. Costs two driver calls: prepared and cached eager calls make it once per shape.
   */
  checkDevicePointer(ptr: DevicePtr, rank: number, bytes: number, what: string): void {
    const group = this.deviceSet.groups[this.deviceSet.rankGroup[rank]]
    const held = this.memory.get(ptr)
    let ordinal: number
    let capacity: number
    if (held) {
      ordinal = held.group.ordinal
      capacity = held.bytes
    } else {
      try {
        ordinal = this.driver.pointerDeviceOrdinal(ptr)
        capacity = this.bytesFrom(ptr)
      } catch (e) {
        throw new LlcommError(
          'INVALID_ARGUMENT',
          `${what}[${rank}] = 0x${Number(ptr).toString(16)} is not device memory the driver knows`,
          { rank, what },
          { cause: e },
        )
      }
    }
    if (ordinal !== group.ordinal) {
      throw new LlcommError(
        'INVALID_ARGUMENT',
        `${what}[${rank}] = 0x${Number(ptr).toString(16)} is on device ${ordinal}, rank ${rank} is on device ${group.ordinal}`,
        { rank, what, device: ordinal, expected: group.ordinal },
      )
    }
    if (bytes > capacity) {
      throw new LlcommError(
        'INVALID_ARGUMENT',
        `${what}[${rank}]: the call needs ${bytes} bytes, its allocation holds ${capacity} from that pointer`,
        { rank, what, bytes, capacity },
      )
    }
  }

  /** Destroys the streams and frees the memory handed out (newest first); the rest of the teardown goes on. */
  releaseAll(): void {
    for (const [stream, group] of [...this.streams].reverse()) {
      try {
        this.deviceSet.use(group)
        this.driver.streamDestroy(stream)
      } catch {
        // keep releasing
      }
    }
    this.streams.clear()
    for (const ptr of [...this.memory.keys()].reverse()) {
      try {
        this.allocations.release(ptr)
      } catch {
        // keep releasing
      }
    }
    this.memory.clear()
  }
}
