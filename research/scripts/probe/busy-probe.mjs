// Why the public-api GPU test's BUSY check did not throw (run of 2026-12-01, commit 94966cb): times each step of
// "a big call on stream A, then a call on stream B", and queries stream A between them. GPU machine, repo root:
//   node research/scripts/probe/busy-probe.mjs
import { createCommunicator, cudaDriver } from 'llcomm/internal'

const d = cudaDriver()
const comm = await createCommunicator({ backend: 'cuda', devices: [0, 0], timeoutMs: 20_000 })
const big = 64 << 20
const ptrs = [0, 1].map((r) => comm.allocate(r, big * 4))
const a = [comm.createStream(0)]
const b = [comm.createStream(0)]
const now = () => performance.now()
for (const round of [1, 2]) {
  const t0 = now()
  const info = comm.deviceAllReduce({ inputs: ptrs, outputs: ptrs, count: big, dtype: 'f32', streams: a })
  const t1 = now()
  const pendingAfterIssue = !d.streamQuery(a[0])
  let second = 'no error'
  try {
    comm.deviceAllReduce({ inputs: ptrs, outputs: ptrs, count: big, dtype: 'f32', streams: b })
  } catch (e) {
    second = `${e.code}: ${e.message}`
  }
  const t2 = now()
  await comm.synchronize(a[0])
  await comm.synchronize(b[0])
  const t3 = now()
  console.log(
    JSON.stringify({ round, info, issueMs: t1 - t0, pendingAfterIssue, second, secondMs: t2 - t1, drainMs: t3 - t2 }),
  )
}
await comm.close()
