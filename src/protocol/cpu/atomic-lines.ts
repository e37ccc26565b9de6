/**
 * LL128-style atomic lines: 32 int32 words per line, word 0 a counter, words 1..31 f32 accumulators (f16/bf16
 * accumulate in f32 lines too). Every rank atomically adds its contribution into the owner's line (f32 add by
 * compare-and-swap on the bits) and then bumps the counter; the line is complete when the counter reaches N.
 * The counter is the synchronization: no barrier. Halves alternate by epoch parity like the other buffers.
 *
 * Data words are armed with -0 (0x80000000), the identity of IEEE addition: -0 + x = x for every x, including
 * x = -0, so a line of all -0 contributions reduces to -0 as the float64 reference does.
 */
import { f32FromBits, f32ToBits } from '../../dtype/f32.js'
import { LINE_PAYLOAD_WORDS, LINE_WORDS, regionBase } from './layout.js'
import type { RankControl } from './wait.js'

export const LINE_IDENTITY_WORD = 0x80000000 | 0

/** One-element views for f32 <-> bits inside the CAS loop (per thread: each worker has its own module). */
const casF32 = new Float32Array(2)
const casI32 = new Int32Array(casF32.buffer)

export class AtomicLines {
  private readonly i32: Int32Array
  private readonly control: RankControl
  private readonly halfStride: number
  private readonly regionIndex: number[]
  readonly linesPerHalf: number

  constructor(sab: SharedArrayBuffer, control: RankControl) {
    const layout = control.layout
    this.i32 = new Int32Array(sab)
    this.control = control
    this.linesPerHalf = layout.linesPerHalf
    this.halfStride = layout.linesPerHalf * LINE_WORDS
    this.regionIndex = []
    for (let r = 0; r < layout.ranks; r++) this.regionIndex.push((regionBase(layout, r) + layout.linesOffset) / 4)
  }

  private lineIndex(owner: number, line: number): number {
    return this.regionIndex[owner] + (this.control.epoch & 1) * this.halfStride + line * LINE_WORDS
  }

  /** Atomically add the f32 value `x` into data word `lane` (0..30) of `owner`'s line. */
  atomicAdd(owner: number, line: number, lane: number, x: number): void {
    const index = this.lineIndex(owner, line) + 1 + lane
    // CAS loop on the bits: an add that lost the race retries on the value that won, so no contribution is lost.
    let old = Atomics.load(this.i32, index)
    for (;;) {
      const sum = f32ToBits(Math.fround(f32FromBits(old) + x)) | 0
      const seen = Atomics.compareExchange(this.i32, index, old, sum)
      if (seen === old) return
      old = seen
    }
  }

  /**
   * Count our contribution to a line. The counter add is SC and follows our data adds in program order, so an
   * owner that reads counter == N also reads every rank's data.
   */
  arrive(owner: number, line: number): void {
    Atomics.add(this.i32, this.lineIndex(owner, line), 1)
    this.control.markWritten(owner)
  }

  /**
   * Adds values[0..count) into `owner`'s lines in order (value k into line floor(k/31), data word k%31), each by
   * the same CAS loop as atomicAdd, then arrives at every line used. Per line, all data adds precede the
   * counter add in program order (see arrive), which is all the owner relies on.
   */
  addRangeAndArrive(owner: number, values: Float32Array, count: number): void {
    const i32 = this.i32
    const first = this.lineIndex(owner, 0)
    const lines = Math.ceil(count / LINE_PAYLOAD_WORDS)
    for (let l = 0; l < lines; l++) {
      const line = first + l * LINE_WORDS
      const from = l * LINE_PAYLOAD_WORDS
      const to = Math.min(count, from + LINE_PAYLOAD_WORDS)
      for (let k = from; k < to; k++) {
        const index = line + 1 + k - from
        const x = values[k]
        // CAS loop on the bits: an add that lost the race retries on the value that won. casF32[1] = a + x
        // rounds as Math.fround (a NaN result is any NaN: the owner's encode canonicalizes it).
        let old = Atomics.load(i32, index)
        for (;;) {
          casI32[0] = old
          casF32[1] = casF32[0] + x
          const seen = Atomics.compareExchange(i32, index, old, casI32[1])
          if (seen === old) break
          old = seen
        }
      }
      // Counter after the data adds of this line (SC): an owner that reads N also reads every rank's data.
      Atomics.add(i32, line, 1)
    }
    if (lines > 0) this.control.markWritten(owner)
  }

  /** Data words [0, count) of our own (complete) line as f32 values into dst[offset..]. */
  readLine(line: number, dst: Float32Array, offset: number, count: number): void {
    const index = this.lineIndex(this.control.rank, line) + 1
    for (let k = 0; k < count; k++) {
      casI32[0] = Atomics.load(this.i32, index + k)
      dst[offset + k] = casF32[0]
    }
  }

  /** Ring the doorbells of owners whose counters we bumped. */
  flush(): void {
    this.control.ringDoorbells()
  }

  /** Wait (bounded) until every rank has arrived at our own line. */
  waitComplete(line: number): void {
    const index = this.lineIndex(this.control.rank, line)
    const target = this.control.size
    if (Atomics.load(this.i32, index) === target) return
    let seen = 0
    this.control.waitUntil(
      () => {
        seen = Atomics.load(this.i32, index)
        return seen === target
      },
      -1,
      () => `ll128 line ${line} counter ${seen}/${target}`,
    )
  }

  /** Data word `lane` of our own (complete) line, as an f32 value. */
  read(line: number, lane: number): number {
    return f32FromBits(Atomics.load(this.i32, this.lineIndex(this.control.rank, line) + 1 + lane))
  }

  /**
   * Re-arm our own line after reading it: data words back to -0, then the counter to 0. Peers add into this line
   * again only at a later epoch, after they have received this epoch's reduced data from us, which we send after
   * this re-arm in program order (SC atomics: the re-arm precedes their adds in the total order).
   */
  rearm(line: number, lanes: number): void {
    const index = this.lineIndex(this.control.rank, line)
    for (let k = 1; k <= lanes; k++) Atomics.store(this.i32, index + k, LINE_IDENTITY_WORD)
    Atomics.store(this.i32, index, 0)
  }

  reset(): void {
    const first = this.regionIndex[this.control.rank]
    for (let h = 0; h < 2; h++) {
      for (let l = 0; l < this.linesPerHalf; l++) {
        const index = first + h * this.halfStride + l * LINE_WORDS
        this.i32[index] = 0
        this.i32.fill(LINE_IDENTITY_WORD, index + 1, index + LINE_WORDS)
      }
    }
  }
}

export { LINE_PAYLOAD_WORDS }
