#!/usr/bin/env node
// A long CPU run (issue 19 item 9): N back-to-back AllReduce calls per rank on the per-rank view (the script's own
// worker threads), mixed sizes, algorithms and dtypes (scripts/long-run-plan.mjs), every output word compared with
// the exact sum, with every channel epoch started just below 2^32 so that the run crosses the epoch wrap.
// Writes a JSON result (date, commit, machine, command, calls, wrong, ...) into bench/results/ (or --out FILE).
//   npm run build && node scripts/long-run.mjs --calls 1000000 [--ranks 2] [--start-epoch 4294966294] [--out FILE]
import { execSync } from 'node:child_process'
import { mkdirSync, writeFileSync } from 'node:fs'
import { availableParallelism, cpus, hostname, totalmem } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Worker } from 'node:worker_threads'
import { createCpuCommunicator } from 'llcomm/internal'

const args = process.argv.slice(2)
const flag = (name, fallback) => {
  const i = args.indexOf(name)
  return i >= 0 ? args[i + 1] : fallback
}
const calls = Number(flag('--calls', '1000000'))
const ranks = Number(flag('--ranks', '2'))
// Even (parity keeps alternating across the wrap, see protocol/cpu/wait.ts) and about 1000 chunks below it.
const startEpoch = Number(flag('--start-epoch', String(2 ** 32 - 2 - 1000)))
const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const date = new Date().toISOString()
const out = flag('--out', join(root, 'bench', 'results', `cpu-long-run-${date.slice(0, 10)}.json`))
let commit = process.env.LLCOMM_COMMIT
if (!commit) {
  try {
    commit = execSync('git rev-parse HEAD', { cwd: root, encoding: 'utf8' }).trim()
  } catch {
    commit = 'unknown'
  }
}

// An 8 KB buffer so that the larger counts are chunked (more epochs per call, more wraps of the buffer halves).
const comm = await createCpuCommunicator({ backend: 'cpu', ranks, bufferBytes: 8192, testStartEpoch: startEpoch })
const started = performance.now()
let results
try {
  results = await Promise.all(
    comm.rankHandles().map(
      (handle) =>
        new Promise((resolve, reject) => {
          const w = new Worker(new URL('./long-run-rank.mjs', import.meta.url), { workerData: { handle, calls } })
          w.once('message', resolve)
          w.once('error', reject)
        }),
    ),
  )
} finally {
  await comm.close()
}
const elapsedS = (performance.now() - started) / 1000
const wrong = results.reduce((s, r) => s + r.wrong, 0)
const failures = results.flatMap((r, rank) => r.failures.map((f) => ({ rank, ...f })))
const endEpochs = results.map((r) => r.epoch)
const doc = {
  what: 'cpu long run: back-to-back per-rank AllReduce calls across the channel epoch wrap, every output checked',
  date,
  commit,
  machine: {
    hostname: hostname(),
    cpu: cpus()[0]?.model,
    cores: availableParallelism(),
    memoryBytes: totalmem(),
    node: process.version,
  },
  command: `node scripts/long-run.mjs ${args.join(' ')}`.trim(),
  ranks,
  bufferBytes: 8192,
  calls,
  wrong,
  errors: failures.filter((f) => f.error).length,
  startEpoch,
  endEpochs,
  // The epoch only grows between wraps; an end epoch below the start one means every rank crossed 2^32.
  crossedWrap: endEpochs.every((e) => e < startEpoch),
  elapsedS: Number(elapsedS.toFixed(1)),
  callsPerSecond: Math.round(calls / elapsedS),
  failures: failures.slice(0, 20),
}
mkdirSync(dirname(out), { recursive: true })
writeFileSync(out, `${JSON.stringify(doc, null, 2)}\n`)
console.log(
  `${calls} calls x ${ranks} ranks in ${elapsedS.toFixed(1)} s: ${wrong} wrong, ${doc.errors} errors, crossed the wrap: ${doc.crossedWrap} -> ${out}`,
)
process.exitCode = wrong === 0 && doc.errors === 0 && doc.crossedWrap ? 0 : 1
