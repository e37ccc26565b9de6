// 03: timing inside the ranks. 100 back-to-back calls per algorithm with a random arrival skew of up to 50 µs;
// the collective's own time (from the last rank's arrival) is reported apart from the wait for the last rank.
// Run: node dist/examples/03-benchmark.js
import { BARRIER_FREE_ALGORITHMS, createCommunicator } from 'llcomm'

const median = (xs: number[]): number => xs.slice().sort((a, b) => a - b)[xs.length >> 1]
const comm = await createCommunicator({ backend: 'cpu', ranks: 4 })
try {
  for (const algorithm of [...BARRIER_FREE_ALGORITHMS, 'oneshot-barrier', 'ring'] as const) {
    const r = await comm.benchmark({ algorithm, dtype: 'bf16', count: 1024, iters: 100, warmup: 10, skewUs: 50 })
    console.log(
      `${algorithm.padEnd(18)} median ${median(r.timesUs).toFixed(1).padStart(8)} µs   skew wait ${median(r.skewWaitUs).toFixed(1).padStart(6)} µs   wrong ${r.wrong}`,
    )
    if (r.wrong !== 0) throw new Error(`${algorithm}: ${r.wrong} wrong elements`)
  }
} finally {
  await comm.close()
}
