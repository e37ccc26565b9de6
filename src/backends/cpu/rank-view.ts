/**
 * The per-rank view: code that runs inside each rank. The communicator hands out one plain, structured-cloneable
 * handle per rank (`comm.rankHandles()`); the user posts handle r into the worker that plays rank r and calls
 * `attachCpuRank(handle)` there. allReduce then blocks that thread (Atomics) until the collective is done.
 *
 * Contract: every rank calls allReduce the same number of times with the same count, dtype and options (as with
 * any collective); a rank that does not arrive makes its peers throw TIMEOUT. After a TIMEOUT, call reset() on
 * every rank once all of them have returned, then continue. A rank may be attached by one thread at a time
 * (a second attach throws BUSY until detach()).
 */

import type { TuningTable } from '../../algorithms/auto.js'
import { CPU_ALGORITHM_NAMES, resolveCpuAlgorithm } from '../../algorithms/cpu/resolve.js'
import type { AllReduceInfo, AllReduceOptions, TensorArray } from '../../api/types.js'
import { validateAllReduceOptions, validateRankInput } from '../../communicator/validate.js'
import { wordsForCount } from '../../dtype/codec.js'
import { LlcommError } from '../../errors.js'
import { CONTROL, controlIndex } from '../../protocol/cpu/layout.js'
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
  /** Recovery after a TIMEOUT: call on every rank once all have returned. */
  reset(): void
  /** Releases the rank so another thread may attach it. Idempotent. */
  detach(): void
}

export function attachCpuRank(handle: CpuRankHandle): CpuRank {
  if (handle?.kind !== 'llcomm.cpu-rank' || !(handle.channel instanceof SharedArrayBuffer)) {
    throw new LlcommError('INVALID_ARGUMENT', 'attachCpuRank needs a handle from comm.rankHandles()')
  }
  const i32 = new Int32Array(handle.channel)
  const attached = controlIndex(handle.rank, CONTROL.ATTACHED)
  if (Atomics.compareExchange(i32, attached, 0, 1) !== 0) {
    throw new LlcommError('BUSY', `rank ${handle.rank} is already attached by another thread`, { rank: handle.rank })
  }
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
      const validated = validateAllReduceOptions(options, available, { deterministic: handle.deterministic })
      const count = validateRankInput(input, validated.dtype)
      const resolved = resolveCpuAlgorithm(
        validated.algorithm,
        { ...validated, count },
        runner.protocol.layout,
        handle.tuningTable,
      )
      const n = wordsForCount(validated.dtype, count)
      const inputWords = words(n, 0)
      const outputWords = words(n, 1)
      writeWords(input, validated.dtype, inputWords)
      // An empty call still exchanges the call signature (one epoch), so a peer calling with more elements fails
      // with MISMATCH instead of this rank returning at once.
      const chunks = runner.allReduceWords(resolved.algorithm.name, validated.dtype, inputWords, outputWords, {
        count,
        protocol: validated.protocol,
      })
      const output = readWords(outputWords, validated.dtype, count) as T
      const info: AllReduceInfo = { algorithm: resolved.algorithm.name, chunks }
      if (resolved.fallbackReason) info.fallbackReason = resolved.fallbackReason
      return Object.assign(output, { info })
    },
    reset(): void {
      ensureUsable()
      runner.reset()
    },
    detach(): void {
      if (detached) return
      detached = true
      Atomics.store(i32, attached, 0)
    },
  }
}
