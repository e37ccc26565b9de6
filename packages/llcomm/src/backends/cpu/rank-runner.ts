/**
 * What runs inside one rank (a pool worker, or a user's worker through the per-rank view): the rank's protocol
 * state on the channel, the chunked all-reduce and the in-rank benchmark loop.
 */

import { CPU_ALGORITHMS, runChunked, runSignatureEpoch } from '../../algorithms/cpu/index.js'
import type { AlgorithmName, Dtype, LlProtocol } from '../../api/types.js'
import { LlcommError } from '../../errors.js'
import type { ChannelMemory } from '../../protocol/cpu/layout.js'
import { POISON_KIND } from '../../protocol/cpu/layout.js'
import { type ProtocolTestFaults, RankProtocol } from '../../protocol/cpu/rank-protocol.js'
import type { DoorbellWaiter } from '../../protocol/cpu/wait.js'
import { benchmarkDelayUs, busyWaitUs, RankBenchmarkData } from './benchmark-data.js'

export interface RankChannelConfig {
  sab: ChannelMemory
  ranks: number
  bufferBytes: number
  rank: number
  timeoutMs: number
  spinIterations: number
  /** Deliberately broken protocol variants, for the test that proves the ordering checks matter. */
  faults?: ProtocolTestFaults
  /** One process per rank (process-communicator.ts): futex waits and peer liveness (WaitOptions). */
  doorbell?: DoorbellWaiter
  peerAlive?: (peer: number) => boolean
}

export interface RankBenchmarkCommand {
  algorithm: AlgorithmName
  dtype: Dtype
  count: number
  iters: number
  warmup: number
  skewUs: number
  /** Fixed busy-wait before every call on every rank (BenchmarkRequest.computeUs). */
  computeUs: number
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

export class RankRunner {
  readonly protocol: RankProtocol

  constructor(config: RankChannelConfig) {
    this.protocol = new RankProtocol(
      config.sab,
      config.ranks,
      config.bufferBytes,
      config.rank,
      {
        timeoutMs: config.timeoutMs,
        spinIterations: config.spinIterations,
        doorbell: config.doorbell,
        peerAlive: config.peerAlive,
      },
      config.faults,
    )
  }

  get rank(): number {
    return this.protocol.rank
  }

  /**
   * One all-reduce of `input` words into `output` words; returns the chunk count. `call` completes the call
   * signature every peer checks (default: every lane of the words counts, the ll8 protocol).
   */
  allReduceWords(
    algorithm: AlgorithmName,
    dtype: Dtype,
    input: Int32Array,
    output: Int32Array,
    call: { count?: number; protocol?: LlProtocol } = {},
  ): number {
    const impl = CPU_ALGORITHMS[algorithm]
    if (!impl) throw new LlcommError('UNSUPPORTED_ALGORITHM', `no cpu implementation of ${algorithm}`, { algorithm })
    this.protocol.useDtype(dtype)
    const count = call.count ?? input.length * this.protocol.codec.lanesPerWord
    return this.guarded(() => runChunked(this.protocol, impl, input, output, { dtype, count, protocol: call.protocol }))
  }

  /**
   * One epoch with the signature (w0, w1) and no data (runSignatureEpoch): a per-process allReduceMany's group
   * check before its buffers' calls. Fails, and poisons, as a call does.
   */
  signatureEpoch(w0: number, w1: number): void {
    this.guarded(() => runSignatureEpoch(this.protocol, w0, w1))
  }

  /** Runs one epoch sequence of this rank with the calls' failure rules (poison, diagnosis, a late abort). */
  private guarded<R>(run: () => R): R {
    const control = this.protocol.control
    // A channel poisoned by MISMATCH still lets a rank run into the failed call: its own signature check (made before
    // any data is used) finds the odd rank from the signatures already published, so every rank names both ranks
    // and both signatures. In a later call the check waits for peers that are not there, and that wait stops at
    // once (checkAbort), with no data either way. Any other poison refuses the call here.
    if (control.poisonKind() !== POISON_KIND.MISMATCH) control.checkAbort(-1)
    let result: R
    try {
      result = run()
    } catch (e) {
      // A failure of this rank's own (not an abort because of another's, not a close) poisons the channel, so that
      // no rank returns data from this call or a later one until recovery (CONTROL.POISONED).
      if (!(e instanceof LlcommError) || (e.code !== 'CLOSED' && e.details.aborted !== true)) {
        control.poison(poisonKindOf(e), deadPeerOf(e))
      }
      // Stopped by a peer's MISMATCH: name the odd rank and both signatures as that peer did, from what is published.
      if (e instanceof LlcommError && e.code === 'MISMATCH' && e.details.aborted === true) {
        throw this.protocol.signature.diagnose() ?? e
      }
      throw e
    }
    // A peer may have failed after our last wait: then our output is not returned either.
    control.checkAbort(-1)
    return result
  }

  /**
   * `iters` (+ `warmup`) back-to-back calls. Per iteration: optional random busy-wait (0..skewUs), arrival time,
   * the collective on one of the input sets generated before the loop (RankBenchmarkData), finish time, and the
   * check of the output (a word compare with the last verified output of that set, the float64 reference
   * otherwise; the first use of each set takes the reference check; for large messages whose bits vary between
   * calls, only the first and last iterations recompute it).
   */
  benchmark(cmd: RankBenchmarkCommand): RankBenchmarkResult {
    const data = new RankBenchmarkData(cmd.dtype, cmd.count, this.protocol.size, this.rank, cmd.seed)
    const output = new Int32Array(data.inputs[0].length)
    const originOffsetMs = performance.timeOrigin - cmd.driverTimeOriginMs
    const arrivalsMs = new Float64Array(cmd.iters)
    const finishesMs = new Float64Array(cmd.iters)
    const total = cmd.warmup + cmd.iters
    let wrong = 0
    let checkedIterations = 0
    for (let it = 0; it < total; it++) {
      const set = data.setOf(it)
      busyWaitUs(cmd.computeUs + benchmarkDelayUs(cmd.skewUs, cmd.seed, it, this.rank))
      const arrival = originOffsetMs + performance.now()
      this.allReduceWords(cmd.algorithm, cmd.dtype, data.inputs[set], output)
      const finish = originOffsetMs + performance.now()
      const measured = it - cmd.warmup
      if (measured >= 0) {
        arrivalsMs[measured] = arrival
        finishesMs[measured] = finish
      }
      // A recomputed reference check only on the first and last iterations (see RankBenchmarkData).
      const wrongHere = data.countWrong(output, set, it < 3 || it >= total - 3)
      if (wrongHere !== undefined) {
        wrong += wrongHere
        checkedIterations++
      }
    }
    return { arrivalsMs, finishesMs, wrong, checkedIterations }
  }

  reset(): void {
    this.protocol.reset()
  }
}

/** The CONTROL.POISONED value for a failure. */
function poisonKindOf(e: unknown): number {
  if (!(e instanceof LlcommError)) return POISON_KIND.OTHER
  if (e.code === 'TIMEOUT') return POISON_KIND.TIMEOUT
  if (e.code === 'MISMATCH') return POISON_KIND.MISMATCH
  if (e.code === 'WORKER_FAILED') return POISON_KIND.WORKER_FAILED
  if (e.code === 'PEER_FAILED') return POISON_KIND.PEER_FAILED
  return POISON_KIND.OTHER
}

/** For PEER_FAILED, the rank whose process died (what every peer must name); otherwise undefined (this rank). */
function deadPeerOf(e: unknown): number | undefined {
  if (!(e instanceof LlcommError) || e.code !== 'PEER_FAILED') return undefined
  const peer = e.details.peer
  return typeof peer === 'number' && peer >= 0 ? peer : undefined
}
