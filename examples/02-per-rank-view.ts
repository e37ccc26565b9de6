// 02: the per-rank view. The communicator hands out one handle per rank; each of our own workers attaches its
// rank and calls allReduce from inside the rank (it blocks that worker until the collective is done).
// Run: node dist/examples/02-per-rank-view.js
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads'
import { attachCpuRank, type CpuRankHandle, createCpuCommunicator } from 'llcomm'

if (isMainThread) {
  const comm = await createCpuCommunicator({ backend: 'cpu', ranks: 3 })
  try {
    const handles = comm.rankHandles()
    const sums = await Promise.all(
      handles.map(
        (handle) =>
          new Promise<number[]>((resolve, reject) => {
            const worker = new Worker(new URL(import.meta.url), { workerData: handle })
            worker.once('message', resolve)
            worker.once('error', reject)
          }),
      ),
    )
    for (const [rank, s] of sums.entries()) console.log(`rank ${rank} got`, s.join(' '))
    if (sums.some((s) => s.join() !== '3,6,9')) throw new Error('wrong sum')
  } finally {
    await comm.close()
  }
} else {
  const rank = attachCpuRank(workerData as CpuRankHandle)
  // Each rank contributes [1, 2, 3]; every rank gets [3, 6, 9] (bitwise the same on every rank).
  const output = rank.allReduce(Float32Array.of(1, 2, 3), { algorithm: 'oneshot-ll' })
  rank.detach()
  parentPort?.postMessage(Array.from(output))
}
