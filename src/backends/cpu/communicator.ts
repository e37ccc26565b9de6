/**
 * The CPU communicator (driver view): one worker per rank, one shared channel (the ranks' LL buffers, epochs and
 * doorbells), a data SharedArrayBuffer for inputs and outputs.
 *
 * Concurrency: calls QUEUE. allReduce and benchmark issued while another call is in flight run after it, in
 * issue order, so every rank sees the same sequence of calls and one epoch sequence is never shared by two
 * calls at once. (A second attach of the same rank of a per-rank view fails at once with BUSY.)
 *
 * After a TIMEOUT (a rank that never arrived): the driver waits until every rank has answered (each wait is
 * bounded, so all do), then has every rank reset() its own buffers, barrier count and epoch, and only then
 * rejects the call; the next call starts from epoch 0 on every rank. A validation error is thrown before anything
 * reaches the workers. A dead worker (WORKER_FAILED) stops the pool; later calls reject with WORKER_FAILED.
 */

import { randomInt } from 'node:crypto'
import { availableParallelism } from 'node:os'
import { loadTuningTable, type TuningTable } from '../../algorithms/auto.js'
import { CPU_ALGORITHM_NAMES, type ResolvedCpuAlgorithm, resolveCpuAlgorithm } from '../../algorithms/cpu/resolve.js'
import type {
  AlgorithmChoice,
  AllReduceOptions,
  AllReduceOutputs,
  BenchmarkRequest,
  BenchmarkResult,
  Communicator,
  CpuCommunicatorOptions,
  TensorArray,
} from '../../api/types.js'
import {
  type ValidatedOptions,
  validateAllReduceOptions,
  validateBenchmarkRequest,
  validateDeterministic,
  validateInputs,
} from '../../communicator/validate.js'
import { wordsForCount } from '../../dtype/codec.js'
import { LlcommError } from '../../errors.js'
import {
  type ChannelLayout,
  CONTROL,
  computeChannelLayout,
  controlIndex,
  createChannelMemory,
} from '../../protocol/cpu/layout.js'
import type { ProtocolTestFaults } from '../../protocol/cpu/rank-protocol.js'
import type { CpuRankHandle } from './rank-view.js'
import { readWords, writeWords } from './tensor-words.js'
import type { DataRegion, WorkerResponse } from './worker-messages.js'
import { WorkerPool } from './worker-pool.js'

export const CPU_DEFAULTS = {
  timeoutMs: 10_000,
  bufferBytes: 256 * 1024,
} as const

/**
 * Spin polls before a wait blocks, when the caller does not say. With a core per rank, a wait spins about
 * 50-100 µs (20,000 polls), longer than a peer's usual lateness, so no rank sleeps and pays a wake-up on the next
 * call. With more ranks than cores a spinning rank takes the core the rank it waits for needs, so waits block at
 * once. Measured on the 2-core VM, 4 KB f32 (bench/NOTES.md, 2026-11-29): 2 ranks oneshot-sentinel 58 → 15 µs
 * with 20,000 polls instead of 2,000; 4 ranks 279-431 → 137 µs with 0.
 */
export function defaultSpinIterations(ranks: number, cores = availableParallelism()): number {
  return ranks <= cores ? 20_000 : 0
}

/** Options only tests use. */
export interface CpuCommunicatorTestOptions {
  /** Deliberately broken protocol variants (the checker must then see wrong data). */
  testFaults?: ProtocolTestFaults
}

export async function createCpuCommunicator(
  options: CpuCommunicatorOptions & CpuCommunicatorTestOptions,
): Promise<CpuCommunicator> {
  const ranks = options.ranks
  if (!Number.isInteger(ranks) || ranks < 1 || ranks > 256) {
    throw new LlcommError('INVALID_ARGUMENT', `ranks must be an integer in 1..256, got ${ranks}`, { ranks })
  }
  const timeoutMs = options.timeoutMs ?? CPU_DEFAULTS.timeoutMs
  if (typeof timeoutMs !== 'number' || !(timeoutMs > 0) || !Number.isFinite(timeoutMs)) {
    throw new LlcommError('INVALID_ARGUMENT', 'timeoutMs must be a positive number', { timeoutMs })
  }
  const spinIterations = options.spinIterations ?? defaultSpinIterations(ranks)
  if (!Number.isInteger(spinIterations) || spinIterations < 0) {
    throw new LlcommError('INVALID_ARGUMENT', 'spinIterations must be an integer >= 0', { spinIterations })
  }
  const bufferBytes = options.bufferBytes ?? CPU_DEFAULTS.bufferBytes
  const layout = computeChannelLayout(ranks, bufferBytes)
  // The fallback (ring) must fit: 2(N-1) steps of at least one slot each in one peer region.
  if (ranks > 1 && layout.slotsPerPeer < 2 * (ranks - 1)) {
    throw new LlcommError(
      'INVALID_ARGUMENT',
      `bufferBytes ${bufferBytes} is too small for ${ranks} ranks (need at least ${8 * ranks * (ranks - 1)})`,
      { bufferBytes, ranks },
    )
  }
  const deterministic = validateDeterministic(options.deterministic)
  const table = loadTuningTable(options.tuningTable)
  const channel = createChannelMemory(layout)
  const pool = await WorkerPool.start({
    ranks,
    bufferBytes,
    timeoutMs,
    spinIterations,
    channel,
    faults: options.testFaults,
  })
  return new CpuCommunicator(pool, layout, table, { timeoutMs, spinIterations, deterministic })
}

export class CpuCommunicator implements Communicator {
  readonly backend = 'cpu' as const
  readonly size: number
  readonly algorithms: readonly AlgorithmChoice[]
  readonly layout: ChannelLayout
  private readonly pool: WorkerPool
  private readonly table: TuningTable
  private readonly wait: { timeoutMs: number; spinIterations: number; deterministic?: boolean }
  private data: DataRegion | undefined
  private queue: Promise<unknown> = Promise.resolve()
  private state: 'open' | 'closing' | 'closed' = 'open'
  private closing: Promise<void> | undefined
  private destroying: Promise<void> | undefined
  private readonly skipNext = new Set<number>()
  private readonly rankChannels: SharedArrayBuffer[] = []

  /** Hooks for tests: make a rank never arrive at the next call, or kill a worker. */
  readonly testHooks = {
    skipNextCall: (rank: number): void => {
      this.skipNext.add(rank)
    },
    crashWorker: async (rank: number): Promise<void> => {
      await this.pool.request(rank, { kind: 'crash' }).catch(() => undefined)
    },
  }

  constructor(
    pool: WorkerPool,
    layout: ChannelLayout,
    table: TuningTable,
    wait: { timeoutMs: number; spinIterations: number; deterministic?: boolean },
  ) {
    this.pool = pool
    this.size = layout.ranks
    this.layout = layout
    this.table = table
    this.wait = wait
    this.algorithms = ['auto', ...CPU_ALGORITHM_NAMES]
  }

  /** At submission: no new calls once close() or destroy() has begun, none after a worker died. */
  private ensureOpen(): void {
    if (this.state !== 'open') throw new LlcommError('CLOSED', 'the communicator is closed')
    const broken = this.pool.broken
    if (broken) throw broken
  }

  /** Runs `task` after every call issued before it (calls queue; see the header). close() drains the queue. */
  private enqueue<R>(task: () => Promise<R>): Promise<R> {
    const run = this.queue.then(() => {
      if (this.destroying) throw new LlcommError('CLOSED', 'the communicator was destroyed')
      const broken = this.pool.broken
      if (broken) throw broken
      return task()
    })
    this.queue = run.catch(() => undefined)
    return run
  }

  allReduce<T extends TensorArray>(inputs: T[], options?: AllReduceOptions): Promise<AllReduceOutputs<T>> {
    try {
      this.ensureOpen()
      const validated = validateAllReduceOptions(options, this.algorithms, { deterministic: this.wait.deterministic })
      const count = validateInputs(inputs, this.size, validated.dtype)
      const resolved = resolveCpuAlgorithm(validated.algorithm, { ...validated, count }, this.layout, this.table)
      return this.enqueue(() => this.runAllReduce(inputs, validated, count, resolved))
    } catch (e) {
      return Promise.reject(e)
    }
  }

  private dataRegion(words: number): DataRegion {
    if (!this.data || this.data.capacityWords < words) {
      const capacityWords = Math.max(words, 2 * (this.data?.capacityWords ?? 512))
      this.data = { data: new SharedArrayBuffer(this.size * 2 * capacityWords * 4), capacityWords }
    }
    return this.data
  }

  private async runAllReduce<T extends TensorArray>(
    inputs: T[],
    options: ValidatedOptions,
    count: number,
    resolved: ResolvedCpuAlgorithm,
  ): Promise<AllReduceOutputs<T>> {
    const info = {
      algorithm: resolved.algorithm.name,
      chunks: 0,
      ...(resolved.fallbackReason ? { fallbackReason: resolved.fallbackReason } : {}),
    }
    if (count === 0) {
      return Object.assign(
        inputs.map((a) => a.slice() as T),
        { info },
      )
    }
    const words = wordsForCount(options.dtype, count)
    const region = this.dataRegion(words)
    const wordsOf = (rank: number, which: 0 | 1): Int32Array =>
      new Int32Array(region.data, (rank * 2 + which) * region.capacityWords * 4, words)
    for (let r = 0; r < this.size; r++) writeWords(inputs[r], options.dtype, wordsOf(r, 0))
    const responses = await this.pool.requestAll((rank) => {
      if (this.skipNext.delete(rank)) return { kind: 'skip' }
      return { kind: 'allreduce', algorithm: resolved.algorithm.name, dtype: options.dtype, words, ...region }
    })
    await this.throwOnFailure(responses)
    const answered = responses.find((r) => r.ok && r.chunks !== undefined)
    info.chunks = answered?.ok ? (answered.chunks ?? 0) : 0
    const outputs = inputs.map((_, r) => readWords(wordsOf(r, 1), options.dtype, count) as T)
    return Object.assign(outputs, { info })
  }

  /** Throws the first error among the responses; after a TIMEOUT every rank resets first (see the header). */
  private async throwOnFailure(responses: WorkerResponse[]): Promise<void> {
    const errors = responses.flatMap((r) => (r.ok ? [] : [LlcommError.fromJSON(r.error)]))
    if (errors.length === 0) return
    const timeouts = errors.filter((e) => e.code === 'TIMEOUT')
    if (timeouts.length > 0) {
      // Name the root cause: a rank waiting for a peer that did not itself time out (ranks waiting on a waiter,
      // as around a ring, name the waiter).
      const waiting = new Set(timeouts.map((e) => e.details.rank))
      const timeout = timeouts.find((e) => !waiting.has(e.details.peer)) ?? timeouts[0]
      const resets = await this.pool.requestAll({ kind: 'reset' })
      const failed = resets.find((r) => !r.ok)
      if (failed && !failed.ok) throw LlcommError.fromJSON(failed.error)
      throw timeout
    }
    throw errors[0]
  }

  benchmark(request: BenchmarkRequest): Promise<BenchmarkResult> {
    try {
      this.ensureOpen()
      const r = validateBenchmarkRequest(request, this.algorithms)
      const resolved = resolveCpuAlgorithm(
        r.algorithm,
        { dtype: r.dtype, count: r.count, protocol: r.protocol, fallback: true },
        this.layout,
        this.table,
      )
      const seed = randomInt(0, 2 ** 32 - 1)
      return this.enqueue(async () => {
        const responses = await this.pool.requestAll({
          kind: 'benchmark',
          benchmark: {
            algorithm: resolved.algorithm.name,
            dtype: r.dtype,
            count: r.count,
            iters: r.iters,
            warmup: r.warmup,
            skewUs: r.skewUs,
            computeUs: r.computeUs ?? 0,
            seed,
            driverTimeOriginMs: performance.timeOrigin,
          },
        })
        await this.throwOnFailure(responses)
        const perRank = responses.map((x) => (x.ok && x.benchmark ? x.benchmark : undefined))
        const timesUs: number[] = []
        const skewWaitUs: number[] = []
        for (let it = 0; it < r.iters; it++) {
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
        const ranks = perRank.filter((b) => b !== undefined)
        if (r.iters > 0 && ranks.length > 0) {
          const loopStartMs = Math.min(...ranks.map((b) => b.arrivalsMs[0]))
          const loopEndMs = Math.max(...ranks.map((b) => b.finishesMs[r.iters - 1]))
          result.backToBackUs = ((loopEndMs - loopStartMs) * 1000) / r.iters
        }
        if (resolved.fallbackReason) result.fallbackReason = resolved.fallbackReason
        return result
      })
    } catch (e) {
      return Promise.reject(e)
    }
  }

  /**
   * Handles for the per-rank view: one structured-cloneable handle per rank, on a channel of its own (its own
   * buffers and epochs, so it never shares an epoch sequence with this communicator's driver calls). Post
   * handle r to the worker that plays rank r and call attachCpuRank(handle) there. Closing the communicator
   * makes later calls on these ranks fail with CLOSED.
   */
  rankHandles(): CpuRankHandle[] {
    this.ensureOpen()
    const channel = createChannelMemory(this.layout)
    this.rankChannels.push(channel)
    return Array.from({ length: this.size }, (_, rank) => ({
      kind: 'llcomm.cpu-rank' as const,
      rank,
      ranks: this.size,
      bufferBytes: this.layout.bufferBytes,
      timeoutMs: this.wait.timeoutMs,
      spinIterations: this.wait.spinIterations,
      channel,
      tuningTable: this.table,
      deterministic: this.wait.deterministic ?? false,
    }))
  }

  private markRankChannelsClosed(): void {
    for (const channel of this.rankChannels) {
      const i32 = new Int32Array(channel)
      Atomics.store(i32, controlIndex(0, CONTROL.CHANNEL_CLOSED), 1)
    }
  }

  /** Drains queued calls, then stops the workers. Idempotent and awaitable. */
  close(): Promise<void> {
    if (this.destroying) return this.destroying
    if (!this.closing) {
      this.state = 'closing'
      this.closing = (async () => {
        await this.queue
        this.state = 'closed'
        this.markRankChannelsClosed()
        await this.pool.exit()
      })()
    }
    return this.closing
  }

  /** Stops the workers now; in-flight calls reject with CLOSED. Idempotent and awaitable. */
  destroy(): Promise<void> {
    if (!this.destroying) {
      this.state = 'closed'
      this.markRankChannelsClosed()
      this.destroying = this.pool.terminate()
    }
    return this.destroying
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close()
  }
}
