/**
 * Inputs that every rank can reproduce (a seeded PRNG keyed by seed, iteration and rank), and the in-rank check
 * of an output against the float64 reference sum of all ranks' inputs. Used by `benchmark` inside the workers,
 * so a wrong element is counted where it happened, without shipping data to the driver.
 */
import type { Dtype } from '../../api/types.js'
import { DTYPE_CODECS } from '../../dtype/codec.js'
import { isAcceptableSum } from '../../dtype/tolerance.js'

/** A small, fast, seedable generator (mulberry32). Same seed, same sequence, in every thread. */
export class SeededRandom {
  private state: number
  constructor(seed: number) {
    this.state = seed >>> 0
  }
  /** Uniform integer in [0, 2^32). */
  nextU32(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0
    let t = this.state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return (t ^ (t >>> 14)) >>> 0
  }
  /** Uniform in [0, 1). */
  next(): number {
    return this.nextU32() / 4294967296
  }
}

/** Mixes several integers into one 32-bit seed (for per-iteration, per-rank streams). */
export function mixSeed(...parts: number[]): number {
  let h = 0x811c9dc5
  for (const p of parts) {
    h = Math.imul(h ^ (p >>> 0), 0x01000193) >>> 0
    h = (h ^ (h >>> 13)) >>> 0
    h = Math.imul(h, 0x5bd1e995) >>> 0
  }
  return h >>> 0
}

/**
 * The input stream of one rank at one iteration: values uniform in [-1, 1), rounded to the dtype, in element
 * order. Sequential, so a checker can regenerate every rank's input block by block in O(ranks x block) memory.
 */
export class BenchmarkInputStream {
  private readonly rng: SeededRandom
  private readonly encode: (x: number) => number
  constructor(dtype: Dtype, seed: number, iteration: number, rank: number) {
    this.rng = new SeededRandom(mixSeed(seed, iteration, rank, 1))
    this.encode = DTYPE_CODECS[dtype].encodeLane
  }
  /** Lane bits of the next element. */
  next(): number {
    return this.encode(this.rng.next() * 2 - 1)
  }
}

/** Rank `rank`'s input words at iteration `iteration` (a padding lane of an odd 16-bit count is 0). */
export function fillBenchmarkInput(
  words: Int32Array,
  dtype: Dtype,
  count: number,
  seed: number,
  iteration: number,
  rank: number,
): void {
  const stream = new BenchmarkInputStream(dtype, seed, iteration, rank)
  if (DTYPE_CODECS[dtype].lanesPerWord === 1) {
    for (let i = 0; i < count; i++) words[i] = stream.next()
  } else {
    const wordCount = Math.ceil(count / 2)
    for (let w = 0; w < wordCount; w++) {
      const lo = stream.next()
      const hi = 2 * w + 1 < count ? stream.next() : 0
      words[w] = (hi << 16) | lo
    }
  }
}

/** Busy-wait delay of rank `rank` before iteration `iteration`, uniform in [0, skewUs). */
export function benchmarkDelayUs(skewUs: number, seed: number, iteration: number, rank: number): number {
  if (skewUs <= 0) return 0
  return new SeededRandom(mixSeed(seed, iteration, rank, 2)).next() * skewUs
}

export function busyWaitUs(us: number): void {
  if (us <= 0) return
  const end = performance.now() + us / 1000
  while (performance.now() < end) {
    // spin: a delay that keeps the core, like a late rank that is still computing
  }
}

/** Elements regenerated per block while checking: memory stays O(ranks x block) for any message size. */
const CHECK_BLOCK = 4096

/** Counts output elements outside the tolerance of the float64 reference (regenerating every rank's input). */
export class ReferenceChecker {
  private readonly sums = new Float64Array(CHECK_BLOCK)
  private readonly sumsAbs = new Float64Array(CHECK_BLOCK)

  constructor(
    private readonly dtype: Dtype,
    private readonly count: number,
    private readonly ranks: number,
  ) {}

  countWrong(output: Int32Array, seed: number, iteration: number): number {
    const codec = DTYPE_CODECS[this.dtype]
    const lanes = codec.lanesPerWord
    const streams = Array.from(
      { length: this.ranks },
      (_, r) => new BenchmarkInputStream(this.dtype, seed, iteration, r),
    )
    let wrong = 0
    for (let first = 0; first < this.count; first += CHECK_BLOCK) {
      const n = Math.min(CHECK_BLOCK, this.count - first)
      this.sums.fill(0)
      this.sumsAbs.fill(0)
      for (const stream of streams) {
        for (let k = 0; k < n; k++) {
          const x = codec.decodeLane(stream.next())
          this.sums[k] += x
          this.sumsAbs[k] += Math.abs(x)
        }
      }
      for (let k = 0; k < n; k++) {
        const i = first + k
        const w = output[lanes === 1 ? i : i >> 1]
        const got = codec.decodeLane(lanes === 1 ? w : (w >>> (16 * (i & 1))) & 0xffff)
        if (!isAcceptableSum(this.dtype, this.ranks, got, this.sums[k], this.sumsAbs[k])) wrong++
      }
    }
    return wrong
  }
}
