// 06: one process per rank. Run without LLCOMM_RANK, this file has the launcher start it three times
// (`npx llcomm launch -n 3 -- node examples/dist/06-one-process-per-rank.js`; the launcher is the CLI's, in
// @llcomm/tools); each process is one rank, meets the others through the TCP rendezvous that rank 0 hosts, and
// calls allReduce on its own input.
// Run: node examples/dist/06-one-process-per-rank.js
import { spawnSync } from 'node:child_process'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'
import { createCommunicator } from 'llcomm'

if (process.env.LLCOMM_RANK === undefined) {
  const cli = createRequire(import.meta.url).resolve('@llcomm/tools/bin/llcomm.js')
  const self = fileURLToPath(import.meta.url)
  const r = spawnSync(process.execPath, [cli, 'launch', '-n', '3', '--', process.execPath, self], { stdio: 'inherit' })
  process.exitCode = r.status ?? 1
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
