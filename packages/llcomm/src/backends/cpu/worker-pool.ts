/**
 * One worker thread per rank, each with a MessagePort and a mailbox (see worker-messages.ts). Workers and ports
 * are unref()'ed while idle, so an open communicator never keeps Node alive; a port is ref()'ed only while a
 * request on it is pending (an awaited call keeps the process alive until it settles).
 */
import { MessageChannel, type MessagePort, Worker } from 'node:worker_threads'
import { LlcommError } from '../../errors.js'
import type { ProtocolTestFaults } from '../../protocol/cpu/rank-protocol.js'
import { MAILBOX, MAILBOX_WORDS, type WorkerCommand, type WorkerInit, type WorkerResponse } from './worker-messages.js'

interface Pending {
  seq: number
  resolve: (r: WorkerResponse) => void
  reject: (e: Error) => void
}

interface RankWorker {
  rank: number
  worker: Worker
  port: MessagePort
  mailbox: Int32Array
  pending: Pending | undefined
  exited: Promise<void>
}

type CommandBody = WorkerCommand extends infer C ? (C extends { seq: number } ? Omit<C, 'seq'> : never) : never

export interface PoolOptions {
  ranks: number
  bufferBytes: number
  timeoutMs: number
  spinIterations: number
  channel: SharedArrayBuffer
  faults?: ProtocolTestFaults
}

const WORKER_URL = new URL('./worker.js', import.meta.url)

/**
 * The Node flags a rank worker starts with: the parent's process.execArgv minus those a worker thread refuses.
 * Node refuses per-process flags in a Worker's execArgv (ERR_WORKER_INVALID_EXEC_ARGV, e.g. --max-old-space-size,
 * --expose-gc, --stack-size, --jitless, --title, --abort-on-uncaught-exception) and --input-type outside
 * -e/--print/stdin. We keep every flag a worker accepts (--conditions, --loader/--import, --enable-source-maps,
 * --no-warnings, ...) so that module resolution and diagnostics match the parent, and drop the rest: the list of
 * refused flags comes from Node's own error message, learnt once per process.
 */
let refusedExecArgv: readonly string[] = []

export function workerExecArgv(parent: readonly string[] = process.execArgv): string[] {
  return parent.filter((a) => !a.startsWith('--input-type') && !refusedExecArgv.includes(a))
}

function startWorker(options: { workerData: unknown; transferList: MessagePort[] }): Worker {
  for (let attempt = 0; ; attempt++) {
    try {
      return new Worker(WORKER_URL, { ...options, execArgv: workerExecArgv() })
    } catch (e) {
      const code = (e as { code?: unknown }).code
      const message = e instanceof Error ? e.message : String(e)
      const listed = /flags: (.*)$/.exec(message)?.[1]?.split(', ')
      if (code === 'ERR_WORKER_INVALID_EXEC_ARGV' && attempt === 0) {
        // Node names the refused flags; without that list (another Node wording) start with no flags at all.
        refusedExecArgv = listed && listed.length > 0 ? [...refusedExecArgv, ...listed] : [...process.execArgv]
        continue
      }
      throw new LlcommError('WORKER_FAILED', `cannot start a rank worker: ${message}`, { code }, { cause: e })
    }
  }
}

export class WorkerPool {
  readonly size: number
  private readonly workers: RankWorker[] = []
  private seq = 0
  private failure: LlcommError | undefined
  private stopping = false

  private constructor(size: number) {
    this.size = size
  }

  /** Starts every worker and waits until each has built its rank state (and said so). */
  static async start(options: PoolOptions): Promise<WorkerPool> {
    const pool = new WorkerPool(options.ranks)
    const ready: Promise<WorkerResponse>[] = []
    for (let rank = 0; rank < options.ranks; rank++) {
      const { port1, port2 } = new MessageChannel()
      const mailbox = new SharedArrayBuffer(MAILBOX_WORDS * 4)
      const init: WorkerInit & { port: MessagePort } = {
        rank,
        ranks: options.ranks,
        bufferBytes: options.bufferBytes,
        timeoutMs: options.timeoutMs,
        spinIterations: options.spinIterations,
        channel: options.channel,
        mailbox,
        faults: options.faults,
        port: port2,
      }
      const worker = startWorker({ workerData: init, transferList: [port2] })
      const w: RankWorker = {
        rank,
        worker,
        port: port1,
        mailbox: new Int32Array(mailbox),
        pending: undefined,
        exited: new Promise((resolve) => worker.once('exit', () => resolve())),
      }
      pool.workers.push(w)
      port1.on('message', (m: WorkerResponse) => pool.onResponse(w, m))
      worker.on('error', (e) => pool.fail(w, `threw ${e instanceof Error ? e.message : String(e)}`))
      worker.on('exit', (code) => pool.fail(w, `exited with code ${code}`))
      worker.unref()
      ready.push(
        new Promise<WorkerResponse>((resolve, reject) => {
          w.pending = { seq: 0, resolve, reject }
        }),
      )
    }
    try {
      await Promise.all(ready)
    } catch (e) {
      await pool.terminate()
      throw e
    }
    for (const w of pool.workers) w.port.unref()
    return pool
  }

  /** The error that broke the pool (a dead worker), if any. */
  get broken(): LlcommError | undefined {
    return this.failure
  }

  private onResponse(w: RankWorker, m: WorkerResponse): void {
    const pending = w.pending
    if (!pending || pending.seq !== m.seq) return
    w.pending = undefined
    w.port.unref()
    w.worker.unref()
    pending.resolve(m)
  }

  private fail(w: RankWorker, what: string): void {
    if (this.stopping) return
    if (!this.failure) {
      this.failure = new LlcommError('WORKER_FAILED', `worker of rank ${w.rank} ${what}`, { rank: w.rank })
    }
    const failure = this.failure
    for (const other of this.workers) {
      const pending = other.pending
      other.pending = undefined
      other.port.unref()
      other.worker.unref()
      pending?.reject(failure)
    }
    // The survivors may be waiting on the dead rank: stop them rather than let them run into timeouts.
    void this.terminate()
  }

  /** Posts a command to one rank; resolves with its response. */
  request(rank: number, body: CommandBody): Promise<WorkerResponse> {
    if (this.failure) return Promise.reject(this.failure)
    const w = this.workers[rank]
    if (w.pending) return Promise.reject(new LlcommError('BUSY', `rank ${rank} already has a command in flight`))
    const seq = ++this.seq
    const command = { ...body, seq } as WorkerCommand
    return new Promise<WorkerResponse>((resolve, reject) => {
      w.pending = { seq, resolve, reject }
      // Keep the process alive while a request is pending (the port for the answer, the worker for its 'exit').
      w.port.ref()
      w.worker.ref()
      // Order: the message is queued on the port before the count changes (see MAILBOX in worker-messages.ts).
      w.port.postMessage(command)
      Atomics.add(w.mailbox, MAILBOX.REQUEST_COUNT, 1)
      Atomics.notify(w.mailbox, MAILBOX.REQUEST_COUNT)
    })
  }

  /** The same command (or one per rank) to every rank; resolves with all responses in rank order. */
  requestAll(body: CommandBody | ((rank: number) => CommandBody)): Promise<WorkerResponse[]> {
    return Promise.all(this.workers.map((w) => this.request(w.rank, typeof body === 'function' ? body(w.rank) : body)))
  }

  /** Asks every worker to leave its loop and waits for the threads to end. */
  async exit(): Promise<void> {
    if (!this.failure) {
      try {
        await this.requestAll({ kind: 'exit' })
      } catch {
        // a worker died meanwhile: terminate below
      }
    }
    await this.terminate()
  }

  /** Stops every worker now (also those blocked in Atomics.wait); idempotent. */
  async terminate(): Promise<void> {
    this.stopping = true
    for (const w of this.workers) {
      const pending = w.pending
      w.pending = undefined
      pending?.reject(new LlcommError('CLOSED', 'the communicator was destroyed'))
      w.port.close()
    }
    await Promise.all(this.workers.map((w) => w.worker.terminate().then(() => w.exited)))
  }
}
