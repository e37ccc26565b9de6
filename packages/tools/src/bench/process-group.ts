/**
 * `llcomm bench --processes`: the cpu benchmark with one process per rank. The bench forks N rank processes
 * (process-rank.ts) that meet through the TCP rendezvous and share one /dev/shm channel, and drives them through
 * their IPC channels with the same Communicator interface the sweep uses: benchmark() sends every rank the same
 * in-rank timing command (the in-process backend's loop, RankRunner.benchmark) and folds the per-rank arrival and
 * finish times exactly as CpuCommunicator.benchmark does (arrival times are against this process's time origin).
 * A rank process that dies breaks the group: pending and later calls reject with PEER_FAILED naming it.
 */

import { type ChildProcess, fork } from 'node:child_process'
import { randomInt } from 'node:crypto'
import { fileURLToPath } from 'node:url'
import type {
  AlgorithmChoice,
  AllReduceInfo,
  AllReduceOptions,
  AllReduceOutputs,
  BenchmarkRequest,
  BenchmarkResult,
  Communicator,
  RankBenchmarkResult,
  TensorArray,
} from 'llcomm/internal'
import {
  type ChannelLayout,
  CPU_ALGORITHM_NAMES,
  CPU_PROCESS_DEFAULTS,
  combineRankBenchmarks,
  computeChannelLayout,
  findFreePort,
  LlcommError,
  type LlcommErrorCode,
  loadTuningTable,
  RENDEZVOUS_ENV,
  resolveCpuAlgorithm,
  type TuningTable,
  validateAllReduceOptions,
  validateBenchmarkRequest,
  validateInputs,
} from 'llcomm/internal'

const RANK_SCRIPT = fileURLToPath(new URL('./process-rank.js', import.meta.url))

type Reply =
  | { t: 'ready'; algorithms: AlgorithmChoice[] }
  | { t: 'benchmark'; result: RankBenchmarkResult }
  | { t: 'allreduce'; output: TensorArray; info: AllReduceInfo }
  | { t: 'error'; error: { code: LlcommErrorCode; message: string; details?: Record<string, unknown> } }

interface Waiter {
  resolve: (r: Reply) => void
  reject: (e: LlcommError) => void
}

export interface ProcessGroupOptions {
  ranks: number
  timeoutMs?: number
  bufferBytes?: number
  tuningTable?: string
}

export async function startProcessGroup(options: ProcessGroupOptions): Promise<ProcessGroupCommunicator> {
  const ranks = options.ranks
  if (!Number.isInteger(ranks) || ranks < 1 || ranks > 256) {
    throw new LlcommError('INVALID_ARGUMENT', `--ranks must be an integer in 1..256, got ${ranks}`)
  }
  const bufferBytes = options.bufferBytes ?? CPU_PROCESS_DEFAULTS.bufferBytes
  const layout = computeChannelLayout(ranks, bufferBytes)
  const table = loadTuningTable(options.tuningTable)
  const port = await findFreePort()
  const group = new ProcessGroupCommunicator(layout, table, options.timeoutMs ?? CPU_PROCESS_DEFAULTS.timeoutMs)
  const settings = JSON.stringify({
    ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
    bufferBytes,
    ...(options.tuningTable ? { tuningTable: options.tuningTable } : {}),
  })
  for (let rank = 0; rank < ranks; rank++) {
    group.add(
      fork(RANK_SCRIPT, [], {
        serialization: 'advanced',
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
        env: {
          ...process.env,
          [RENDEZVOUS_ENV.rank]: String(rank),
          [RENDEZVOUS_ENV.worldSize]: String(ranks),
          [RENDEZVOUS_ENV.address]: `tcp://127.0.0.1:${port}`,
          LLCOMM_BENCH_RANK_OPTIONS: settings,
        },
      }),
    )
  }
  try {
    const ready = await group.requestAll(() => undefined)
    const first = ready[0]
    if (first.t === 'ready') group.algorithms = first.algorithms
  } catch (e) {
    await group.destroy()
    throw e
  }
  return group
}

export class ProcessGroupCommunicator implements Communicator {
  readonly backend = 'cpu' as const
  algorithms: readonly AlgorithmChoice[] = ['auto', ...CPU_ALGORITHM_NAMES]
  private readonly children: ChildProcess[] = []
  private readonly waiters: Waiter[][] = []
  private readonly layout: ChannelLayout
  private readonly table: TuningTable
  private readonly timeoutMs: number
  private broken: LlcommError | undefined
  private closing = false
  private queue: Promise<unknown> = Promise.resolve()
  private readonly exited: Promise<void>[] = []

  constructor(layout: ChannelLayout, table: TuningTable, timeoutMs: number) {
    this.layout = layout
    this.table = table
    this.timeoutMs = timeoutMs
  }

  get size(): number {
    return this.layout.ranks
  }

  /** Process id of each rank's process, in rank order. */
  get pids(): number[] {
    return this.children.map((c) => c.pid ?? -1)
  }

  add(child: ChildProcess): void {
    const rank = this.children.length
    this.children.push(child)
    this.waiters.push([])
    // A send to a process that just died fails with EPIPE (see requestAll); the exit handler below names it.
    child.on('error', () => undefined)
    child.on('message', (m: Reply) => {
      const w = this.waiters[rank].shift()
      if (!w) return
      if (m.t === 'error') w.reject(LlcommError.fromJSON(m.error))
      else w.resolve(m)
    })
    this.exited.push(
      new Promise<void>((resolve) => {
        child.once('exit', (code, signal) => {
          if (!this.closing) {
            this.broken ??= new LlcommError(
              'PEER_FAILED',
              `bench rank ${rank} (pid ${child.pid}) exited (${signal ?? `code ${code}`})`,
              { peer: rank, code, signal },
            )
          }
          const error = this.broken ?? new LlcommError('CLOSED', 'the process group is closed')
          for (const w of this.waiters[rank].splice(0)) w.reject(error)
          resolve()
        })
      }),
    )
  }

  /** Sends `message(rank)` (nothing when undefined: just await the next reply) to every rank; replies in rank order. */
  requestAll(message: (rank: number) => unknown): Promise<Reply[]> {
    return Promise.all(
      this.children.map(
        (child, rank) =>
          new Promise<Reply>((resolve, reject) => {
            if (this.broken) {
              reject(this.broken)
              return
            }
            this.waiters[rank].push({ resolve, reject })
            const m = message(rank)
            if (m === undefined) return
            child.send(m as never, (e) => {
              if (!e) return
              reject(
                new LlcommError('PEER_FAILED', `bench rank ${rank} (pid ${child.pid}) is gone: ${e.message}`, {
                  peer: rank,
                }),
              )
            })
          }),
      ),
    )
  }

  private enqueue<R>(task: () => Promise<R>): Promise<R> {
    const run = this.queue.then(() => {
      if (this.closing) throw new LlcommError('CLOSED', 'the process group is closed')
      if (this.broken) throw this.broken
      return task()
    })
    this.queue = run.catch(() => undefined)
    return run
  }

  allReduce<T extends TensorArray>(inputs: T[], options?: AllReduceOptions): Promise<AllReduceOutputs<T>> {
    try {
      const validated = validateAllReduceOptions(options, this.algorithms)
      validateInputs(inputs, this.size, validated.dtype)
      return this.enqueue(async () => {
        const replies = await this.requestAll((rank) => ({ t: 'allreduce', input: inputs[rank], options }))
        const outputs = replies.map((r) => (r.t === 'allreduce' ? r.output : undefined)) as T[]
        const first = replies[0]
        const info: AllReduceInfo = first.t === 'allreduce' ? first.info : { algorithm: 'ring', chunks: 0 }
        return Object.assign(outputs, { info })
      })
    } catch (e) {
      return Promise.reject(e)
    }
  }

  benchmark(request: BenchmarkRequest): Promise<BenchmarkResult> {
    try {
      const r = validateBenchmarkRequest(request, this.algorithms)
      const resolved = resolveCpuAlgorithm(
        r.algorithm,
        { dtype: r.dtype, count: r.count, protocol: r.protocol, fallback: true },
        this.layout,
        this.table,
      )
      const seed = randomInt(0, 2 ** 32 - 1)
      return this.enqueue(async () => {
        const cmd = {
          algorithm: resolved.algorithm.name,
          dtype: r.dtype,
          count: r.count,
          iters: r.iters,
          warmup: r.warmup,
          skewUs: r.skewUs,
          computeUs: r.computeUs ?? 0,
          seed,
          driverTimeOriginMs: performance.timeOrigin,
        }
        const replies = await this.requestAll(() => ({ t: 'benchmark', cmd }))
        const perRank = replies.map((x) => (x.t === 'benchmark' ? x.result : undefined))
        return combineRankBenchmarks(perRank, r.iters, resolved)
      })
    } catch (e) {
      return Promise.reject(e)
    }
  }

  /** Asks every rank to close, waits for every process (SIGKILL past the deadline). Idempotent. */
  /** One allReduce per buffer, in order (the bench group has no one-launch form). */
  async allReduceMany<T extends TensorArray>(
    buffers: T[][],
    options?: AllReduceOptions,
  ): Promise<AllReduceOutputs<T>[]> {
    const out: AllReduceOutputs<T>[] = []
    for (const inputs of buffers) out.push(await this.allReduce(inputs, options))
    return out
  }

  /** A bench group does not recover in place: its ranks' epochs diverged; destroy it and open another. */
  async recover(): Promise<void> {
    throw new LlcommError(
      'INVALID_ARGUMENT',
      'a process group of llcomm bench cannot recover: destroy it and open another',
      {
        failure: this.broken?.message,
      },
    )
  }

  async close(): Promise<void> {
    await this.queue
    if (!this.closing) {
      this.closing = true
      for (const c of this.children) if (c.connected) c.send({ t: 'close' })
    }
    await this.waitForExits(this.timeoutMs + 5000)
  }

  /** Kills every rank process now and waits for them. Idempotent. */
  async destroy(): Promise<void> {
    this.closing = true
    for (const c of this.children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL')
    await this.waitForExits(5000)
  }

  private async waitForExits(ms: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined
    const all = Promise.all(this.exited).then(() => undefined)
    const late = new Promise<void>((resolve) => {
      timer = setTimeout(() => {
        for (const c of this.children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL')
        resolve()
      }, ms)
    })
    await Promise.race([all, late])
    clearTimeout(timer)
    await all
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close()
  }
}
