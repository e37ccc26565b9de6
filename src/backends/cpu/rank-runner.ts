/**
 * What runs inside one rank (a pool worker, or a user's worker through the per-rank view): the rank's protocol
 * state on the channel, the chunked all-reduce and the in-rank benchmark loop.
 */

import { CPU_ALGORITHMS, runChunked } from '../../algorithms/cpu/index.js'
import type { AlgorithmName, Dtype } from '../../api/types.js'
import { LlcommError } from '../../errors.js'
import { type ProtocolTestFaults, RankProtocol } from '../../protocol/cpu/rank-protocol.js'
import { benchmarkDelayUs, busyWaitUs, fillBenchmarkInput, ReferenceChecker } from './benchmark-data.js'

export interface RankChannelConfig {
  sab: SharedArrayBuffer
  ranks: number
  bufferBytes: number
  rank: number
  timeoutMs: number
  spinIterations: number
  /** Deliberately broken protocol variants, for the test that proves the ordering checks matter. */
  faults?: ProtocolTestFaults
}

export interface RankBenchmarkCommand {
  algorithm: AlgorithmName
  dtype: Dtype
  count: number
  iters: number
  warmup: number
  skewUs: number
  seed: number
  /** performance.timeOrigin of the driver, so that arrival times are comparable across workers. */
  driverTimeOriginMs: number
}

export interface RankBenchmarkResult {
  /** Per measured iteration, ms since the driver's time origin. */
  arrivalsMs: Float64Array
  finishesMs: Float64Array
  wrong: number
  checkedIterations: number
}

/** Every iteration is checked when count x ranks is at most this; otherwise the first and last three. */
const CHECK_ALL_ELEMENTS_MAX = 1 << 16

export class RankRunner {
  readonly protocol: RankProtocol

  constructor(config: RankChannelConfig) {
    this.protocol = new RankProtocol(
      config.sab,
      config.ranks,
      config.bufferBytes,
      config.rank,
      { timeoutMs: config.timeoutMs, spinIterations: config.spinIterations },
      config.faults,
    )
  }

  get rank(): number {
    return this.protocol.rank
  }

  /** One all-reduce of `input` words into `output` words; returns the chunk count. */
  allReduceWords(algorithm: AlgorithmName, dtype: Dtype, input: Int32Array, output: Int32Array): number {
    const impl = CPU_ALGORITHMS[algorithm]
    if (!impl) throw new LlcommError('UNSUPPORTED_ALGORITHM', `no cpu implementation of ${algorithm}`, { algorithm })
    this.protocol.useDtype(dtype)
    return runChunked(this.protocol, impl, input, output)
  }

  /**
   * `iters` (+ `warmup`) back-to-back calls. Per iteration: optional random busy-wait (0..skewUs), arrival
   * time, the collective, finish time; fresh inputs from the seeded PRNG; output checked against the float64
   * reference (every iteration for small messages, else the first and last three).
   */
  benchmark(cmd: RankBenchmarkCommand): RankBenchmarkResult {
    const words = cmd.dtype === 'f32' ? cmd.count : Math.ceil(cmd.count / 2)
    const input = new Int32Array(words)
    const output = new Int32Array(words)
    const checker = new ReferenceChecker(cmd.dtype, cmd.count, this.protocol.size)
    const originOffsetMs = performance.timeOrigin - cmd.driverTimeOriginMs
    const arrivalsMs = new Float64Array(cmd.iters)
    const finishesMs = new Float64Array(cmd.iters)
    const total = cmd.warmup + cmd.iters
    const checkAll = cmd.count * this.protocol.size <= CHECK_ALL_ELEMENTS_MAX
    let wrong = 0
    let checkedIterations = 0
    for (let it = 0; it < total; it++) {
      fillBenchmarkInput(input, cmd.dtype, cmd.count, cmd.seed, it, this.rank)
      busyWaitUs(benchmarkDelayUs(cmd.skewUs, cmd.seed, it, this.rank))
      const arrival = originOffsetMs + performance.now()
      this.allReduceWords(cmd.algorithm, cmd.dtype, input, output)
      const finish = originOffsetMs + performance.now()
      const measured = it - cmd.warmup
      if (measured >= 0) {
        arrivalsMs[measured] = arrival
        finishesMs[measured] = finish
      }
      if (checkAll || it < 3 || it >= total - 3) {
        wrong += checker.countWrong(output, cmd.seed, it)
        checkedIterations++
      }
    }
    return { arrivalsMs, finishesMs, wrong, checkedIterations }
  }

  reset(): void {
    this.protocol.reset()
  }
}
