// Kernel-level bench of the fused AllReduce + residual + RMSNorm against AllReduce + RMSNorm (issue 21), all variants
// measured side by side in one run (src/bench/fused.ts). Run on the GPU machine after `npm run build`:
//   node scripts/bench-fused.mjs [--ranks 2,8] [--hidden 4096,8192] [--batch 1,2,4,8,16,32,64] [--dtype bf16]
//                                [--calls 50] [--replays 20] [--buffer-bytes N] [--out FILE.json] [--probes]
//                                [--unfused-all]
// --buffer-bytes: the communicator's bufferBytes (default the library's, 4 MiB on cuda): larger lanes let more rows
// fit one launch (both the fused kernels and the unfused AllReduce run on the same communicator).
// Prints one line per shape: µs per call of every variant and the ratios fused/unfused; writes the rows as JSON.
// --unfused-all: also every llcomm AllReduce algorithm + the RMSNorm kernel as its own unfused variant; a second line
// per shape gives each and best fused / the fastest unfused (the strictest baseline, not only 'auto''s pick).
// --probes (bf16): also the cost-decomposition probe columns (FUSED_BENCH_PROBES in packages/tools/src/bench/
// fused.ts; research/notes/fused-probes.md), printed per shape as a second block: the raw µs, then differences.
import { writeFileSync } from 'node:fs'
import { hostname } from 'node:os'
import { createCudaCommunicator, cudaDriver } from 'llcomm/internal'
import { benchFusedShape, FUSED_BENCH_PROBES } from '../packages/tools/dist/src/bench/fused.js'

const args = process.argv.slice(2)
const opt = (name, dflt) => {
  const i = args.indexOf(`--${name}`)
  return i >= 0 ? args[i + 1] : dflt
}
const list = (s) => s.split(',').map(Number)
const ranksList = list(opt('ranks', '2,8'))
const hiddens = list(opt('hidden', '4096,8192'))
const batches = list(opt('batch', '1,2,4,8,16,32,64'))
const dtype = opt('dtype', 'bf16')
const calls = Number(opt('calls', '50'))
const replays = Number(opt('replays', '20'))
const bufferBytes = opt('buffer-bytes', undefined)
const probes = args.includes('--probes')
const unfusedAll = args.includes('--unfused-all')
const outFile = opt('out', `${process.env.OUT ?? '/tmp'}/bench-fused-${dtype}.json`)

const rows = []
const f = (x) => (x === undefined ? '    -' : x.toFixed(2).padStart(6))
console.log(
  'ranks hidden batch | fused-1s fused-2s fused-auto | split split-ll split-2s | unfused (allreduce + rmsnorm) | nccl+rms | auto/unfused best/unfused split/unf split-ll/unf split-2s/unf',
)
for (const ranks of ranksList) {
  const comm = await createCudaCommunicator({
    backend: 'cuda',
    devices: new Array(ranks).fill(0),
    timeoutMs: 5000,
    ...(bufferBytes !== undefined ? { bufferBytes: Number(bufferBytes) } : {}),
  })
  try {
    for (const hidden of hiddens)
      for (const batch of batches) {
        const r = benchFusedShape(
          comm,
          { rows: batch, hidden, dtype },
          { callsPerGraph: calls, replays, probes, unfusedAll },
        )
        const u = r.us
        const best = Math.min(
          ...['fused-oneshot', 'fused-twoshot', 'fused-split', 'fused-split-ll', 'fused-split-twoshot']
            .filter((k) => k in u)
            .map((k) => u[k]),
        )
        r.ratioAuto = u['fused-auto'] / u.unfused
        r.ratioBest = best / u.unfused
        const ratio = (k) => (k in u ? (u[k] / u.unfused).toFixed(3) : '    -')
        rows.push(r)
        console.log(
          `${String(ranks).padStart(5)} ${String(hidden).padStart(6)} ${String(batch).padStart(5)} | ${f(u['fused-oneshot'])}  ${f(u['fused-twoshot'])}  ${f(u['fused-auto'])}(${r.fusedAuto.slice(0, 3)}) | ${f(u['fused-split'])} ${f(u['fused-split-ll'])} ${f(u['fused-split-twoshot'])} | ${f(u.unfused)} (${f(u.allreduce)} ${r.allReduceAlgorithm} + ${f(u.rmsnorm)}) | ${f(u['nccl+rmsnorm'])} | ${r.ratioAuto.toFixed(3)} ${r.ratioBest.toFixed(3)} ${ratio('fused-split')} ${ratio('fused-split-ll')} ${ratio('fused-split-twoshot')}`,
        )
        for (const [k, why] of Object.entries(r.skipped ?? {}))
          if (!k.startsWith('unfused:')) console.log(`      ${k} skipped: ${why}`)
        if (unfusedAll) {
          const each = Object.keys(u).filter((k) => k.startsWith('unfused:'))
          const fastest = Math.min(u.unfused, ...each.map((k) => u[k]))
          r.unfusedFastest = fastest
          r.ratioBestStrict = best / fastest
          console.log(
            `      unfused each: ${each.map((k) => `${k.slice(8)}=${u[k].toFixed(2)}`).join(' ')} | fastest ${fastest.toFixed(2)} | best/fastest ${r.ratioBestStrict.toFixed(3)}`,
          )
        }
        if (probes) {
          const p = (k) => u[`p:${k}`]
          console.log(
            `      probes µs: ${Object.keys(FUSED_BENCH_PROBES)
              .map((k) => `${k.startsWith('p:') ? k.slice(2) : k}=${k in u ? u[k].toFixed(2) : '-'}`)
              .join(' ')}`,
          )
          // a - b, each the cost of one part (research/notes/fused-probes.md)
          const d = (name, a, b) =>
            a === undefined || b === undefined ? `${name}=-` : `${name}=${(a - b >= 0 ? '+' : '') + (a - b).toFixed(2)}`
          for (const [k, v] of Object.entries(r.checks ?? {})) console.log(`      check ${k} vs split-ll: ${v}`)
          console.log(
            `      parts µs: ${[
              d('params', p('empty'), p('empty-small')),
              d('coop', p('empty'), p('empty-nocoop')),
              d('clusterLaunch', p('empty-cl'), p('empty')),
              d('xchgBody', p('ll-xchg'), p('empty-cl')),
              d('xchgCluster', p('ll-xchg'), p('ll-xchg-nocl')),
              d('xchgVsAllreduce', p('ll-xchg'), u.allreduce),
              d('residual+q+out', p('ll-nobar-nonorm'), p('ll-xchg')),
              d('clusterBarriers', p('ll-nonorm'), p('ll-nobar-nonorm')),
              d('gather+total', u['fused-split-ll'], p('ll-nonorm')),
              d('coopOnSplitLl', u['fused-split-ll'], p('split-ll-nocoop')),
              d('sXchgVsAllreduce', p('s-xchg'), u.allreduce),
              d('sNorm', u['fused-split'], p('s-nonorm')),
              d('sRest', p('s-nonorm'), p('s-xchg')),
              d('coopOnSplit', u['fused-split'], p('split-nocoop')),
              d('lateGain', u['fused-split-ll'], u['i:ll-late']),
              d('spreadGain', u['fused-split-ll'], u['i:ll-spread']),
              d('lateSpreadGain', u['fused-split-ll'], u['i:ll-late-spread']),
            ].join(' ')}`,
          )
        }
      }
  } finally {
    await comm.close()
  }
}
writeFileSync(
  outFile,
  `${JSON.stringify(
    {
      // what bench/results/INDEX.md needs of every results file: date, commit, machine, command
      date: new Date().toISOString(),
      commit: process.env.LLCOMM_COMMIT ?? 'unknown',
      machine: {
        hostname: hostname(),
        gpu: (() => {
          try {
            const d = cudaDriver()
            return d.deviceName(d.device(0))
          } catch {
            return null
          }
        })(),
      },
      command: `node scripts/bench-fused.mjs ${process.argv.slice(2).join(' ')}`.trim(),
      dtype,
      calls,
      replays,
      bufferBytes: bufferBytes ?? null,
      at: new Date().toISOString(),
      rows,
    },
    null,
    1,
  )}\n`,
)
console.log(`wrote ${outFile}`)
