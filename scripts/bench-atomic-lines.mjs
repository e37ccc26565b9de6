// What f32 accumulation costs (issue 18 item 4): twoshot-atomic on f32 lines against its packed 16-bit lines, and
// ring with f32 partials against 16-bit partials, bf16, measured side by side in ONE process: per rank count two
// communicators on the same devices, the default one (accumulation: 'f32') and accumulation: 'dtype' (the 16-bit
// kernels), benchmarked in alternation (rep after rep, the order flipped every rep, so that clock and thermal drift
// hit both alike). Each benchmark() replays a CUDA graph of 100 back-to-back calls, timed with CUDA events
// (src/backends/cuda/benchmark.ts): one sample per replay, µs per call; the figure per (variant, size) is the median
// of every sample of every rep (iters / 100 samples per rep). Every benchmark also checks its last replay against
// the float64 reference under the variant's numeric model (wrong must be 0).
// Needs only node and the compiled dist (`npx tsc -b`), from the repository root on the GPU machine:
//   node scripts/bench-atomic-lines.mjs [--ranks 2,8] [--sizes 8192,65536,262144] [--dtype bf16]
//                                       [--iters 2000] [--warmup 200] [--reps 5] [--out FILE.json]
// Sizes are bytes per rank. Prints one row per (ranks, algorithm, size) with the ratio f32 / 16-bit, writes JSON
// (date, commit from $LLCOMM_COMMIT, machine) to --out or $OUT/bench-atomic-lines-<dtype>.json.
import { writeFileSync } from 'node:fs'
import { cpus, hostname } from 'node:os'
import { parseArgs } from 'node:util'
import { createCudaCommunicator, cudaCommunicatorInternals } from '../packages/llcomm/dist/src/internal.js'

const { values: opts } = parseArgs({
  options: {
    ranks: { type: 'string', default: '2,8' },
    sizes: { type: 'string', default: '8192,65536,262144' },
    dtype: { type: 'string', default: 'bf16' },
    iters: { type: 'string', default: '2000' },
    warmup: { type: 'string', default: '200' },
    reps: { type: 'string', default: '5' },
    device: { type: 'string', default: '0' },
    out: { type: 'string' },
  },
})
const list = (s) => s.split(',').map(Number)
const ranksList = list(opts.ranks)
const sizes = list(opts.sizes)
const dtype = opts.dtype
const iters = Number(opts.iters)
const warmup = Number(opts.warmup)
const reps = Number(opts.reps)
const device = Number(opts.device)
const elemBytes = dtype === 'f32' ? 4 : 2
const outFile = opts.out ?? `${process.env.OUT ?? '/tmp'}/bench-atomic-lines-${dtype}.json`
const ALGORITHMS = ['twoshot-atomic', 'ring']
const ACCUMULATIONS = ['f32', 'dtype']

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b)
  const m = s.length >> 1
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2
}

const rows = []
let gpu = 'unknown'
console.log(`${dtype}, ${iters} calls x ${reps} reps per point (after ${warmup} warm-up), median µs per call`)
console.log('ranks algorithm       bytes | f32 accumulation | 16-bit accumulation | f32/16-bit')
for (const ranks of ranksList) {
  const comms = {}
  try {
    for (const accumulation of ACCUMULATIONS)
      comms[accumulation] = await createCudaCommunicator({
        backend: 'cuda',
        devices: new Array(ranks).fill(device),
        timeoutMs: 10_000,
        accumulation,
      })
    gpu = cudaCommunicatorInternals(comms.f32).deviceSet.groups[0].name
    for (const algorithm of ALGORITHMS)
      for (const bytes of sizes) {
        const count = Math.max(1, Math.floor(bytes / elemBytes))
        const times = { f32: [], dtype: [] }
        const repMedians = { f32: [], dtype: [] }
        let wrong = 0
        for (let rep = 0; rep < reps; rep++)
          for (const accumulation of rep % 2 ? [...ACCUMULATIONS].reverse() : ACCUMULATIONS) {
            const r = await comms[accumulation].benchmark({ algorithm, dtype, count, iters, warmup })
            if (r.algorithm !== algorithm) throw new Error(`${algorithm} ran as ${r.algorithm}: ${r.fallbackReason}`)
            wrong += r.wrong
            times[accumulation].push(...r.timesUs)
            repMedians[accumulation].push(median(r.timesUs))
          }
        const us = { f32: median(times.f32), dtype: median(times.dtype) }
        const row = {
          ranks,
          algorithm,
          dtype,
          bytes: count * elemBytes,
          count,
          usF32: us.f32,
          us16: us.dtype,
          ratio: us.f32 / us.dtype,
          samples: times.f32.length,
          repMediansF32: repMedians.f32,
          repMedians16: repMedians.dtype,
          wrong,
        }
        rows.push(row)
        console.log(
          `${String(ranks).padStart(5)} ${algorithm.padEnd(15)} ${String(row.bytes).padStart(7)} | ${us.f32.toFixed(2).padStart(16)} | ${us.dtype.toFixed(2).padStart(19)} | ${row.ratio.toFixed(3).padStart(10)}${wrong ? `  WRONG ${wrong}` : ''}`,
        )
      }
  } finally {
    for (const c of Object.values(comms)) await c.close()
  }
}
const result = {
  what: 'f32 accumulation (default) against 16-bit accumulation (accumulation: dtype), twoshot-atomic and ring',
  command: `node scripts/bench-atomic-lines.mjs ${process.argv.slice(2).join(' ')}`.trim(),
  date: new Date().toISOString(),
  commit: process.env.LLCOMM_COMMIT ?? 'unknown',
  machine: { host: hostname(), cpu: cpus()[0]?.model ?? 'unknown', cores: cpus().length, gpu, device },
  dtype,
  iters,
  warmup,
  reps,
  timing: 'benchmark(): CUDA-graph replays of 100 back-to-back calls, CUDA events; median over all replays of all reps',
  rows,
}
writeFileSync(outFile, `${JSON.stringify(result, null, 1)}\n`)
console.log(`wrote ${outFile}`)
if (rows.some((r) => r.wrong > 0)) {
  console.error('some benchmark results were wrong (see the rows)')
  process.exitCode = 1
}
