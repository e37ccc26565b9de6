/**
 * The communicator base of both backends (after undici's DispatcherBase): lifecycle, the call queue, close vs
 * destroy, poisoning and recovery are written once here; a backend supplies only what is its own (kPrepare*, kRun*,
 * kClose, kDestroy, kRecover).
 *
 * States: open → closing (close() called: no new calls, queued ones still run) → closed (drained, resources freed);
 * any state → destroyed (destroy(): queued calls reject with CLOSED, in-flight work is aborted, resources freed).
 * close() and destroy() are idempotent and awaitable: a second call returns the first call's promise; destroy()
 * during close() aborts what close() was draining, and close() after destroy() returns destroy()'s promise.
 *
 * Queue: calls run one at a time in submission order (FIFO), so every rank sees the same sequence of calls and no
 * two calls share an epoch sequence. A call is validated, resolved and its inputs copied at submission (kPrepare*,
 * synchronous): later changes to the caller's arrays do not reach the result, and a bad call rejects before it is
 * queued (it poisons nothing).
 *
 * Poisoning: when a queued call fails in the collective itself (TIMEOUT, MISMATCH, WORKER_FAILED, a device error),
 * the communicator is poisoned: every call queued behind it and every later call rejects with an error of the same
 * code (details.poisonedBy = the first failure) and no data, until recover(). recover() is queued like a call (so it
 * runs once every earlier call has finished), has the backend bring every rank back to its initial state (buffers
 * re-armed, epochs agreed at 0; kRecover), then clears the poison. It needs no barrier of the user's own. recover()
 * on a communicator that is not poisoned re-arms it the same way (harmless).
 *
 * Errors: everything that leaves a public method is an LlcommError (toLlcommError wraps the rest).
 */
import type {
  AlgorithmChoice,
  AllReduceOptions,
  AllReduceOutputs,
  Backend,
  BenchmarkRequest,
  BenchmarkResult,
  Communicator,
  TensorArray,
} from '../api/types.js'
import { LlcommError, type LlcommErrorCode, toLlcommError } from '../errors.js'

export type CommunicatorState = 'open' | 'closing' | 'closed' | 'destroyed'

/** A call ready to run: validated, resolved, inputs copied (made at submission by kPrepare*). */
export type PreparedCall<R> = () => Promise<R>

/** Codes of failures that leave the ranks out of step, so that later calls must not run before recover(). */
const POISONING_CODES: readonly LlcommErrorCode[] = [
  'TIMEOUT',
  'MISMATCH',
  'WORKER_FAILED',
  'CUDA_ERROR',
  'NCCL_ERROR',
  'INTERNAL',
]

export abstract class CommunicatorBase implements Communicator {
  abstract readonly backend: Backend
  abstract readonly size: number
  abstract readonly algorithms: readonly AlgorithmChoice[]

  #state: CommunicatorState = 'open'
  /** The last queued task (its failure swallowed): the next one runs after it. */
  #tail: Promise<unknown> = Promise.resolve()
  #closing: Promise<void> | undefined
  #destroying: Promise<void> | undefined
  #poison: LlcommError | undefined

  get state(): CommunicatorState {
    return this.#state
  }

  /** The failure that poisoned the communicator (see the header), until recover(). */
  get failure(): LlcommError | undefined {
    return this.#poison
  }

  /** Validates, resolves and copies the inputs now; returns the call to run when its turn comes. */
  protected abstract kPrepareAllReduce<T extends TensorArray>(
    inputs: T[],
    options: AllReduceOptions | undefined,
  ): PreparedCall<AllReduceOutputs<T>>
  protected abstract kPrepareBenchmark(request: BenchmarkRequest): PreparedCall<BenchmarkResult>
  /** Frees every resource once the queue has drained. */
  protected abstract kClose(): Promise<void>
  /** Aborts in-flight work (ranks blocked in a call get CLOSED) and frees every resource. */
  protected abstract kDestroy(): Promise<void>
  /** Brings every rank back to its initial state (every rank idle: no call is running). */
  protected abstract kRecover(): Promise<void>
  /** An error that makes the communicator unusable beyond recovery, checked at submission (none by default). */
  protected kUnusable(): LlcommError | undefined {
    return undefined
  }

  /** Throws CLOSED unless open; the poison (see the header) if poisoned. */
  protected assertUsable(): void {
    if (this.#state !== 'open') {
      throw new LlcommError('CLOSED', `the communicator is ${this.#state}`, { state: this.#state })
    }
    const unusable = this.kUnusable()
    if (unusable) throw unusable
    if (this.#poison) throw poisoned(this.#poison)
  }

  /** Submits a call: prepared now (errors reject at once and poison nothing), run in FIFO order. */
  protected submit<R>(prepare: () => PreparedCall<R>, what: string): Promise<R> {
    let run: PreparedCall<R>
    try {
      this.assertUsable()
      run = prepare()
    } catch (e) {
      return Promise.reject(toLlcommError(e, what))
    }
    return this.enqueue(async () => {
      if (this.#poison) throw poisoned(this.#poison)
      try {
        return await run()
      } catch (e) {
        const error = toLlcommError(e, what)
        if (this.#state === 'destroyed') throw new LlcommError('CLOSED', 'the communicator was destroyed')
        if (POISONING_CODES.includes(error.code)) this.#poison ??= error
        throw error
      }
    })
  }

  /** Runs `task` after every task queued before it; rejects with CLOSED once destroyed. */
  private enqueue<R>(task: () => Promise<R>): Promise<R> {
    const run = this.#tail.then(() => {
      if (this.#state === 'destroyed') throw new LlcommError('CLOSED', 'the communicator was destroyed')
      return task()
    })
    this.#tail = run.catch(() => undefined)
    return run
  }

  allReduce<T extends TensorArray>(inputs: T[], options?: AllReduceOptions): Promise<AllReduceOutputs<T>> {
    return this.submit(() => this.kPrepareAllReduce(inputs, options), 'allReduce')
  }

  /**
   * Several AllReduces as one queued call (issue 21): every buffer is validated, resolved and copied at submission,
   * then they run back to back with nothing of another call between them, each exactly as allReduce runs it, so
   * the results are bit-identical to one allReduce per buffer. A backend with a one-launch form overrides this.
   */
  allReduceMany<T extends TensorArray>(buffers: T[][], options?: AllReduceOptions): Promise<AllReduceOutputs<T>[]> {
    return this.submit(() => {
      if (!Array.isArray(buffers) || buffers.length === 0)
        throw new LlcommError('INVALID_ARGUMENT', 'allReduceMany needs a non-empty array of buffers (buffers[b][rank])')
      const calls = buffers.map((inputs) => this.kPrepareAllReduce(inputs, options))
      return async () => {
        const out: AllReduceOutputs<T>[] = []
        for (const run of calls) out.push(await run())
        return out
      }
    }, 'allReduceMany')
  }

  benchmark(request: BenchmarkRequest): Promise<BenchmarkResult> {
    return this.submit(() => this.kPrepareBenchmark(request), 'benchmark')
  }

  /**
   * Recovery after a failed call (see the header): queued behind every earlier call, re-arms every rank, clears the
   * poison. Rejects with CLOSED when closing/closed/destroyed; with the backend's error if the re-arm itself fails
   * (the communicator then stays poisoned).
   */
  recover(): Promise<void> {
    if (this.#state !== 'open') {
      return Promise.reject(new LlcommError('CLOSED', `the communicator is ${this.#state}`, { state: this.#state }))
    }
    return this.enqueue(async () => {
      try {
        await this.kRecover()
      } catch (e) {
        const error = toLlcommError(e, 'recover')
        this.#poison ??= error
        throw error
      }
      this.#poison = undefined
    })
  }

  /** Drains queued calls, then frees every resource. Idempotent and awaitable. */
  close(): Promise<void> {
    if (this.#destroying) return this.#destroying
    if (!this.#closing) {
      this.#state = 'closing'
      this.#closing = (async () => {
        await this.#tail
        if (this.#destroying) return this.#destroying
        try {
          await this.kClose()
        } catch (e) {
          throw toLlcommError(e, 'close')
        } finally {
          if (this.#state === 'closing') this.#state = 'closed'
        }
      })()
    }
    return this.#closing
  }

  /** Aborts in-flight work and frees every resource. Idempotent and awaitable. */
  destroy(): Promise<void> {
    if (!this.#destroying) {
      this.#state = 'destroyed'
      this.#destroying = (async () => {
        try {
          await this.kDestroy()
        } catch (e) {
          throw toLlcommError(e, 'destroy')
        }
      })()
    }
    return this.#destroying
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close()
  }
}

/** The error a call gets while the communicator is poisoned: the first failure's code, named as such. */
function poisoned(first: LlcommError): LlcommError {
  return new LlcommError(
    first.code,
    `an earlier call failed (${first.message}); no call runs until recover()`,
    { ...first.details, poisonedBy: first.toJSON() },
    { cause: first },
  )
}
