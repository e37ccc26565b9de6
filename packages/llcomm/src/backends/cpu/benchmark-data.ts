/**
 * Inputs that every rank can reproduce (a seeded PRNG keyed by seed, iteration and rank), and the in-rank check
 * of an output against the float64 reference sum of all ranks' inputs. Used by `benchmark` inside the workers,
 * so a wrong element is counted where it happened, without shipping data to the driver.
 */
import type { AlgorithmName, BenchmarkResult, Dtype } from '../../api/types.js'
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

/** Largest element count whose float64 reference sums stay cached per input set (2 × 8 B per element). */
const CACHED_REFERENCE_MAX_COUNT = 1 << 16

/** Input sets a benchmark rotates through (as the cuda benchmark does): generated before the timed loop. */
export const BENCHMARK_INPUT_SETS = 4

/**
 * One rank's benchmark data: BENCHMARK_INPUT_SETS input sets generated before the timed loop, and the check of
 * every output. Nothing but a comparison runs between two timed calls: on a machine with fewer cores than ranks,
 * input generation or a float64 reference computed between calls would run while a peer is inside its collective
 * and be counted in that peer's time.
 *
 * The check of an output of set s: bitwise equal to the last output of set s that passed the float64 reference
 * check (a word compare), else the full reference check (sums of every rank's inputs). Sums are cached per set up
 * to CACHED_REFERENCE_MAX_COUNT elements. Above it, an output whose bits changed (atomic accumulation varies its sum
 * order between calls) is checked against recomputed sums only when the caller allows it (the first and last
 * iterations), so a large message does not put O(ranks x count) work between every two timed calls; the other
 * iterations then count as unchecked.
 */
export class RankBenchmarkData {
  readonly inputs: Int32Array[]
  private readonly verified: (Int32Array | undefined)[]
  private readonly references: ({ sums: Float64Array; sumsAbs: Float64Array } | undefined)[]

  constructor(
    private readonly dtype: Dtype,
    private readonly count: number,
    private readonly ranks: number,
    rank: number,
    private readonly seed: number,
  ) {
    const words = DTYPE_CODECS[dtype].lanesPerWord === 1 ? count : Math.ceil(count / 2)
    this.inputs = []
    for (let set = 0; set < BENCHMARK_INPUT_SETS; set++) {
      const input = new Int32Array(words)
      fillBenchmarkInput(input, dtype, count, seed, set, rank)
      this.inputs.push(input)
    }
    this.verified = new Array(BENCHMARK_INPUT_SETS).fill(undefined)
    this.references = new Array(BENCHMARK_INPUT_SETS).fill(undefined)
  }

  /** The input set of iteration `iteration`. */
  setOf(iteration: number): number {
    return iteration % BENCHMARK_INPUT_SETS
  }

  /**
   * Wrong elements of `output`, the result of a call on input set `set`, or undefined when it was not checked
   * (bits changed, sums not cached, and `mayRecompute` false).
   */
  countWrong(output: Int32Array, set: number, mayRecompute = true): number | undefined {
    const known = this.verified[set]
    if (known !== undefined && wordsEqual(known, output)) return 0
    if (known !== undefined && this.references[set] === undefined && !mayRecompute) return undefined
    const wrong = this.countWrongAgainstReference(output, set)
    if (wrong === 0) this.verified[set] = output.slice()
    return wrong
  }

  private countWrongAgainstReference(output: Int32Array, set: number): number {
    // Kept for later mismatches only while small (an algorithm with a varying sum order mismatches often).
    const ref = this.references[set] ?? referenceSums(this.dtype, this.count, this.ranks, this.seed, set)
    if (this.count <= CACHED_REFERENCE_MAX_COUNT) this.references[set] = ref
    const codec = DTYPE_CODECS[this.dtype]
    const lanes = codec.lanesPerWord
    let wrong = 0
    for (let i = 0; i < this.count; i++) {
      const w = output[lanes === 1 ? i : i >> 1]
      const got = codec.decodeLane(lanes === 1 ? w : (w >>> (16 * (i & 1))) & 0xffff)
      if (!isAcceptableSum(this.dtype, this.ranks, got, ref.sums[i], ref.sumsAbs[i])) wrong++
    }
    return wrong
  }
}

function wordsEqual(a: Int32Array, b: Int32Array): boolean {
  if (a.length !== b.length) return false
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false
  return true
}

/** float64 sums (and sums of magnitudes) of every rank's input at input set `set`, element by element. */
function referenceSums(
  dtype: Dtype,
  count: number,
  ranks: number,
  seed: number,
  set: number,
): { sums: Float64Array; sumsAbs: Float64Array } {
  const codec = DTYPE_CODECS[dtype]
  const sums = new Float64Array(count)
  const sumsAbs = new Float64Array(count)
  for (let r = 0; r < ranks; r++) {
    const stream = new BenchmarkInputStream(dtype, seed, set, r)
    for (let i = 0; i < count; i++) {
      const x = codec.decodeLane(stream.next())
      sums[i] += x
      sumsAbs[i] += Math.abs(x)
    }
  }
  return { sums, sumsAbs }
}

/** What one rank measured in a benchmark (RankRunner's timed loop): per iteration, its arrival and finish times. */
export interface RankBenchmarkTimes {
  arrivalsMs: ArrayLike<number>
  finishesMs: ArrayLike<number>
  wrong: number
}

/**
 * The benchmark result of a group from every rank's own times (the in-process pool and the bench's process group):
 * an iteration's collective time runs from the last rank's arrival to the last finish, and the wait for the last
 * arrival (the skew) is reported apart; back to back, the whole loop over the iterations.
 */
export function combineRankBenchmarks(
  perRank: readonly (RankBenchmarkTimes | undefined)[],
  iters: number,
  resolved: { algorithm: { name: AlgorithmName }; fallbackReason?: string },
): BenchmarkResult {
  const timesUs: number[] = []
  const skewWaitUs: number[] = []
  for (let it = 0; it < iters; it++) {
    let firstArrival = Number.POSITIVE_INFINITY
    let lastArrival = Number.NEGATIVE_INFINITY
    let lastFinish = Number.NEGATIVE_INFINITY
    for (const b of perRank) {
      if (!b) continue
      firstArrival = Math.min(firstArrival, b.arrivalsMs[it])
      lastArrival = Math.max(lastArrival, b.arrivalsMs[it])
      lastFinish = Math.max(lastFinish, b.finishesMs[it])
    }
    timesUs.push((lastFinish - lastArrival) * 1000)
    skewWaitUs.push((lastArrival - firstArrival) * 1000)
  }
  const wrong = perRank.reduce((sum, b) => sum + (b?.wrong ?? 0), 0)
  const result: BenchmarkResult = { algorithm: resolved.algorithm.name, timesUs, skewWaitUs, wrong }
  const ranks = perRank.filter((b): b is RankBenchmarkTimes => b !== undefined)
  if (iters > 0 && ranks.length > 0) {
    const loopStartMs = Math.min(...ranks.map((b) => b.arrivalsMs[0]))
    const loopEndMs = Math.max(...ranks.map((b) => b.finishesMs[iters - 1]))
    result.backToBackUs = ((loopEndMs - loopStartMs) * 1000) / iters
  }
  if (resolved.fallbackReason) result.fallbackReason = resolved.fallbackReason
  return result
}
