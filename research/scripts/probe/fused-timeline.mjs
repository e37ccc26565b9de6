#!/usr/bin/env node
// Kernel timeline of the fused and unfused calls (issue 21: where the fused kernels' time goes). Needs a kernel tree
// made by research/scripts/probe/timeline-tree.py (every kernel writes, per block, its entry and exit %globaltimer and
// up to five marks into a ring in rank 0's receive buffer). On the GPU machine, after `npm run build`:
//   LLCOMM_KERNELS_DIR=$(realpath ab/timeline) node research/scripts/probe/fused-timeline.mjs --ranks 8 \
//     --shapes 4096x1,4096x16 [--json FILE]
// Per shape and variant (allreduce, rmsnorm, unfused = allreduce + rmsnorm, fused-auto, fused-twoshot, fused-split):
// a CUDA graph of --calls back-to-back calls replayed --replays times (as scripts/bench-fused.mjs), the ring zeroed,
// replayed again; then every kernel instance of the ring (blocks grouped by entry order, gridDim.x a kernel) gives:
// span (first entry to last exit), the gap before it (the previous kernel's last exit to its first entry), the entry
// skew over its blocks, and its marks (ns after the instance's first entry, median over blocks and the max over
// blocks); medians over instances. Marks (thread 0's): split 1 sends, 2 received (+ residual, q), 3 cluster
// barrier, 6 level-1 sum stored, 7 inv stored, 8 second arrive, 4 inv visible, 5 output; two-shot spread 1 sends,
// 2 owner's sums, 3 all-gather added, 4 rows complete, 5 norm done; rmsnorm 1 residual written; in every norm pass
// (llcRmsNormRow / Cached, the last row's) 6 q stored, 7 first __syncthreads, 8 inverse RMS, 9 second __syncthreads,
// 10 output issued; 12 and 13 (clock64 at a block's entry and at its record) give the SM clock (GHz column; added
// after the 2026-12-04 runs, not run yet). The block's latest thread instead of thread 0 (timeline-tree.py
// LLC_TL_MAX, added in session 13, not run yet): split 9 (at 2) and 10 (at 5), norm passes 11 (at 6).
import { writeFileSync } from 'node:fs'
import { parseArgs } from 'node:util'
import { createCudaCommunicator, cudaDriver, deviceBufferLayout } from 'llcomm/internal'

const { values: o } = parseArgs({
  options: {
    ranks: { type: 'string', default: '8' },
    shapes: { type: 'string', default: '4096x1,4096x16' },
    calls: { type: 'string', default: '50' },
    replays: { type: 'string', default: '10' },
    json: { type: 'string' },
  },
})
if (!process.env.LLCOMM_KERNELS_DIR) throw new Error('set LLCOMM_KERNELS_DIR to a timeline tree (timeline-tree.py)')
const TAGS = { 1: 'oneshot-ll', 2: 'oneshot-sentinel', 3: 'oneshot-barrier', 4: 'twoshot-sentinel', 5: 'twoshot-atomic',
  6: 'ring', 7: 'rmsnorm', 8: 'fused-oneshot', 9: 'fused-twoshot', 10: 'fused-split', 11: 'fused-split-ll', 12: 'many' }
const CAP = 2048 // records of 128 bytes (timeline-tree.py LLC_TL_CAPACITY)
const MARKS = 13
const ranks = Number(o.ranks)
const calls = Number(o.calls)
const replays = Number(o.replays)
const comm = await createCudaCommunicator({ backend: 'cuda', devices: Array(ranks).fill(0) })
const d = cudaDriver()
const layout = deviceBufferLayout(ranks, comm.bufferBytes)
const ringPtr = Number(comm.deviceBuffersOf(0).recvBuf) + layout.plain.offset + 30 * layout.plain.channelHalfBytes + 65536
if (65536 + 128 * (CAP + 1) > 2 * layout.plain.channelHalfBytes) throw new Error('the ring does not fit channel 15')
const med = (a) => {
  const s = [...a].sort((x, y) => x - y)
  return s.length ? s[s.length >> 1] : NaN
}
const results = []
try {
  const stream = comm.createStream(0)
  const streams = [stream]
  for (const shape of o.shapes.split(',')) {
    const [hidden, rows] = shape.split('x').map(Number)
    const n = hidden * rows
    const bytes = 2 * n
    const rnd = () => {
      const h = new Uint16Array(n)
      const f = new Float32Array(1), u = new Uint32Array(f.buffer)
      for (let i = 0; i < n; i++) {
        f[0] = Math.random() * 2 - 1
        h[i] = u[0] >>> 16
      }
      return h
    }
    const per = (fn) => Array.from({ length: ranks }, (_, r) => fn(r))
    const x = per((r) => comm.allocate(r, bytes)), sum = per((r) => comm.allocate(r, bytes))
    const residual = per((r) => comm.allocate(r, bytes)), out = per((r) => comm.allocate(r, bytes))
    const weight = per((r) => comm.allocate(r, 2 * hidden))
    for (let r = 0; r < ranks; r++) {
      comm.upload(x[r], rnd())
      comm.upload(residual[r], rnd())
      comm.upload(weight[r], new Uint16Array(hidden).fill(0x3f80))
    }
    const normArgs = (algorithm) => ({ inputs: x, residuals: residual, outputs: out, weights: weight, rows, hidden,
      eps: 1e-5, dtype: 'bf16', algorithm, streams })
    const ar = comm.prepareDeviceAllReduce({ inputs: x, outputs: sum, count: n, dtype: 'bf16', streams })
    const norm = comm.prepareDeviceRmsNorm({ ...normArgs(), inputs: sum })
    const variants = { allreduce: () => ar.issue(streams), rmsnorm: () => norm.issue(streams),
      unfused: () => { ar.issue(streams); norm.issue(streams) } }
    for (const a of [undefined, 'twoshot', 'split']) {
      try {
        const c = comm.prepareDeviceAllReduceRmsNorm(normArgs(a))
        c.issue(streams)
        await comm.synchronize(stream)
        variants[`fused-${a ?? 'auto'}`] = () => c.issue(streams)
      } catch (e) {
        console.log(`${shape} fused-${a ?? 'auto'}: skipped (${e.message})`)
      }
    }
    for (const [name, body] of Object.entries(variants)) {
      const graph = comm.captureGraph(() => { for (let i = 0; i < calls; i++) body() }, streams)
      for (let i = 0; i < replays; i++) graph.launch()
      await comm.synchronize(stream)
      d.memsetD32(ringPtr, 0, (128 * (CAP + 1)) / 4)
      d.contextSynchronize()
      const t0 = performance.now()
      for (let i = 0; i < replays; i++) graph.launch()
      await comm.synchronize(stream)
      const usPerCall = ((performance.now() - t0) * 1000) / (replays * calls)
      graph.destroy()
      comm.checkDeviceError()
      const raw = new BigUint64Array(16 * (CAP + 1))
      d.copyDtoH(raw, ringPtr)
      const count = Number(raw[0])
      const recs = []
      for (let i = 0; i < Math.min(count, CAP); i++) {
        const b = 16 * (i + 1)
        const w = raw[b]
        recs.push({ tag: Number(w & 0xffn), block: Number((w >> 8n) & 0xffffffn), grid: Number(w >> 32n),
          entry: raw[b + 1], marks: Array.from({ length: MARKS }, (_, k) => raw[b + 2 + k]), exit: raw[b + 15] })
      }
      recs.sort((a, b) => (a.entry < b.entry ? -1 : a.entry > b.entry ? 1 : 0))
      // Kernel instances: from the newest back, gridDim.x records each, all of one tag, distinct blocks.
      const inst = []
      let end = recs.length
      while (end > 0) {
        const grid = recs[end - 1].grid
        if (end - grid < 0) break
        const g = recs.slice(end - grid, end)
        if (new Set(g.map((r) => r.block)).size !== grid || g.some((r) => r.tag !== g[0].tag)) break
        inst.unshift(g)
        end -= grid
      }
      // The SM clock: clock64 cycles between a block's entry and its record (marks 12, 13) over the %globaltimer ns
      // between its entry and its last thread's exit (the record follows that exit by a few instructions).
      const ghz = med(recs.filter((r) => r.marks[11] !== 0n && r.marks[12] > r.marks[11] && r.exit > r.entry)
        .map((r) => Number(r.marks[12] - r.marks[11]) / Number(r.exit - r.entry)))
      const rows_ = []
      for (let i = 1; i < inst.length; i++) {
        const g = inst[i]
        const first = g.reduce((m, r) => (r.entry < m ? r.entry : m), g[0].entry)
        const lastIn = g.reduce((m, r) => (r.entry > m ? r.entry : m), 0n)
        const lastOut = g.reduce((m, r) => (r.exit > m ? r.exit : m), 0n)
        const prevOut = inst[i - 1].reduce((m, r) => (r.exit > m ? r.exit : m), 0n)
        const marks = Array.from({ length: MARKS }, (_, k) => k).map((k) => {
          const v = g.filter((r) => r.marks[k] !== 0n).map((r) => Number(r.marks[k] - first))
          return v.length ? { med: med(v), max: Math.max(...v) } : null
        })
        rows_.push({ tag: TAGS[g[0].tag] ?? g[0].tag, grid: g[0].grid, span: Number(lastOut - first),
          gap: Number(first - prevOut), skew: Number(lastIn - first), marks })
      }
      const byTag = {}
      for (const r of rows_) (byTag[r.tag] ??= []).push(r)
      const summary = Object.entries(byTag).map(([tag, rs]) => ({
        tag, instances: rs.length, grid: rs[0].grid, span: med(rs.map((r) => r.span)), gap: med(rs.map((r) => r.gap)),
        skew: med(rs.map((r) => r.skew)),
        marks: Array.from({ length: MARKS }, (_, k) => k).map((k) => (rs[0].marks[k] ? { med: med(rs.map((r) => r.marks[k].med)),
          max: med(rs.map((r) => r.marks[k].max)) } : null)),
      }))
      results.push({ shape, variant: name, usPerCall, records: count, smClockGHz: ghz, summary })
      const line = summary.map((s) => `${s.tag}[${s.grid}] gap ${s.gap} span ${s.span} skew ${s.skew}` +
        (s.marks.slice(0, 11).some(Boolean) ? ` marks ${s.marks.slice(0, 11).map((m, k) => (m ? `${k + 1}:${m.med}/${m.max}` : '')).filter(Boolean).join(' ')}` : '')).join(' | ')
      console.log(`${shape.padEnd(8)} ${name.padEnd(14)} ${usPerCall.toFixed(2).padStart(6)} us/call ~${ghz.toFixed(2)} GHz | ${line}`)
    }
  }
  if (o.json) writeFileSync(o.json, JSON.stringify({ date: new Date().toISOString(), ranks, results }, null, 1))
} finally {
  await comm.close()
}
