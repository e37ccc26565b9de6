/**
 * The driver <-> worker mailbox. Commands travel as messages on a dedicated MessagePort; the wake-up travels
 * through a shared Int32Array with named slots (after piscina):
 *
 *   MAILBOX.REQUEST_COUNT  driver: port.postMessage(command) THEN Atomics.add + Atomics.notify.
 *                          worker: Atomics.wait until the count changes THEN receiveMessageOnPort.
 *                          The post happens before the add, so a worker that sees the new count finds the message
 *                          already queued on its port.
 *   MAILBOX.RESPONSE_COUNT worker: postMessage(response) THEN Atomics.add (diagnostics: how many answered).
 *
 * Bulk data (inputs and outputs) lives in a data SharedArrayBuffer named by the command: the driver writes the
 * inputs before posting the command and reads the outputs after receiving the response (the port's message
 * passing orders them).
 */
import type { AlgorithmName, Dtype } from '../../api/types.js'
import type { LlcommErrorCode } from '../../errors.js'
import type { ProtocolTestFaults } from '../../protocol/cpu/rank-protocol.js'
import type { RankBenchmarkCommand } from './rank-runner.js'

export const MAILBOX = {
  REQUEST_COUNT: 0,
  RESPONSE_COUNT: 1,
} as const
export const MAILBOX_WORDS = 2

export interface WorkerInit {
  rank: number
  ranks: number
  bufferBytes: number
  timeoutMs: number
  spinIterations: number
  channel: SharedArrayBuffer
  mailbox: SharedArrayBuffer
  faults?: ProtocolTestFaults
}

/** Per-rank data regions: input words at rank * 2 * capacityWords, output words right after. */
export interface DataRegion {
  data: SharedArrayBuffer
  capacityWords: number
}

export type WorkerCommand =
  | ({ kind: 'allreduce'; seq: number; algorithm: AlgorithmName; dtype: Dtype; words: number } & DataRegion)
  | { kind: 'benchmark'; seq: number; benchmark: RankBenchmarkCommand }
  | { kind: 'reset'; seq: number }
  /** Test hook: this rank does nothing for this call (a rank that never arrives). */
  | { kind: 'skip'; seq: number }
  /** Test hook: the worker dies. */
  | { kind: 'crash'; seq: number }
  | { kind: 'exit'; seq: number }

export interface SerializedError {
  code: LlcommErrorCode
  message: string
  details: Record<string, unknown>
}

export type WorkerResponse =
  | {
      seq: number
      ok: true
      chunks?: number
      benchmark?: { arrivalsMs: Float64Array; finishesMs: Float64Array; wrong: number; checkedIterations: number }
    }
  | { seq: number; ok: false; error: SerializedError }
