/**
 * The CPU backend with one process per rank: this process is one rank; the ranks meet through the TCP rendezvous
 * (src/rendezvous) and share one channel in /dev/shm (process-channel.ts). The same protocols
 * (src/protocol/cpu), algorithms (src/algorithms/cpu), chunking, algorithm resolution and tuning table as the
 * in-process backend run on it; only the memory (a mapping instead of a SharedArrayBuffer) and the way a waiter
 * sleeps (a futex instead of Atomics.wait) differ.
 *
 * A call runs on the calling thread, synchronously inside the returned promise's executor chain: it blocks the
 * event loop for the collective's duration (each wait bounded by timeoutMs), as a worker's call does in the
 * per-rank view. Calls queue in issue order.
 *
 * Failure: a peer that never arrives → TIMEOUT naming rank, peer and epoch; a peer whose process died →
 * PEER_FAILED naming it (its pid is checked every 100 ms while we wait, and the rendezvous host reports its
 * dropped connection between calls). After either, the ranks' epochs no longer agree, so the communicator is
 * broken: later calls reject with the same error; destroy() it (no in-place recovery across processes).
 */
import { createHash } from 'node:crypto'
import { availableParallelism } from 'node:os'
import { loadTuningTable, type TuningTable } from '../../algorithms/auto.js'
import { CPU_ALGORITHM_NAMES, type ResolvedCpuAlgorithm, resolveCpuAlgorithm } from '../../algorithms/cpu/resolve.js'
import type {
  AlgorithmChoice,
  AllReduceInfo,
  AllReduceOptions,
  Dtype,
  LlProtocol,
  ProcessCommunicator,
  ProcessCommunicatorOptions,
  RankAllReduceOutput,
  TensorArray,
} from '../../api/types.js'
import {
  type ValidatedOptions,
  validateAllReduceOptions,
  validateDeterministic,
  validateRankInput,
} from '../../communicator/validate.js'
import { wordsForCount } from '../../dtype/codec.js'
import { isCallRefusal, LlcommError } from '../../errors.js'
import { encodeManyGroupSignature, encodeRefusedSignature } from '../../protocol/call-signature.js'
import { type ChannelLayout, computeChannelLayout } from '../../protocol/cpu/layout.js'
import { resolveRendezvousSettings } from '../../rendezvous/address.js'
import { recoverProcessRank } from '../../rendezvous/recovery.js'
import { joinRendezvous, type Rendezvous } from '../../rendezvous/tcp-store.js'
import { openProcessChannel, type ProcessChannel } from './process-channel.js'
import { type RankBenchmarkCommand, type RankBenchmarkResult, RankRunner } from './rank-runner.js'
import { readWords, writeWords } from './tensor-words.js'

/** Defaults of the in-process backend (CPU_DEFAULTS in communicator.ts): the same numbers on this path. */
export const CPU_PROCESS_DEFAULTS = {
  timeoutMs: 10_000,
  bufferBytes: 256 * 1024,
} as const

/**
 * Spin polls before a wait blocks on its futex: the in-process rule (defaultSpinIterations in communicator.ts),
 * with processes instead of threads competing for the cores.
 */
export function defaultProcessSpinIterations(ranks: number, cores = availableParallelism()): number {
  return ranks <= cores ? 20_000 : 0
}

function positive(value: unknown, name: string): number {
  if (typeof value !== 'number' || !(value > 0) || !Number.isFinite(value)) {
    throw new LlcommError('INVALID_ARGUMENT', `${name} must be a positive number`, { [name]: value })
  }
  return value
}

/** One buffer of a per-rank call, checked and resolved at submission. */
interface CheckedCall<T extends TensorArray> {
  input: T
  count: number
  resolved: ResolvedCpuAlgorithm
  protocol: LlProtocol | undefined
}

/** A digest of the tuning table, so that the rendezvous refuses ranks whose `auto` could pick differently. */
function tableDigest(table: TuningTable): string {
  return createHash('sha256').update(JSON.stringify(table)).digest('hex').slice(0, 16)
}

export async function createCpuProcessCommunicator(
  options: ProcessCommunicatorOptions,
): Promise<CpuProcessCommunicator> {
  if (options.device !== undefined) {
    throw new LlcommError('INVALID_ARGUMENT', 'device is for the cuda backend', { device: options.device })
  }
  const { rank, worldSize, address } = resolveRendezvousSettings(options)
  const timeoutMs = positive(options.timeoutMs ?? CPU_PROCESS_DEFAULTS.timeoutMs, 'timeoutMs')
  const rendezvousTimeoutMs = positive(options.rendezvousTimeoutMs ?? timeoutMs, 'rendezvousTimeoutMs')
  // The default of every call's `deterministic` (CommunicatorOptionsBase), as on the in-process communicators.
  const deterministic = validateDeterministic(options.deterministic)
  const spinIterations = options.spinIterations ?? defaultProcessSpinIterations(worldSize)
  if (!Number.isInteger(spinIterations) || spinIterations < 0) {
    throw new LlcommError('INVALID_ARGUMENT', 'spinIterations must be an integer >= 0', { spinIterations })
  }
  const bufferBytes = options.bufferBytes ?? CPU_PROCESS_DEFAULTS.bufferBytes
  const layout = computeChannelLayout(worldSize, bufferBytes)
  if (worldSize > 1 && layout.slotsPerPeer < 2 * (worldSize - 1)) {
    throw new LlcommError(
      'INVALID_ARGUMENT',
      `bufferBytes ${bufferBytes} is too small for ${worldSize} ranks (need at least ${8 * worldSize * (worldSize - 1)})`,
      { bufferBytes, worldSize },
    )
  }
  const table = loadTuningTable(options.tuningTable)
  const rv = await joinRendezvous({
    address,
    rank,
    worldSize,
    timeoutMs: rendezvousTimeoutMs,
    config: { backend: 'cpu', worldSize, bufferBytes, tuningTable: tableDigest(table) },
  })
  let channel: ProcessChannel
  try {
    channel = await openProcessChannel(rv, layout, rendezvousTimeoutMs)
  } catch (e) {
    rv.destroy()
    throw e
  }
  rv.unref()
  return new CpuProcessCommunicator(rv, channel, layout, table, { timeoutMs, spinIterations, deterministic })
}

export class CpuProcessCommunicator implements ProcessCommunicator {
  readonly backend = 'cpu' as const
  readonly rank: number
  readonly size: number
  readonly algorithms: readonly AlgorithmChoice[]
  readonly layout: ChannelLayout
  private readonly rv: Rendezvous
  private readonly channel: ProcessChannel
  private readonly runner: RankRunner
  private readonly table: TuningTable
  private readonly timeoutMs: number
  /** The communicator's `deterministic` default (each call may override it). */
  readonly deterministic: boolean
  private queue: Promise<unknown> = Promise.resolve()
  private state: 'open' | 'closing' | 'closed' = 'open'
  private broken: LlcommError | undefined
  private closing: Promise<void> | undefined
  private destroying: Promise<void> | undefined
  private scratch = new Int32Array(0)
  /** recover() calls so far (each one's barriers are named after it). */
  private recoveries = 0

  constructor(
    rv: Rendezvous,
    channel: ProcessChannel,
    layout: ChannelLayout,
    table: TuningTable,
    wait: { timeoutMs: number; spinIterations: number; deterministic?: boolean },
  ) {
    this.rv = rv
    this.channel = channel
    this.rank = rv.rank
    this.size = rv.worldSize
    this.layout = layout
    this.table = table
    this.timeoutMs = wait.timeoutMs
    this.deterministic = wait.deterministic ?? false
    this.algorithms = ['auto', ...CPU_ALGORITHM_NAMES]
    this.runner = new RankRunner({
      sab: channel.segment.buffer,
      ranks: layout.ranks,
      bufferBytes: layout.bufferBytes,
      rank: this.rank,
      timeoutMs: wait.timeoutMs,
      spinIterations: wait.spinIterations,
      doorbell: channel.doorbell,
      peerAlive: channel.peerAlive,
    })
  }

  /** The error that broke the communicator, if any: a failed call's, or a peer the rendezvous reports dead. */
  private brokenBy(): LlcommError | undefined {
    if (this.broken) return this.broken
    const dead = this.rv.deadPeer
    if (dead !== undefined) {
      this.broken = new LlcommError('PEER_FAILED', `rank ${this.rank}: peer ${dead} died (its process is gone)`, {
        rank: this.rank,
        peer: dead,
        epoch: this.runner.protocol.control.epoch,
      })
    }
    return this.broken
  }

  private ensureUsable(): void {
    if (this.state !== 'open' || this.destroying) throw new LlcommError('CLOSED', 'the communicator is closed')
    const broken = this.brokenBy()
    if (broken) throw broken
  }

  private words(n: number, which: 0 | 1): Int32Array {
    if (this.scratch.length < 2 * n) this.scratch = new Int32Array(2 * n)
    return this.scratch.subarray(which * n, which * n + n)
  }

  allReduce<T extends TensorArray>(input: T, options?: AllReduceOptions): Promise<RankAllReduceOutput<T>> {
    try {
      this.ensureUsable()
      const validated = validateAllReduceOptions(options, this.algorithms, { deterministic: this.deterministic })
      const call = this.checkedCall(input, validated)
      return this.enqueueEpochs(() => this.runCall(call, validated.dtype))
    } catch (e) {
      return this.refuse(e)
    }
  }

  /**
   * Several AllReduces of this rank's buffers as one call (the per-rank form of Communicator.allReduceMany): every
   * buffer validated and resolved at submission; then one epoch for the group's signature (encodeManyGroupSignature:
   * the dtype and every buffer's count, so a rank with another number of buffers or another count fails with
   * MISMATCH on every rank before any buffer's data), then one allReduce per buffer, back to back, each exactly as
   * allReduce runs it: the outputs are bit-identical to one allReduce per buffer.
   */
  allReduceMany<T extends TensorArray>(inputs: T[], options?: AllReduceOptions): Promise<RankAllReduceOutput<T>[]> {
    try {
      this.ensureUsable()
      if (!Array.isArray(inputs) || inputs.length === 0)
        throw new LlcommError('INVALID_ARGUMENT', "allReduceMany needs a non-empty array of this rank's buffers")
      const validated = validateAllReduceOptions(options, this.algorithms, { deterministic: this.deterministic })
      // Read at submission (allReduce copies its input into words when it runs; here later buffers wait longer).
      const calls = inputs.map((input) => ({ ...this.checkedCall(input, validated), input: input.slice() as T }))
      const group = encodeManyGroupSignature(
        validated.dtype,
        calls.map((c) => c.count),
      )
      return this.enqueueEpochs(() => {
        this.runner.signatureEpoch(...group)
        return calls.map((call) => this.runCall(call, validated.dtype))
      })
    } catch (e) {
      return this.refuse(e)
    }
  }

  /** One buffer of a call, checked and resolved (at submission, so a refusal comes before anything is queued). */
  private checkedCall<T extends TensorArray>(input: T, validated: ValidatedOptions): CheckedCall<T> {
    const count = validateRankInput(input, validated.dtype, this.rank)
    const resolved = resolveCpuAlgorithm(validated.algorithm, { ...validated, count }, this.layout, this.table)
    return { input, count, resolved, protocol: validated.protocol }
  }

  /**
   * One buffer's AllReduce on this rank's runner. An empty one still takes its epoch: runChunked publishes and
   * checks its signature (count 0) with no data, so a peer whose call is not empty finds the mismatch, and this rank
   * stays in step with the others (an empty call that returned at once left its rank one call behind: its next call
   * met the peers' mismatched one and both returned wrong sums without an error).
   */
  private runCall<T extends TensorArray>(call: CheckedCall<T>, dtype: Dtype): RankAllReduceOutput<T> {
    const info: AllReduceInfo = { algorithm: call.resolved.algorithm.name, chunks: 0 }
    if (call.resolved.fallbackReason) info.fallbackReason = call.resolved.fallbackReason
    const n = wordsForCount(dtype, call.count)
    const inputWords = this.words(n, 0)
    const outputWords = this.words(n, 1)
    writeWords(call.input, dtype, inputWords)
    // The element count and protocol complete the call's signature (a 16-bit call of 2k - 1 elements fills as many
    // words as one of 2k: without the count both would match; the protocol picks the LL packets).
    info.chunks = this.runner.allReduceWords(call.resolved.algorithm.name, dtype, inputWords, outputWords, {
      count: call.count,
      protocol: call.protocol,
    })
    return Object.assign(readWords(outputWords, dtype, call.count) as T, { info })
  }

  /**
   * Queues `run` (this rank's epochs of one call) behind every earlier call. A failure inside leaves the
   * communicator failed: the ranks' epochs no longer agree, so nothing after it may run on the channel.
   */
  private enqueueEpochs<R>(run: () => R): Promise<R> {
    const queued = this.queue.then(() => {
      if (this.destroying || this.state === 'closed') throw new LlcommError('CLOSED', 'the communicator was destroyed')
      const broken = this.brokenBy()
      if (broken) throw broken
      try {
        return run()
      } catch (e) {
        this.broken = e instanceof LlcommError ? e : new LlcommError('PEER_FAILED', String(e), { rank: this.rank })
        throw e
      }
    })
    this.queue = queued.catch(() => undefined)
    return queued
  }

  /**
   * A call this rank refused (isCallRefusal: its arguments, checked before anything ran) still takes the call's
   * signature epoch, with the refused signature (encodeRefusedSignature) and no data, queued as the call would have
   * been: peers who made the call fail with MISMATCH at that epoch instead of meeting this rank's next call (which
   * would hand them its data for theirs, without an error, if it matched their signature). Where every rank refused,
   * the packets match and the communicator stays usable. The refusal is reported after the epoch; a MISMATCH found
   * there leaves the communicator failed, as any mismatched call does. Other errors (CLOSED, a failed communicator)
   * reject at once: there is no epoch to take.
   */
  private refuse<R>(e: unknown): Promise<R> {
    if (!isCallRefusal(e) || this.state !== 'open' || this.destroying || this.brokenBy()) return Promise.reject(e)
    // (a MISMATCH in the epoch fails the communicator, in enqueueEpochs; the refusal is this call's report either way)
    const refused = (): never => {
      throw e
    }
    return this.enqueueEpochs(() => this.runner.signatureEpoch(...encodeRefusedSignature())).then(refused, refused)
  }

  /**
   * The in-rank benchmark loop of the in-process backend (RankRunner.benchmark: back-to-back calls, arrival and
   * finish times against `driverTimeOriginMs`, every output checked), on this process's rank; collective (every
   * rank runs it with the same command). For `llcomm bench --processes`.
   */
  benchmarkRank(cmd: RankBenchmarkCommand): Promise<RankBenchmarkResult> {
    const run = this.queue.then(() => {
      this.ensureUsable()
      try {
        return this.runner.benchmark(cmd)
      } catch (e) {
        this.broken = e instanceof LlcommError ? e : new LlcommError('PEER_FAILED', String(e), { rank: this.rank })
        throw e
      }
    })
    this.queue = run.catch(() => undefined)
    return run
  }

  /**
   * Recovery after a failed call (ProcessCommunicator.recover), queued behind this rank's calls, so this rank is in
   * none: rendezvous/recovery.ts's two barriers around this rank's re-arm (RankRunner.reset: its own buffers and
   * epoch) and the poison's clear.
   */
  recover(): Promise<void> {
    const run = this.queue.then(async () => {
      if (this.destroying || this.state !== 'open') throw new LlcommError('CLOSED', 'the communicator is closed')
      await recoverProcessRank({
        rv: this.rv,
        rank: this.rank,
        backend: 'cpu',
        generation: ++this.recoveries,
        limitMs: 2 * this.timeoutMs + 5000,
        drain: async () => {}, // (this rank's calls ran on this thread and have returned)
        rearm: () => {
          this.runner.reset()
          this.runner.protocol.control.clearPoison()
        },
      })
      this.broken = undefined
    })
    this.queue = run.catch(() => undefined)
    return run
  }

  /** Drains queued calls, leaves the group (rank 0 waits for the others to leave, up to timeoutMs), unmaps. */
  close(): Promise<void> {
    if (this.destroying) return this.destroying
    if (!this.closing) {
      this.state = 'closing'
      this.closing = (async () => {
        await this.queue
        this.state = 'closed'
        try {
          await this.rv.close(this.timeoutMs)
        } finally {
          this.channel.segment.unmap()
        }
      })()
    }
    return this.closing
  }

  /** Leaves at once and unmaps (no call can be running: calls run on this thread). Idempotent. */
  destroy(): Promise<void> {
    if (!this.destroying) {
      this.state = 'closed'
      this.rv.destroy()
      const unmap = (): void => this.channel.segment.unmap()
      // A close in progress may still wait on the queue; unmap only after it, never under a running call.
      this.destroying = (this.closing ?? this.queue).then(unmap, unmap)
    }
    return this.destroying
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close()
  }
}
