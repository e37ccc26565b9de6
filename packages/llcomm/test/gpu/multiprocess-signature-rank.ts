// One rank of test/gpu/multiprocess-signature.test.ts (not a test file): a per-process cuda communicator on device
// $LLCOMM_TEST_DEVICE (default 0), then, from $LLCOMM_TEST_CASE ({main, odd, delayMs, timeoutMs}):
//   1. the main call and the odd call on every rank (matching calls: the kernels are loaded and both calls' channel
//      epochs advance, so the failed call is at epoch 3 on channel 0, not 1), each output checked;
//   2. the mismatched call: the last rank makes the odd call (after delayMs), every other rank the main call; with
//      odd = null the last rank makes no call at all;
//   3. close() once 2 x timeoutMs + 2 s have passed since the call began on every rank: a rank that failed at once
//      (the odd one) must not free the buffers its peers map while their kernels still run to their deadline (their
//      aborted threads still store into them), and close()'s barrier (timeoutMs) then sees every rank arrive.
// Prints one `RESULT {...}` line: the warm-up's problems and the mismatched call's error (code, message, details).
import type { AlgorithmName, Dtype, TensorArray } from '../../src/api/types.js'
import type { CudaProcessCommunicator } from '../../src/backends/cuda/process-communicator.js'
import { createCommunicator } from '../../src/create.js'
import { DTYPE_CODECS } from '../../src/dtype/index.js'
import { LlcommError } from '../../src/errors.js'
import { errorInfo } from '../support/error-info.js'

export interface SignatureCall {
  algorithm: AlgorithmName
  dtype: Dtype
  count: number
}
export interface SignatureCase {
  main: SignatureCall
  /** null: the last rank never makes the call (a TIMEOUT that must stay one). */
  odd: SignatureCall | null
  /** The odd rank waits this long before its mismatched call (its packet arrives after the peers' looks). */
  delayMs: number
  timeoutMs: number
  /** After the mismatched call: recover() on every rank, then the main call again (its output checked). */
  recover?: boolean
}

const rank = Number(process.env.LLCOMM_RANK)

/** A call its rank refuses (no such dtype): per process it publishes the refused signature alone. */
export const refusedCall = (call: SignatureCall | null) => call !== null && !['f32', 'f16', 'bf16'].includes(call.dtype)

function ones(call: SignatureCall): TensorArray {
  if (refusedCall(call)) return new Float32Array(call.count)
  const one = DTYPE_CODECS[call.dtype].encodeLane(1)
  return call.dtype === 'f32' ? new Float32Array(call.count).fill(1) : new Uint16Array(call.count).fill(one)
}

async function main(): Promise<void> {
  const c = JSON.parse(process.env.LLCOMM_TEST_CASE ?? '{}') as SignatureCase
  const comm = (await createCommunicator({
    backend: 'cuda',
    rendezvous: 'env',
    device: Number(process.env.LLCOMM_TEST_DEVICE ?? 0),
    timeoutMs: c.timeoutMs,
    rendezvousTimeoutMs: 120_000,
  })) as CudaProcessCommunicator
  const odd = comm.size - 1
  const problems: string[] = []
  const run = (call: SignatureCall) =>
    comm.allReduce(ones(call), { algorithm: call.algorithm, dtype: call.dtype, fallback: false })
  for (const call of c.odd ? [c.main, c.odd] : [c.main]) {
    if (refusedCall(call)) {
      // refused alike on every rank: each gets the typed error, the refused signatures match, nothing fails after
      try {
        await run(call)
        problems.push(`warm-up ${call.dtype}: not refused`)
      } catch (e) {
        if (!(e instanceof LlcommError) || e.code !== 'UNSUPPORTED_DTYPE')
          problems.push(`warm-up ${call.dtype}: ${String(e)}, not UNSUPPORTED_DTYPE`)
      }
      continue
    }
    const out = await run(call)
    const want = DTYPE_CODECS[call.dtype].encodeLane(comm.size)
    const got = call.dtype === 'f32' ? new Uint32Array(out.buffer, out.byteOffset, out.length) : out
    const wrong = Array.from(got).filter((b) => b !== want).length
    if (wrong > 0 || out.info.algorithm !== call.algorithm)
      problems.push(
        `warm-up ${call.algorithm} ${call.dtype} × ${call.count}: ran ${out.info.algorithm}, ${wrong} wrong`,
      )
  }
  const mine = rank === odd ? c.odd : c.main
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
  if (rank === odd && c.delayMs > 0) await sleep(c.delayMs)
  const started = performance.now()
  let failure: Record<string, unknown> | undefined
  try {
    if (mine) {
      await run(mine)
      failure = { code: 'NONE', message: 'the mismatched call returned data' }
    } else {
      failure = { code: 'NO_CALL', message: 'this rank made no call' }
    }
  } catch (e) {
    failure = errorInfo(e)
  }
  const ms = performance.now() - started
  let afterRecover: Record<string, unknown> | undefined
  if (c.recover) {
    // (recover() itself waits for this rank's launches and meets every rank before and after the re-arm)
    try {
      await comm.recover()
      const out = await run(c.main)
      const want = DTYPE_CODECS[c.main.dtype].encodeLane(comm.size)
      const got = c.main.dtype === 'f32' ? new Uint32Array(out.buffer, out.byteOffset, out.length) : out
      afterRecover = { code: 'NONE', wrong: Array.from(got).filter((b) => b !== want).length }
    } catch (e) {
      afterRecover = errorInfo(e)
    }
  }
  await sleep(Math.max(0, started + 2 * c.timeoutMs + 2000 - performance.now()))
  await comm.close()
  process.stdout.write(`RESULT ${JSON.stringify({ rank, problems, failure, ms, afterRecover })}\n`)
}

main().catch((e: unknown) => {
  const error =
    e instanceof LlcommError ? { code: e.code, message: e.message, details: e.details } : { message: String(e) }
  process.stdout.write(`RESULT ${JSON.stringify({ rank, error })}\n`)
  process.exitCode = 1
})
