/**
 * Host memory that never moves, for structures that hold pointers to each other (a launch config pointing at
 * its attribute array and its parameter buffer). JS-heap buffers cannot be used for that: koffi passes them
 * as transient pointers valid only during one call. Owned explicitly: `free()` releases it, idempotently.
 */
import koffi from 'koffi'

export class NativeBlock {
  readonly bytes: number
  /** Address of the first byte, as a number (user-space addresses are far below 2^53). */
  readonly address: number
  /** Little-endian view for writing fields. */
  readonly view: DataView
  readonly u8: Uint8Array
  private pointer: unknown

  constructor(bytes: number) {
    this.bytes = bytes
    this.pointer = koffi.alloc('uint8_t', bytes)
    this.address = Number(koffi.address(this.pointer))
    const ab = koffi.view(this.pointer, bytes)
    this.view = new DataView(ab)
    this.u8 = new Uint8Array(ab)
    this.u8.fill(0)
  }

  get freed(): boolean {
    return this.pointer === null
  }

  free(): void {
    if (this.pointer === null) return
    koffi.free(this.pointer)
    this.pointer = null
  }
}
