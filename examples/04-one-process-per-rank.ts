// 04: one process per rank. Run without LLCOMM_RANK, this file launches itself three times (as
// `npx llcomm launch -n 3 -- node dist/examples/04-one-process-per-rank.js` would); each process is one rank, meets
// the others through the TCP rendezvous that rank 0 hosts, and calls allReduce on its own input.
// Run: node dist/examples/04-one-process-per-rank.js
import { fileURLToPath } from 'node:url'
import { launch } from '../src/cli/commands/launch.js'
import { createCommunicator } from '../src/index.js'

if (process.env.LLCOMM_RANK === undefined) {
  const r = await launch({ ranks: 3, command: [process.execPath, fileURLToPath(import.meta.url)] })
  process.exitCode = r.exitCode
} else {
  const comm = await createCommunicator({ backend: 'cpu', rendezvous: 'env' })
  try {
    // Rank r contributes [r, r, r]; every rank gets [0 + 1 + 2, ...] = [3, 3, 3].
    const out = await comm.allReduce(new Float32Array(3).fill(comm.rank), { algorithm: 'oneshot-sentinel' })
    console.log(`rank ${comm.rank} of ${comm.size} got`, Array.from(out).join(' '), `(${out.info.algorithm})`)
    if (out.some((x) => x !== 3)) throw new Error('wrong sum')
  } finally {
    await comm.close()
  }
}
