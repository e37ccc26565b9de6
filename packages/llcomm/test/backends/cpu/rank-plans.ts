// Runs per-rank plans in user workers (signature-worker.ts) on a fresh CPU communicator's rank handles.
import { Worker } from 'node:worker_threads'
import { createCpuCommunicator } from '../../../src/backends/cpu/communicator.js'
import type { RankStep, RankStepResult } from './signature-worker.js'

const WORKER = new URL('./signature-worker.js', import.meta.url)

/** Rank r runs plans[r]; resolves with every rank's results. */
export async function runRankPlans(
  plans: RankStep[][],
  options: { timeoutMs?: number; bufferBytes?: number } = {},
): Promise<RankStepResult[][]> {
  const comm = await createCpuCommunicator({
    backend: 'cpu',
    ranks: plans.length,
    timeoutMs: options.timeoutMs ?? 2_000,
    bufferBytes: options.bufferBytes ?? 65536,
  })
  try {
    const barrier = new SharedArrayBuffer(4)
    return await Promise.all(
      comm.rankHandles().map(
        (handle, r) =>
          new Promise<RankStepResult[]>((resolve, reject) => {
            const w = new Worker(WORKER, { workerData: { handle, steps: plans[r], barrier } })
            w.once('message', resolve)
            w.once('error', reject)
          }),
      ),
    )
  } finally {
    await comm.close()
  }
}

export { accumulationInput } from '../../support/accumulation.js'
