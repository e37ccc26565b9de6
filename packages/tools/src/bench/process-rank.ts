/**
 * One rank of `llcomm bench --processes` (forked by process-group.ts with an IPC channel and the rendezvous
 * variables set): opens a per-rank cpu communicator, then serves the group's requests in order, one at a time:
 *   {t:'benchmark', cmd} -> {t:'benchmark', result}   the in-rank timing loop (CpuProcessCommunicator.benchmarkRank)
 *   {t:'allreduce', input, options} -> {t:'allreduce', output, info}
 *   {t:'close'} -> closes the communicator and exits
 * Any failure answers {t:'error', error} (LlcommError's JSON form).
 */
import type { AllReduceOptions, CpuProcessCommunicator, RankBenchmarkCommand, TensorArray } from 'llcomm/internal'
import { createCommunicator, LlcommError } from 'llcomm/internal'

type Request =
  | { t: 'benchmark'; cmd: RankBenchmarkCommand }
  | { t: 'allreduce'; input: TensorArray; options?: AllReduceOptions }
  | { t: 'close' }

function send(message: unknown): void {
  process.send?.(message)
}

function serialized(e: unknown): unknown {
  if (e instanceof LlcommError) return e.toJSON()
  return { code: 'WORKER_FAILED', message: e instanceof Error ? e.message : String(e), details: {} }
}

async function main(): Promise<void> {
  const settings = JSON.parse(process.env.LLCOMM_BENCH_RANK_OPTIONS ?? '{}') as {
    timeoutMs?: number
    bufferBytes?: number
    tuningTable?: string
  }
  let comm: CpuProcessCommunicator
  try {
    comm = (await createCommunicator({ backend: 'cpu', rendezvous: 'env', ...settings })) as CpuProcessCommunicator
  } catch (e) {
    send({ t: 'error', error: serialized(e) })
    process.exitCode = 1
    return
  }
  send({ t: 'ready', algorithms: comm.algorithms })
  let chain: Promise<void> = Promise.resolve()
  process.on('message', (m: Request) => {
    chain = chain.then(async () => {
      try {
        if (m.t === 'benchmark') {
          send({ t: 'benchmark', result: await comm.benchmarkRank(m.cmd) })
        } else if (m.t === 'allreduce') {
          const out = await comm.allReduce(m.input, m.options)
          send({ t: 'allreduce', output: out.slice(), info: out.info })
        } else if (m.t === 'close') {
          await comm.close()
          process.disconnect?.()
        }
      } catch (e) {
        send({ t: 'error', error: serialized(e) })
      }
    })
  })
}

await main()
