#!/usr/bin/env node
// CPU work of one oneshot-sentinel call per rank, without any waiting: 4 ranks played in turn on one thread
// (every send first, then every receive + reduce), 1024 f32 words per rank. Prints one JSON object, µs per rank.
import { computeChannelLayout, createChannelMemory } from '../../dist/src/protocol/cpu/layout.js'
import { RankProtocol } from '../../dist/src/protocol/cpu/rank-protocol.js'

const N = 4,
  n = 1024,
  bytes = 256 * 1024
const sab = createChannelMemory(computeChannelLayout(N, bytes))
const R = Array.from(
  { length: N },
  (_, r) => new RankProtocol(sab, N, bytes, r, { timeoutMs: 1000, spinIterations: 10 }),
)
const inputs = R.map(() => Float32Array.from({ length: n }, () => Math.random() * 2 - 1))
const words = inputs.map((f) => new Int32Array(f.buffer))
const outs = R.map(() => new Int32Array(n))
const all = [0, 1, 2, 3]
const others = all.map((r) => all.filter((p) => p !== r))
for (const p of R) p.useDtype('f32')
let sendMs = 0,
  recvMs = 0
function call(timed) {
  for (const p of R) p.advanceEpoch()
  const t0 = performance.now()
  for (let r = 0; r < N; r++) {
    R[r].sentinel.bcastRange(others[r], 0, words[r])
    R[r].flush()
  }
  const t1 = performance.now()
  for (let r = 0; r < N; r++) R[r].sentinel.recvReduceRange(all, 0, outs[r], words[r])
  const t2 = performance.now()
  if (timed) {
    sendMs += t1 - t0
    recvMs += t2 - t1
  }
}
for (let k = 0; k < 2000; k++) call(false)
const K = 5000
for (let k = 0; k < K; k++) call(true)
console.log(
  JSON.stringify({
    ranks: N,
    words: n,
    sendUsPerRank: Number(((sendMs * 1000) / K / N).toFixed(2)),
    recvReduceUsPerRank: Number(((recvMs * 1000) / K / N).toFixed(2)),
  }),
)
