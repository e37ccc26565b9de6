#!/usr/bin/env node
// Per-phase timestamps of twoshot-sentinel's spread path (issue 22: where its fixed cost at 16-64 ranks goes;
// research/notes/scale-2026-12-01.md, last section). Needs the kernels built with LLCOMM_PHASE_PROBE (ab/phase, made
// by research/scripts/probe/phase-probe.sh), which store, per block and call, seven (globaltimer, clock64) pairs at
// the start of the rank's plain region half of that channel and epoch (twoshot_sentinel.cu, LLC_PHASE_MARK).
// On the GPU machine, from the repository root after `npm run build`:
//   LLCOMM_KERNELS_DIR=$(realpath ab/phase) node research/scripts/probe/phase-probe.mjs --ranks 32 --bytes 8192
// Captures --calls back-to-back calls in one CUDA graph (as llcomm bench times them), replays it --replays times,
// then reads every block's marks of the last call of each epoch parity and prints, per phase, the median and the
// spread over blocks (ns, from globaltimer; the clock64 deltas beside them, in cycles) and the start skew across
// ranks. Marks: 0 start, 1 reduce-scatter sends issued, 2 owner's reduce done (0 where the block owns no data),
// 3 broadcast words stored, 4 signature check, 5 all-gather polls done, 6 last __syncthreads passed.
import { writeFileSync } from 'node:fs'
import { parseArgs } from 'node:util'
import { createCommunicator } from 'llcomm'
import { cudaDriver, deviceBufferLayout, LLCOMM_MAX_CHANNELS } from 'llcomm/internal'

const { values: o } = parseArgs({
  options: {
    ranks: { type: 'string', default: '32' },
    bytes: { type: 'string', default: '8192' },
    calls: { type: 'string', default: '50' },
    replays: { type: 'string', default: '20' },
    json: { type: 'string' },
  },
})
if (!process.env.LLCOMM_KERNELS_DIR) throw new Error('set LLCOMM_KERNELS_DIR to the LLCOMM_PHASE_PROBE tree (ab/phase)')
const ranks = Number(o.ranks)
const count = Number(o.bytes) / 2 // bf16
const comm = await createCommunicator({ backend: 'cuda', devices: Array(ranks).fill(0) })
// Marks 0-6 the phases in order; 7-9 the prologue's (twoshot_sentinel.cu: entry, epoch arrived, first input arrived;
// 0 in a tree built before they existed).
// 10: the scratch pointer (a kernel parameter, run-time index) arrived; 11: the epoch word loaded again (0 in trees
// before 2026-12-02, session 9); 12: the element split and thread roles computed; 13: the first input loads issued.
const MARKS = 14
const PHASES = 7
const names = ['start', 'sends', 'reduced', 'bcast', 'sigcheck', 'allgather', 'end']
const prologue = [
  ['entry -> start', 7, 0],
  ['start -> epoch', 0, 8],
  ['start -> scrptr', 0, 10],
  ['start -> setup', 0, 12],
  ['setup -> issued', 12, 13],
  ['issued -> scrptr', 13, 10],
  ['scrptr -> epoch', 10, 8],
  ['epoch reload', 8, 11],
  ['epoch -> input', 8, 9],
  ['reload -> input', 11, 9],
  ['input -> sends', 9, 1],
]
try {
  const inputs = Array.from({ length: ranks }, (_, r) => comm.allocate(r, count * 2))
  const outputs = Array.from({ length: ranks }, (_, r) => comm.allocate(r, count * 2))
  const stream = comm.createStream(0)
  const args = { inputs, outputs, count, dtype: 'bf16', algorithm: 'twoshot-sentinel', fallback: false, streams: [stream] }
  const info = comm.deviceAllReduce(args)
  await comm.synchronize(stream)
  const graph = comm.captureGraph(() => {
    for (let i = 0; i < Number(o.calls); i++) comm.deviceAllReduce(args)
  }, [stream])
  const t0 = performance.now()
  for (let i = 0; i < Number(o.replays); i++) graph.launch()
  await comm.synchronize(stream)
  const usPerCall = ((performance.now() - t0) * 1000) / (Number(o.replays) * Number(o.calls))
  graph.destroy()
  // Every block of every rank, both halves: the last call of each epoch parity.
  const layout = deviceBufferLayout(ranks, comm.bufferBytes)
  const driver = cudaDriver()
  const blocks = []
  for (let r = 0; r < ranks; r++) {
    const { recvBuf } = comm.deviceBuffersOf(r)
    for (let c = 0; c < LLCOMM_MAX_CHANNELS; c++)
      for (let h = 0; h < 2; h++) {
        const marks = new BigUint64Array(2 * MARKS)
        driver.copyDtoH(marks, Number(recvBuf) + layout.plain.offset + (c * 2 + h) * layout.plain.channelHalfBytes)
        if (marks[0] === 0n) continue // a channel this call does not use, or a half not written
        blocks.push({ rank: r, channel: c, half: h, timer: [...marks].filter((_, i) => i % 2 === 0), clock: [...marks].filter((_, i) => i % 2 === 1) })
      }
  }
  const med = (a) => { const s = [...a].sort((x, y) => x - y); return s.length ? s[s.length >> 1] : NaN }
  console.log(`twoshot-sentinel ${ranks} ranks, ${o.bytes} B bf16: ${info.chunks} chunk(s), ${usPerCall.toFixed(2)} us a call (graph, host-timed), ${blocks.length} block records`)
  console.log('phase           ns median   ns p10..p90      cycles median   (from the previous mark; blocks that reached it)')
  for (let i = 1; i < PHASES; i++) {
    const d = [], cyc = []
    for (const b of blocks) {
      // the previous mark this block reached (mark 2 is 0 where the block owns no data)
      let j = i - 1
      while (j > 0 && b.timer[j] === 0n) j--
      if (b.timer[i] === 0n) continue
      d.push(Number(b.timer[i] - b.timer[j]))
      cyc.push(Number(b.clock[i] - b.clock[j]))
    }
    const s = [...d].sort((x, y) => x - y)
    console.log(`${names[i].padEnd(14)} ${String(med(d)).padStart(10)}   ${String(s[Math.floor(s.length * 0.1)]).padStart(6)}..${String(s[Math.floor(s.length * 0.9)]).padEnd(8)} ${String(med(cyc)).padStart(12)}   (${d.length})`)
  }
  for (const [name, a, b] of prologue) {
    const d = blocks.filter((x) => x.timer[a] !== 0n && x.timer[b] !== 0n).map((x) => Number(x.timer[b] - x.timer[a]))
    if (d.length === 0) continue
    const s = [...d].sort((x, y) => x - y)
    console.log(`${name.padEnd(14)} ${String(med(d)).padStart(10)}   ${String(s[Math.floor(s.length * 0.1)]).padStart(6)}..${String(s[Math.floor(s.length * 0.9)]).padEnd(8)}   (${d.length}; timer only)`)
  }
  for (const h of [0, 1]) {
    const starts = blocks.filter((b) => b.half === h).map((b) => Number(b.timer[0]))
    const ends = blocks.filter((b) => b.half === h).map((b) => Number(b.timer[PHASES - 1]))
    if (starts.length) console.log(`half ${h}: start skew across blocks ${Math.max(...starts) - Math.min(...starts)} ns, first start to last end ${Math.max(...ends) - Math.min(...starts)} ns`)
  }
  if (o.json) writeFileSync(o.json, JSON.stringify({ date: new Date().toISOString(), ranks, bytes: Number(o.bytes), usPerCall, blocks: blocks.map((b) => ({ ...b, timer: b.timer.map(String), clock: b.clock.map(String) })) }))
} finally {
  await comm.close()
}
