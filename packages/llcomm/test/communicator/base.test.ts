// The communicator base (src/communicator/base.ts) on a fake backend: states, FIFO order, close drains / destroy
// aborts (both idempotent and awaitable), validation errors reject at submission and poison nothing, a failed
// collective poisons queued and later calls until recover(), and every error that leaves is an LlcommError.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import type {
  AllReduceOptions,
  AllReduceOutputs,
  BenchmarkRequest,
  BenchmarkResult,
  TensorArray,
} from '../../src/api/types.js'
import { CommunicatorBase, type PreparedCall } from '../../src/communicator/base.js'
import { isLlcommError, LlcommError } from '../../src/errors.js'

class FakeCommunicator extends CommunicatorBase {
  readonly backend = 'cpu' as const
  readonly size = 1
  readonly algorithms = ['auto'] as const
  readonly log: string[] = []
  /** The next run fails with this (once). */
  failNext: unknown
  /** Runs wait for this before finishing (to hold calls in flight). */
  gate: Promise<void> = Promise.resolve()
  recovers = 0
  closes = 0
  destroys = 0

  protected kPrepareAllReduce<T extends TensorArray>(
    inputs: T[],
    options: AllReduceOptions | undefined,
  ): PreparedCall<AllReduceOutputs<T>> {
    if (options?.dtype === ('bad' as never)) throw new LlcommError('UNSUPPORTED_DTYPE', 'bad dtype')
    if (options?.op === ('raw' as never)) throw new TypeError('a raw error at submission')
    const copy = inputs.map((x) => x.slice() as T)
    const id = this.log.length
    this.log.push(`submit ${id}`)
    return async () => {
      await this.gate
      const fail = this.failNext
      this.failNext = undefined
      if (fail) throw fail
      this.log.push(`run ${id}`)
      return Object.assign(copy, { info: { algorithm: 'ring' as const, chunks: 1 } })
    }
  }
  protected kPrepareBenchmark(_: BenchmarkRequest): PreparedCall<BenchmarkResult> {
    return async () => ({ algorithm: 'ring', timesUs: [], skewWaitUs: [], wrong: 0 })
  }
  protected async kClose(): Promise<void> {
    this.closes++
  }
  protected async kDestroy(): Promise<void> {
    this.destroys++
  }
  protected async kRecover(): Promise<void> {
    this.recovers++
  }
}

const one = () => [Float32Array.of(1)]

test('calls run in submission order; inputs are taken at submission', async () => {
  const c = new FakeCommunicator()
  const x = Float32Array.of(5)
  const calls = [c.allReduce([x]), c.allReduce(one()), c.allReduce(one())]
  x[0] = 99
  const [first] = await Promise.all(calls)
  assert.equal(first[0][0], 5)
  assert.deepEqual(c.log, ['submit 0', 'submit 1', 'submit 2', 'run 0', 'run 1', 'run 2'])
  await c.close()
})

test('validation errors reject at submission and poison nothing; raw errors become LlcommErrors', async () => {
  const c = new FakeCommunicator()
  await assert.rejects(c.allReduce(one(), { dtype: 'bad' as never }), (e) => isLlcommError(e, 'UNSUPPORTED_DTYPE'))
  await assert.rejects(c.allReduce(one(), { op: 'raw' as never }), (e) => isLlcommError(e, 'INTERNAL'))
  c.failNext = new RangeError('Array buffer allocation failed')
  await assert.rejects(c.allReduce(one()), (e) => isLlcommError(e, 'OUT_OF_MEMORY'))
  assert.equal(c.failure, undefined, 'an allocation failure does not leave the ranks out of step')
  await c.allReduce(one())
  await c.close()
})

test('a failed collective poisons queued and later calls until recover()', async () => {
  const c = new FakeCommunicator()
  let open: () => void = () => {}
  c.gate = new Promise((resolve) => {
    open = resolve
  })
  c.failNext = LlcommError.timeout({ rank: 0, peer: 1, epoch: 3 })
  const failing = c.allReduce(one())
  const queued = c.allReduce(one())
  open()
  await assert.rejects(failing, (e) => isLlcommError(e, 'TIMEOUT'))
  await assert.rejects(queued, (e) => isLlcommError(e, 'TIMEOUT') && e.details.poisonedBy !== undefined)
  await assert.rejects(c.allReduce(one()), (e) => isLlcommError(e, 'TIMEOUT'))
  assert.equal(c.failure?.code, 'TIMEOUT')
  await c.recover()
  assert.equal(c.recovers, 1)
  assert.equal(c.failure, undefined)
  await c.allReduce(one())
  await c.close()
})

test('close() drains and is idempotent; destroy() aborts queued calls; both awaitable; CLOSED afterwards', async () => {
  const c = new FakeCommunicator()
  let open: () => void = () => {}
  c.gate = new Promise((resolve) => {
    open = resolve
  })
  const inFlight = c.allReduce(one())
  const closing = c.close()
  assert.equal(c.close(), closing, 'the same promise')
  assert.equal(c.state, 'closing')
  await assert.rejects(c.allReduce(one()), (e) => isLlcommError(e, 'CLOSED'))
  await assert.rejects(c.recover(), (e) => isLlcommError(e, 'CLOSED'))
  open()
  await inFlight
  await closing
  assert.equal(c.state, 'closed')
  assert.equal(c.closes, 1)

  const d = new FakeCommunicator()
  d.gate = new Promise(() => {}) // never finishes by itself
  const stuck = d.allReduce(one())
  const queued = d.allReduce(one())
  const destroying = d.destroy()
  assert.equal(d.destroy(), destroying)
  assert.equal(d.close(), destroying, 'close after destroy returns destroy')
  await destroying
  assert.equal(d.state, 'destroyed')
  assert.equal(d.destroys, 1)
  await assert.rejects(queued, (e) => isLlcommError(e, 'CLOSED'))
  void stuck.catch(() => undefined)
})
