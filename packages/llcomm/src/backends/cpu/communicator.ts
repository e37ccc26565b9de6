/**
 * The CPU communicator (driver view): one worker per rank, one shared channel (the ranks' LL buffers, epochs and
 * doorbells), a bounded data SharedArrayBuffer for inputs and outputs. Lifecycle, queue, poisoning and recovery are
 * CommunicatorBase's (src/communicator/base.ts); this file supplies what is the CPU's own:
 *
 * - kPrepare*: validation and resolution at submission, and a copy of the inputs (as words), so that the result is
 *   the sum of the inputs as they were when allReduce was called.
 * - the run: the copied words go through the data region in slices of at most DATA_REGION_MAX_WORDS words per rank
 *   (the region never grows past that, whatever the message size: an all-reduce is element-wise, so slices are
 *   independent calls), every rank answers (each wait is bounded), the first root-cause error is thrown.
 * - kRecover: every rank reset()s its own buffers, barrier count and epoch (every rank is idle: the driver has all
 *   answers), then the channel's poison word is cleared; after a dead worker, a fresh pool on a fresh channel.
 * - kClose / kDestroy: rank channels marked closed (ranks of per-rank views blocked in a call get CLOSED at once),
 *   workers stopped, data region and channels dropped (released even while the object is still referenced).
 * - a communicator dropped without close(): its workers are idle and unref()'ed (they never keep Node alive) and a
 *   FinalizationRegistry terminates them once the object is collected.
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
  CpuCommunicatorOptions,
  Dtype,
  TensorArray,
} from '../../api/types.js'
import { CommunicatorBase, type PreparedCall } from '../../communicator/base.js'
import { DEFAULT_BUFFER_BYTES, DEFAULT_TIMEOUT_MS, validateCommunicatorOptions } from '../../communicator/options.js'
import { validateAllReduceOptions, validateBenchmarkRequest, validateInputs } from '../../communicator/validate.js'
import { wordsForCount } from '../../dtype/codec.js'
import { LlcommError, toLlcommError } from '../../errors.js'
import {
  type ChannelLayout,
  CONTROL,
  computeChannelLayout,
  controlIndex,
  createChannelMemory,
} from '../../protocol/cpu/layout.js'
import type { ProtocolTestFaults } from '../../protocol/cpu/rank-protocol.js'
import { wakeEveryRank } from '../../protocol/cpu/wait.js'
import { combineRankBenchmarks } from './benchmark-data.js'
import type { CpuRankHandle } from './rank-view.js'
import { readWords, writeWords } from './tensor-words.js'
import type { DataRegion, WorkerResponse } from './worker-messages.js'
import { WorkerPool } from './worker-pool.js'

/** The CPU defaults, from the one table of src/communicator/options.ts. */
export const CPU_DEFAULTS = {
  timeoutMs: DEFAULT_TIMEOUT_MS,
  bufferBytes: DEFAULT_BUFFER_BYTES.cpu,
} as const

/** Largest data region per rank and direction, in 32-bit words (16 MiB): larger calls run in slices of this. */
export const DATA_REGION_MAX_WORDS = 1 << 22

/**
 * Spin polls before a wait blocks, when the caller does not say. With a core per rank, a wait spins about
 * 50-100 µs (20,000 polls), longer than a peer's usual lateness, so no rank sleeps and pays a wake-up on the next
 * call. With more ranks than cores a spinning rank takes the core the rank it waits for needs, so waits block at
 * once. Measured on the 2-core VM, 4 KB f32 (research/notes/NOTES.md, 2026-11-29): 2 ranks oneshot-sentinel 58 → 15 µs
 * with 20,000 polls instead of 2,000; 4 ranks 279-431 → 137 µs with 0.
 */
export function defaultSpinIterations(ranks: number, cores = availableParallelism()): number {
  return ranks <= cores ? 20_000 : 0
}

/** Options only tests and scripts use (accepted by createCpuCommunicator, not by createCommunicator). */
export interface CpuCommunicatorTestOptions {
  /** Deliberately broken protocol variants (the checker must then see wrong data). */
  testFaults?: ProtocolTestFaults
  /**
   * Every rank's channel epoch starts here instead of 0 (an even number below 2^32 - 1), for runs that must cross
   * the epoch wrap (scripts/long-run.mjs). Also the start of every rank-handle channel. Recovery restarts at 0.
   */
  testStartEpoch?: number
  /** Largest data region per rank and direction in words (default DATA_REGION_MAX_WORDS), to test slicing. */
  testDataRegionMaxWords?: number
}

const TEST_OPTION_KEYS = ['testFaults', 'testStartEpoch', 'testDataRegionMaxWords'] as const

interface CpuConfig {
  ranks: number
  bufferBytes: number
  timeoutMs: number
  spinIterations: number
  faults: ProtocolTestFaults | undefined
  startEpoch: number
  dataRegionMaxWords: number
  /** The communicator's `deterministic` default (each call may override it). */
  deterministic: boolean
}

export async function createCpuCommunicator(
  options: CpuCommunicatorOptions & CpuCommunicatorTestOptions,
): Promise<CpuCommunicator> {
  const common = validateCommunicatorOptions('cpu', options, TEST_OPTION_KEYS)
  const ranks = options.ranks
  if (!Number.isInteger(ranks) || ranks < 1 || ranks > 256) {
    throw new LlcommError('INVALID_ARGUMENT', `ranks must be an integer in 1..256, got ${ranks}`, { ranks })
  }
  const spinIterations = options.spinIterations ?? defaultSpinIterations(ranks)
  if (!Number.isInteger(spinIterations) || spinIterations < 0) {
    throw new LlcommError('INVALID_ARGUMENT', 'spinIterations must be an integer >= 0', { spinIterations })
  }
  const bufferBytes = common.bufferBytes
  const layout = computeChannelLayout(ranks, bufferBytes)
  // The fallback (ring) must fit: 2(N-1) steps of at least one slot each in one peer region.
  if (ranks > 1 && layout.slotsPerPeer < 2 * (ranks - 1)) {
    throw new LlcommError(
      'INVALID_ARGUMENT',
      `bufferBytes ${bufferBytes} is too small for ${ranks} ranks (need at least ${8 * ranks * (ranks - 1)})`,
      { bufferBytes, ranks },
    )
  }
  const startEpoch = options.testStartEpoch ?? 0
  if (!Number.isInteger(startEpoch) || startEpoch < 0 || startEpoch > 0xfffffffe || startEpoch % 2 !== 0) {
    throw new LlcommError('INVALID_ARGUMENT', 'testStartEpoch must be an even integer in 0..2^32-2', { startEpoch })
  }
  const dataRegionMaxWords = options.testDataRegionMaxWords ?? DATA_REGION_MAX_WORDS
  if (!Number.isInteger(dataRegionMaxWords) || dataRegionMaxWords < 1) {
    throw new LlcommError('INVALID_ARGUMENT', 'testDataRegionMaxWords must be a positive integer')
  }
  const table = loadTuningTable(common.tuningTable)
  const config: CpuConfig = {
    ranks,
    bufferBytes,
    timeoutMs: common.timeoutMs,
    spinIterations,
    faults: options.testFaults,
    startEpoch,
    dataRegionMaxWords,
    deterministic: common.deterministic,
  }
  let channel: SharedArrayBuffer
  try {
    channel = newChannel(layout, startEpoch)
  } catch (e) {
    throw toLlcommError(e, `a ${layout.totalBytes}-byte channel`)
  }
  const pool = await startPool(config, channel)
  return new CpuCommunicator(pool, channel, layout, table, config)
}

/** A channel in its initial state, every rank's epoch at `startEpoch`. */
function newChannel(layout: ChannelLayout, startEpoch: number): SharedArrayBuffer {
  const channel = createChannelMemory(layout)
  if (startEpoch !== 0) {
    const i32 = new Int32Array(channel)
    // Before any rank exists: each rank reads its epoch word once when it builds its RankControl.
    for (let r = 0; r < layout.ranks; r++) Atomics.store(i32, controlIndex(r, CONTROL.EPOCH), startEpoch | 0)
  }
  return channel
}

function startPool(config: CpuConfig, channel: SharedArrayBuffer): Promise<WorkerPool> {
  return WorkerPool.start({
    ranks: config.ranks,
    bufferBytes: config.bufferBytes,
    timeoutMs: config.timeoutMs,
    spinIterations: config.spinIterations,
    channel,
    faults: config.faults,
  })
}

/** Stops a dropped communicator's workers (the held value must not reference the communicator). */
const dropped = new FinalizationRegistry<{ pool: WorkerPool }>((held) => {
  void held.pool.terminate()
})

/** Words of one call, copied at submission: one Int32Array per rank. */
interface CopiedInputs {
  words: Int32Array[]
  count: number
  dtype: Dtype
}

export class CpuCommunicator extends CommunicatorBase {
  readonly backend = 'cpu' as const
  readonly size: number
  readonly algorithms: readonly AlgorithmChoice[]
  readonly layout: ChannelLayout
  private pool: WorkerPool
  private channel: SharedArrayBuffer
  private readonly table: TuningTable
  private readonly config: CpuConfig
  private data: DataRegion | undefined
  private readonly skipNext = new Set<number>()
  /** The one channel of every rank handle (rankHandles), made on first use. */
  private rankChannel: SharedArrayBuffer | undefined
  private readonly held: { pool: WorkerPool }

  /** Hooks for tests: make a rank never arrive at the next call, or kill a worker. */
  readonly testHooks = {
    skipNextCall: (rank: number): void => {
      this.skipNext.add(rank)
    },
    crashWorker: async (rank: number): Promise<void> => {
      await this.pool.request(rank, { kind: 'crash' }).catch(() => undefined)
    },
    /** The data region's size in bytes now (0 when none is held). */
    dataRegionBytes: (): number => this.data?.data.byteLength ?? 0,
  }

  constructor(
    pool: WorkerPool,
    channel: SharedArrayBuffer,
    layout: ChannelLayout,
    table: TuningTable,
    config: CpuConfig,
  ) {
    super()
    this.pool = pool
    this.channel = channel
    this.size = layout.ranks
    this.layout = layout
    this.table = table
    this.config = config
    this.algorithms = ['auto', ...CPU_ALGORITHM_NAMES]
    this.held = { pool }
    dropped.register(this, this.held, this)
  }

  protected kPrepareAllReduce<T extends TensorArray>(
    inputs: T[],
    options: AllReduceOptions | undefined,
  ): PreparedCall<AllReduceOutputs<T>> {
    const validated = validateAllReduceOptions(options, this.algorithms, { deterministic: this.config.deterministic })
    const count = validateInputs(inputs, this.size, validated.dtype)
    const resolved = resolveCpuAlgorithm(validated.algorithm, { ...validated, count }, this.layout, this.table)
    const copied = this.copyInputs(inputs, validated.dtype, count)
    return () => this.runAllReduce<T>(copied, resolved)
  }

  /** The inputs as words, copied now (the caller may change or detach its arrays once allReduce returns). */
  private copyInputs(inputs: readonly TensorArray[], dtype: Dtype, count: number): CopiedInputs {
    const n = wordsForCount(dtype, count)
    try {
      const words = inputs.map((input) => {
        const w = new Int32Array(n)
        writeWords(input, dtype, w)
        return w
      })
      return { words, count, dtype }
    } catch (e) {
      throw toLlcommError(e, `copying ${this.size} inputs of ${count} ${dtype} elements`)
    }
  }

  /** The data region for slices of `words` words, at most dataRegionMaxWords (grown, never past the bound). */
  private dataRegion(words: number): DataRegion {
    const want = Math.min(words, this.config.dataRegionMaxWords)
    if (!this.data || this.data.capacityWords < want) {
      const capacityWords = Math.min(
        this.config.dataRegionMaxWords,
        Math.max(want, 2 * (this.data?.capacityWords ?? 512)),
      )
      const bytes = this.size * 2 * capacityWords * 4
      this.data = undefined
      try {
        this.data = { data: new SharedArrayBuffer(bytes), capacityWords }
      } catch (e) {
        throw toLlcommError(e, `a ${bytes}-byte data region`)
      }
    }
    return this.data
  }

  private async runAllReduce<T extends TensorArray>(
    copied: CopiedInputs,
    resolved: ResolvedCpuAlgorithm,
  ): Promise<AllReduceOutputs<T>> {
    const { count, dtype } = copied
    const info = {
      algorithm: resolved.algorithm.name,
      chunks: 0,
      ...(resolved.fallbackReason ? { fallbackReason: resolved.fallbackReason } : {}),
    }
    const total = copied.words[0]?.length ?? 0
    const outputWords = copied.words.map(() => new Int32Array(total))
    const region = total > 0 ? this.dataRegion(total) : undefined
    const skip = new Set(this.skipNext)
    this.skipNext.clear()
    for (let first = 0; region && first < total; first += region.capacityWords) {
      const words = Math.min(region.capacityWords, total - first)
      const wordsOf = (rank: number, which: 0 | 1): Int32Array =>
        new Int32Array(region.data, (rank * 2 + which) * region.capacityWords * 4, words)
      for (let r = 0; r < this.size; r++) wordsOf(r, 0).set(copied.words[r].subarray(first, first + words))
      const responses = await this.pool.requestAll((rank) => {
        if (skip.has(rank)) return { kind: 'skip' }
        return { kind: 'allreduce', algorithm: resolved.algorithm.name, dtype, words, ...region }
      })
      skip.clear()
      throwOnFailure(responses)
      const answered = responses.find((r) => r.ok && r.chunks !== undefined)
      info.chunks += answered?.ok ? (answered.chunks ?? 0) : 0
      for (let r = 0; r < this.size; r++) outputWords[r].set(wordsOf(r, 1), first)
    }
    const outputs = outputWords.map((w) => readWords(w, dtype, count) as T)
    return Object.assign(outputs, { info })
  }

  protected kPrepareBenchmark(request: BenchmarkRequest): PreparedCall<BenchmarkResult> {
    const r = validateBenchmarkRequest(request, this.algorithms)
    const resolved = resolveCpuAlgorithm(
      r.algorithm,
      { dtype: r.dtype, count: r.count, protocol: r.protocol, fallback: true },
      this.layout,
      this.table,
    )
    const seed = randomInt(0, 2 ** 32 - 1)
    return async () => {
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
      throwOnFailure(responses)
      const perRank = responses.map((x) => (x.ok && x.benchmark ? x.benchmark : undefined))
      return combineRankBenchmarks(perRank, r.iters, resolved)
    }
  }

  /**
   * Every rank back to its initial state (see the header). A dead worker's pool is replaced: a fresh channel (the
   * old one may hold a half-written call of the dead rank) and fresh workers.
   */
  protected async kRecover(): Promise<void> {
    this.skipNext.clear()
    if (this.pool.broken) {
      await this.pool.terminate()
      this.channel = newChannel(this.layout, 0)
      this.pool = await startPool(this.config, this.channel)
      this.held.pool = this.pool
      return
    }
    const resets = await this.pool.requestAll({ kind: 'reset' })
    const failed = resets.find((r) => !r.ok)
    if (failed && !failed.ok) throw LlcommError.fromJSON(failed.error)
    // Every rank has reset and answered (idle): clearing the poison now cannot race with a wait.
    const i32 = new Int32Array(this.channel)
    Atomics.store(i32, controlIndex(0, CONTROL.POISONED), 0)
  }

  /**
   * Handles for the per-rank view: one structured-cloneable handle per rank, all on one channel of their own (its
   * own buffers and epochs, so it never shares an epoch sequence with this communicator's driver calls); every call
   * returns handles to that same channel (no copy per call). Post handle r to the worker that plays rank r and
   * call attachCpuRank(handle) there. Closing the communicator makes calls on these ranks fail with CLOSED, also
   * calls blocked in a wait at that moment.
   */
  rankHandles(): CpuRankHandle[] {
    this.assertUsable()
    this.rankChannel ??= newChannel(this.layout, this.config.startEpoch)
    const channel = this.rankChannel
    return Array.from({ length: this.size }, (_, rank) => ({
      kind: 'llcomm.cpu-rank' as const,
      rank,
      ranks: this.size,
      bufferBytes: this.layout.bufferBytes,
      timeoutMs: this.config.timeoutMs,
      spinIterations: this.config.spinIterations,
      channel,
      tuningTable: this.table,
      deterministic: this.config.deterministic,
    }))
  }

  /** Marks the rank channel closed and wakes every rank of it (a blocked wait then throws CLOSED at once). */
  private closeRankChannel(): void {
    const channel = this.rankChannel
    this.rankChannel = undefined
    if (!channel) return
    const i32 = new Int32Array(channel)
    Atomics.store(i32, controlIndex(0, CONTROL.CHANNEL_CLOSED), 1)
    wakeEveryRank(i32, this.size)
  }

  private release(): void {
    dropped.unregister(this)
    this.data = undefined
  }

  protected async kClose(): Promise<void> {
    this.closeRankChannel()
    try {
      await this.pool.exit()
    } finally {
      this.release()
    }
  }

  protected async kDestroy(): Promise<void> {
    this.closeRankChannel()
    // Ranks of the driver view blocked in a wait: closed channel words wake them; terminate() ends them anyway.
    const i32 = new Int32Array(this.channel)
    Atomics.store(i32, controlIndex(0, CONTROL.CHANNEL_CLOSED), 1)
    wakeEveryRank(i32, this.size)
    try {
      await this.pool.terminate()
    } finally {
      this.release()
    }
  }
}

/**
 * Throws the first error among the responses, naming the root cause: among timeouts (a rank's own, or a wait that
 * stopped because another rank's call failed: details.aborted, which still names the peer it was waiting for), one
 * whose awaited peer was not itself waiting (ranks waiting on a waiter, as around a ring, name the waiter), a rank's
 * own failure before the aborts it caused otherwise.
 */
function throwOnFailure(responses: WorkerResponse[]): void {
  const errors = responses.flatMap((r) => (r.ok ? [] : [LlcommError.fromJSON(r.error)]))
  if (errors.length === 0) return
  const own = (e: LlcommError) => e.details.aborted !== true
  const timeouts = errors.filter((e) => e.code === 'TIMEOUT')
  if (timeouts.length > 0) {
    const waiting = new Set(timeouts.map((e) => e.details.rank))
    const rootCause = (e: LlcommError) => !waiting.has(e.details.peer)
    const root =
      timeouts.find((e) => rootCause(e) && own(e)) ?? timeouts.find(rootCause) ?? timeouts.find(own) ?? timeouts[0]
    if (own(root)) throw root
    // A rank that stopped at the poison was waiting for a peer that never came: name that wait as the timeout.
    throw LlcommError.timeout({
      rank: root.details.rank as number,
      peer: root.details.peer as number,
      epoch: root.details.epoch as number,
      waitingFor: `stopped when the call of rank ${String(root.details.failedRank)} timed out`,
    })
  }
  throw errors.find(own) ?? errors[0]
}
