/**
 * Entry of a pool worker: one rank. Blocks in Atomics.wait on its mailbox between commands (so an idle pool
 * costs no CPU), runs each command synchronously, answers on its port.
 */
import { type MessagePort, receiveMessageOnPort, workerData } from 'node:worker_threads'
import { LlcommError } from '../../errors.js'
import { RankRunner } from './rank-runner.js'
import {
  MAILBOX,
  type SerializedError,
  type WorkerCommand,
  type WorkerInit,
  type WorkerResponse,
} from './worker-messages.js'

const init = workerData as WorkerInit & { port: MessagePort }
const mailbox = new Int32Array(init.mailbox)
const runner = new RankRunner({
  sab: init.channel,
  ranks: init.ranks,
  bufferBytes: init.bufferBytes,
  rank: init.rank,
  timeoutMs: init.timeoutMs,
  spinIterations: init.spinIterations,
  faults: init.faults,
})

function answer(response: WorkerResponse): void {
  init.port.postMessage(response)
  Atomics.add(mailbox, MAILBOX.RESPONSE_COUNT, 1)
}

function run(command: WorkerCommand): WorkerResponse {
  switch (command.kind) {
    case 'allreduce': {
      const base = init.rank * 2 * command.capacityWords * 4
      const input = new Int32Array(command.data, base, command.words)
      const output = new Int32Array(command.data, base + command.capacityWords * 4, command.words)
      const chunks = runner.allReduceWords(command.algorithm, command.dtype, input, output)
      return { seq: command.seq, ok: true, chunks }
    }
    case 'benchmark':
      return { seq: command.seq, ok: true, benchmark: runner.benchmark(command.benchmark) }
    case 'reset':
      runner.reset()
      return { seq: command.seq, ok: true }
    case 'skip':
    case 'exit':
      return { seq: command.seq, ok: true }
    case 'crash':
      process.exit(70)
  }
}

function toSerialized(e: unknown): SerializedError {
  if (e instanceof LlcommError) return e.toJSON()
  const message = e instanceof Error ? `${e.name}: ${e.message}` : String(e)
  return { code: 'WORKER_FAILED', message: `rank ${init.rank} failed: ${message}`, details: { rank: init.rank } }
}

let seen = Atomics.load(mailbox, MAILBOX.REQUEST_COUNT)
answer({ seq: 0, ok: true })
for (;;) {
  // Idle wait in slices; not a protocol wait (no peer is expected), so it has no deadline.
  Atomics.wait(mailbox, MAILBOX.REQUEST_COUNT, seen, 60_000)
  const now = Atomics.load(mailbox, MAILBOX.REQUEST_COUNT)
  if (now === seen) continue
  seen = now
  let received = receiveMessageOnPort(init.port)
  let exit = false
  while (received !== undefined) {
    const command = received.message as WorkerCommand
    let response: WorkerResponse
    try {
      response = run(command)
    } catch (e) {
      response = { seq: command.seq, ok: false, error: toSerialized(e) }
    }
    answer(response)
    if (command.kind === 'exit') exit = true
    received = receiveMessageOnPort(init.port)
  }
  if (exit) break
}
init.port.close()
