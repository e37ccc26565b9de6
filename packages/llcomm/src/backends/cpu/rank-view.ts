/**
 * The per-rank view: code that runs inside each rank. The communicator hands out one plain, structured-cloneable
 * handle per rank (`comm.rankHandles()`); the user posts handle r into the worker that plays rank r and calls
 * `attachCpuRank(handle)` there. allReduce then blocks that thread (Atomics) until the collective is done.
 *
 * Contract: every rank calls allReduce the same number of times with the same count, dtype and options (as with
 * any collective); a rank that does not arrive makes its peers throw TIMEOUT.
 *
 * Failure and recovery: a call that fails on any rank poisons the channel (CONTROL.POISONED): peers blocked in that
 * call stop at once with the same code, and no rank's current or later call returns data. Recovery is one call,
 * `recover()`, on every rank once its allReduce has thrown (a rank that had already returned from the failed call
 * gets the error at its next call): it needs no barrier of the user's own, since it brings the ranks together
 * itself (two arrivals per rank on CONTROL.RECOVERY_ARRIVALS, each wait bounded by timeoutMs), re-arms this rank's
 * buffers and epoch between them and clears the poison. A worker that dies (throws or process.exit() with a non-zero
 * code) is seen by the library through the worker's 'exit' event: it poisons the channel with WORKER_FAILED and
 * releases the rank, which a new worker may then attach; that worker calls recover() with the others. A worker
 * ended with worker.terminate() runs no code: its peers see TIMEOUT and its rank stays attached.
 *
 * A rank may be attached by one thread at a time (a second attach throws BUSY until detach()). Closing or
 * destroying the communicator makes every call fail with CLOSED, also a call blocked in a wait at that moment.
 */

import type { TuningTable } from '../../algorithms/auto.js'
import { CPU_ALGORITHM_NAMES, resolveCpuAlgorithm } from '../../algorithms/cpu/resolve.js'
import type { AllReduceInfo, AllReduceOptions, TensorArray } from '../../api/types.js'
import { validateAllReduceOptions, validateRankInput } from '../../communicator/validate.js'
import { wordsForCount } from '../../dtype/codec.js'
import { isCallRefusal, LlcommError } from '../../errors.js'
import { encodeRefusedSignature } from '../../protocol/call-signature.js'
import { CONTROL, computeChannelLayout, controlIndex, POISON_KIND } from '../../protocol/cpu/layout.js'
import { wakeEveryRank } from '../../protocol/cpu/wait.js'
import { RankRunner } from './rank-runner.js'
import { readWords, writeWords } from './tensor-words.js'

export interface CpuRankHandle {
  kind: 'llcomm.cpu-rank'
  rank: number
  ranks: number
  bufferBytes: number
  timeoutMs: number
  spinIterations: number
  channel: SharedArrayBuffer
  tuningTable: TuningTable
  /** The communicator's `deterministic` default (absent in handles of older versions: false). */
  deterministic?: boolean
}

export type RankAllReduceResult<T extends TensorArray> = T & { info: AllReduceInfo }

export interface CpuRank {
  readonly rank: number
  readonly size: number
  /** Blocking all-reduce of this rank's input; returns this rank's output (same type) with `.info`. */
  allReduce<T extends TensorArray>(input: T, options?: AllReduceOptions): RankAllReduceResult<T>
  /** Recovery after any failed call (see the header): call on every rank; no barrier of your own needed. */
  recover(): void
  /** The same as recover() (the name of earlier versions). */
  reset(): void
  /** Releases the rank so another thread may attach it. Idempotent. */
  detach(): void
}

export function attachCpuRank(handle: CpuRankHandle): CpuRank {
  checkHandle(handle)
  const i32 = new Int32Array(handle.channel)
  if (Atomics.load(i32, controlIndex(0, CONTROL.CHANNEL_CLOSED)) !== 0) {
    throw new LlcommError('CLOSED', 'the communicator that made this rank handle is closed')
  }
  const attached = controlIndex(handle.rank, CONTROL.ATTACHED)
  if (Atomics.compareExchange(i32, attached, 0, 1) !== 0) {
    throw new LlcommError('BUSY', `rank ${handle.rank} is already attached by another thread`, { rank: handle.rank })
  }
  // A dying worker (uncaught exception, process.exit(code != 0)) still runs 'exit' listeners: tell the peers
  // (WORKER_FAILED, they stop waiting at once) and free the rank for a new worker.
  const onExit = (code: number): void => {
    if (code !== 0) {
      Atomics.store(i32, controlIndex(0, CONTROL.POISON_RANK), handle.rank)
      Atomics.compareExchange(i32, controlIndex(0, CONTROL.POISONED), 0, POISON_KIND.WORKER_FAILED)
      wakeEveryRank(i32, handle.ranks)
    }
    Atomics.store(i32, attached, 0)
  }
  process.once('exit', onExit)
  const runner = new RankRunner({
    sab: handle.channel,
    ranks: handle.ranks,
    bufferBytes: handle.bufferBytes,
    rank: handle.rank,
    timeoutMs: handle.timeoutMs,
    spinIterations: handle.spinIterations,
  })
  const available = ['auto' as const, ...CPU_ALGORITHM_NAMES]
  let detached = false
  let scratch = new Int32Array(0)
  const words = (n: number, which: 0 | 1): Int32Array => {
    if (scratch.length < 2 * n) scratch = new Int32Array(2 * n)
    return scratch.subarray(which * n, which * n + n)
  }
  const ensureUsable = (): void => {
    if (detached) throw new LlcommError('CLOSED', `rank ${handle.rank} was detached`)
    if (Atomics.load(i32, controlIndex(0, CONTROL.CHANNEL_CLOSED)) !== 0) {
      throw new LlcommError('CLOSED', 'the communicator that made this rank handle is closed')
    }
  }
  return {
    rank: handle.rank,
    size: handle.ranks,
    allReduce<T extends TensorArray>(input: T, options?: AllReduceOptions): RankAllReduceResult<T> {
      ensureUsable()
      // Poisoned by an earlier failure (of any rank): no call runs until recover(). A MISMATCH poison is left to the
      // runner (RankRunner.allReduceWords): the failed call's own signature check names the odd rank.
      if (runner.protocol.control.poisonKind() !== POISON_KIND.MISMATCH) runner.protocol.control.checkAbort(-1)
      let validated: ReturnType<typeof validateAllReduceOptions>
      let count: number
      let resolved: ReturnType<typeof resolveCpuAlgorithm>
      try {
        validated = validateAllReduceOptions(options, available, { deterministic: handle.deterministic })
        count = validateRankInput(input, validated.dtype)
        resolved = resolveCpuAlgorithm(
          validated.algorithm,
          { ...validated, count },
          runner.protocol.layout,
          handle.tuningTable,
        )
      } catch (e) {
        // A call this rank refuses still takes its epoch, with the refused signature and no data (the per-process
        // communicators' rule, docs/protocols.md): its peers, who made the call, throw MISMATCH naming it instead of
        // meeting this rank's next call; ranks that all refuse alike match. A MISMATCH there poisons the channel
        // (RankRunner), as any mismatched call; the refusal is this call's report either way.
        if (isCallRefusal(e)) {
          try {
            runner.signatureEpoch(...encodeRefusedSignature())
          } catch {
            // recorded: the channel is poisoned, every rank's next call reports it
          }
        }
        throw e
      }
      const n = wordsForCount(validated.dtype, count)
      const inputWords = words(n, 0)
      const outputWords = words(n, 1)
      writeWords(input, validated.dtype, inputWords)
      const chunks =
        // An empty call still exchanges the call signature (one epoch), so a peer calling with more elements fails
        // with MISMATCH instead of this rank returning at once.
        runner.allReduceWords(resolved.algorithm.name, validated.dtype, inputWords, outputWords, {
          count,
          protocol: validated.protocol,
        })
      const output = readWords(outputWords, validated.dtype, count) as T
      const info: AllReduceInfo = { algorithm: resolved.algorithm.name, chunks }
      if (resolved.fallbackReason) info.fallbackReason = resolved.fallbackReason
      return Object.assign(output, { info })
    },
    recover(): void {
      ensureUsable()
      recoverRank(runner, handle, i32)
    },
    reset(): void {
      ensureUsable()
      recoverRank(runner, handle, i32)
    },
    detach(): void {
      if (detached) return
      detached = true
      process.removeListener('exit', onExit)
      Atomics.store(i32, attached, 0)
    },
  }
}

/** A handle as rankHandles() makes it (a forged or damaged one is INVALID_ARGUMENT, never a RangeError later). */
function checkHandle(handle: CpuRankHandle): void {
  const ok =
    handle !== null &&
    typeof handle === 'object' &&
    handle.kind === 'llcomm.cpu-rank' &&
    handle.channel instanceof SharedArrayBuffer &&
    Number.isInteger(handle.ranks) &&
    handle.ranks >= 1 &&
    Number.isInteger(handle.rank) &&
    handle.rank >= 0 &&
    handle.rank < handle.ranks &&
    Number.isInteger(handle.bufferBytes) &&
    typeof handle.timeoutMs === 'number' &&
    handle.timeoutMs > 0 &&
    Number.isInteger(handle.spinIterations) &&
    handle.spinIterations >= 0 &&
    handle.tuningTable !== null &&
    typeof handle.tuningTable === 'object' &&
    Array.isArray(handle.tuningTable.entries)
  if (!ok) throw new LlcommError('INVALID_ARGUMENT', 'attachCpuRank needs a handle from comm.rankHandles()')
  let layout: ReturnType<typeof computeChannelLayout>
  try {
    layout = computeChannelLayout(handle.ranks, handle.bufferBytes)
  } catch {
    throw new LlcommError('INVALID_ARGUMENT', 'attachCpuRank: the handle names an impossible channel layout')
  }
  if (layout.totalBytes !== handle.channel.byteLength) {
    throw new LlcommError(
      'INVALID_ARGUMENT',
      `attachCpuRank: the handle's channel holds ${handle.channel.byteLength} bytes, its layout needs ${layout.totalBytes}`,
    )
  }
}

/**
 * The recovery of one rank (see the header). Phase 1: arrive, wait until every rank has arrived: every rank is
 * then out of its calls (idle), so nobody writes into our buffers while we re-arm them. Re-arm our buffers, barrier
 * count and epoch, and clear the poison: every rank's clear happens before its phase-2 arrival, so before any rank
 * leaves phase 2 and could poison again. Phase 2: arrive, wait for every rank: every rank has re-armed, so the next
 * call finds every receive buffer in its initial state and every epoch at 0. The generation comes from the count
 * itself (two arrivals per rank per recovery), so a newly attached rank joins the right one.
 */
function recoverRank(runner: RankRunner, handle: CpuRankHandle, i32: Int32Array): void {
  const n = handle.ranks
  const index = controlIndex(0, CONTROL.RECOVERY_ARRIVALS)
  const mine = Atomics.add(i32, index, 1)
  const generation = Math.floor(mine / (2 * n))
  // A peer may still be in the failed call, in a wait of up to timeoutMs (a rank that skipped a call or failed
  // early arrives here long before the ranks that time out): twice the deadline, and a margin.
  const deadline = performance.now() + 2 * handle.timeoutMs + 1000
  const waitFor = (target: number, phase: number): void => {
    for (let seen = Atomics.load(i32, index); seen - target < 0; seen = Atomics.load(i32, index)) {
      if (Atomics.load(i32, controlIndex(0, CONTROL.CHANNEL_CLOSED)) !== 0) {
        throw new LlcommError('CLOSED', 'the communicator that made this rank handle is closed')
      }
      const leftMs = deadline - performance.now()
      if (leftMs <= 0) {
        // In phase 1 take our arrival back while nobody has passed (the count is below the target), so that a
        // later recover() of this rank joins the same generation. CAS: a last arrival racing with us wins.
        if (phase === 1 && Atomics.compareExchange(i32, index, seen, seen - 1) !== seen) continue
        throw LlcommError.timeout({
          rank: handle.rank,
          peer: -1,
          epoch: runner.protocol.control.epoch,
          waitingFor: `recovery phase ${phase}: ${seen - generation * 2 * n - (phase - 1) * n} of ${n} ranks arrived`,
        })
      }
      // The adds below notify; a bounded slice as well, so that a missed wake costs at most 50 ms.
      Atomics.wait(i32, index, seen, Math.min(leftMs, 50))
    }
  }
  Atomics.notify(i32, index)
  waitFor(generation * 2 * n + n, 1)
  runner.reset()
  runner.protocol.control.clearPoison()
  // SC add after the re-arm and the clear: a peer that sees our phase-2 arrival sees both.
  Atomics.add(i32, index, 1)
  Atomics.notify(i32, index)
  waitFor(generation * 2 * n + 2 * n, 2)
}
