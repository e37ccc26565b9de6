// One rank of scripts/long-run.mjs: attaches its rank (per-rank view), runs the whole plan back to back, checks
// every output word against the exact expected sum, posts { wrong, calls, failures, epoch }.
import { parentPort, workerData } from 'node:worker_threads'
import { attachCpuRank } from 'llcomm/internal'
import { callOf, expectedWords, inputOf } from './long-run-plan.mjs'

const { handle, calls } = workerData
const rank = attachCpuRank(handle)
const inputs = new Map()
const expected = new Map()
let wrong = 0
const failures = []
for (let k = 0; k < calls; k++) {
  const call = callOf(k)
  const key = `${call.dtype}/${call.count}/${call.set}`
  let input = inputs.get(key)
  if (!input) {
    input = inputOf(call, handle.rank)
    inputs.set(key, input)
    expected.set(key, expectedWords(call, handle.ranks))
  }
  const want = expected.get(key)
  try {
    const out = rank.allReduce(input, { algorithm: call.algorithm, dtype: call.dtype })
    const got = call.dtype === 'f32' ? new Uint32Array(out.buffer, out.byteOffset, out.length) : out
    let bad = 0
    for (let i = 0; i < want.length; i++) if (got[i] !== want[i]) bad++
    if (bad > 0 && failures.length < 10) failures.push({ call: k, ...call, wrong: bad })
    wrong += bad
  } catch (e) {
    failures.push({ call: k, ...call, error: String(e?.message ?? e) })
    break
  }
}
const epoch = new Int32Array(handle.channel)[handle.rank * 32] >>> 0 // CONTROL.EPOCH of this rank
rank.detach()
parentPort.postMessage({ wrong, failures, epoch })
