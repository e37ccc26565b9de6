// Runs per-rank plans in user workers (signature-worker.ts) on a fresh CPU communicator's rank handles, and the
// f32-accumulation inputs the worker and the tests share.
import { Worker } from 'node:worker_threads'
import type { Dtype } from '../../../src/api/types.js'
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

/**
 * f32-accumulation input: rank 0 holds a large value, the others small ones that only survive when the sum is
 * carried in f32 (16-bit partial sums round them away): element i of rank r is (-1)^i * (r == 0 ? 256 : 0.25 + ...).
 */
export function accumulationInput(dtype: Dtype, count: number, seed: number, rank: number): Float32Array | Uint16Array {
  const f = new Float32Array(count)
  for (let i = 0; i < count; i++) {
    const sign = (i + seed) % 2 === 0 ? 1 : -1
    f[i] = rank === 0 ? sign * 256 : sign * (0.25 + ((i * 7 + rank * 3 + seed) % 4) * 0.125)
  }
  if (dtype === 'f32') return f
  const out = new Uint16Array(count)
  const bits = new Uint32Array(f.buffer)
  for (let i = 0; i < count; i++) {
    // exact conversions: every value above is exactly representable in f16 and bf16
    if (dtype === 'bf16') out[i] = bits[i] >>> 16
    else {
      const b = bits[i]
      const sign = (b >>> 16) & 0x8000
      const exp = ((b >>> 23) & 0xff) - 127 + 15
      out[i] = sign | (exp << 10) | ((b >>> 13) & 0x3ff)
    }
  }
  return out
}
