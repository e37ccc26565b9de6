#!/usr/bin/env node
// The cuda long run (issue 19 item 9), for the GPU machine: --calls graph replays in all (default 1,000,000) on
// virtual ranks of GPU 0, spread over every kernel algorithm x f32/bf16 x three sizes; each replay copies one of
// SETS input sets into the collective's buffers, runs the AllReduce and copies the outputs out (CapturedGraph).
// Before each configuration every channel epoch is set just below 2^32 (testHooks.setChannelEpochs), so every
// configuration crosses the epoch wrap. Sampled checks: every --check-every replays (and after the last) the
// stream is synchronized, the error word read, and every set's outputs compared bit for bit with the exact sum
// (small integer inputs: exact in f32 and bf16, whatever the order). Writes a JSON result to bench/results/ or $OUT.
//   npm run build && NCCL_NVLS_ENABLE=0 node scripts/long-run-cuda.mjs [--calls 1000000] [--ranks 8] [--check-every 5000]
import { execSync } from 'node:child_process'
import { mkdirSync, writeFileSync } from 'node:fs'
import { hostname } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { CapturedGraph, createCudaCommunicator, cudaDriver, DTYPE_CODECS } from 'llcomm/internal'

const args = process.argv.slice(2)
const flag = (name, fallback) => {
  const i = args.indexOf(name)
  return i >= 0 ? args[i + 1] : fallback
}
const totalCalls = Number(flag('--calls', '1000000'))
const ranks = Number(flag('--ranks', '8'))
const checkEvery = Number(flag('--check-every', '5000'))
/** Stored epoch word before each configuration: the next call's epoch is this + 1; about 300 calls to the wrap. */
const storedEpoch = Number(flag('--stored-epoch', String(2 ** 32 - 1 - 300)))
const SETS = 4
const POISON = 0x7fbfdead
const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const date = new Date().toISOString()
const outDir = process.env.OUT ?? join(root, 'bench', 'results')
const out = flag('--out', join(outDir, `cuda-long-run-${date.slice(0, 10)}.json`))
let commit = process.env.LLCOMM_COMMIT
if (!commit) {
  try {
    commit = execSync('git rev-parse HEAD', { cwd: root, encoding: 'utf8' }).trim()
  } catch {
    commit = 'unknown'
  }
}

const d = cudaDriver()
const comm = await createCudaCommunicator({ backend: 'cuda', devices: new Array(ranks).fill(0), timeoutMs: 5000 })
const algorithms = [
  'oneshot-ll',
  'oneshot-sentinel',
  'twoshot-sentinel',
  'twoshot-atomic',
  'oneshot-barrier',
  'ring',
].filter((a) => comm.algorithms.includes(a))
const configs = []
for (const algorithm of algorithms)
  for (const dtype of ['f32', 'bf16'])
    for (const count of [257, 4099, 65_537]) configs.push({ algorithm, dtype, count })
const perConfig = Math.ceil(totalCalls / configs.length)

const value = (set, rank, i) => ((i * 7 + rank * 5 + set * 3) % 17) - 8
function hostInput(dtype, count, set, rank) {
  if (dtype === 'f32') return Float32Array.from({ length: count }, (_, i) => value(set, rank, i))
  return Uint16Array.from({ length: count }, (_, i) => DTYPE_CODECS.bf16.encodeLane(value(set, rank, i)))
}
function expectedWords(dtype, count, set) {
  const sums = Array.from({ length: count }, (_, i) => {
    let s = 0
    for (let r = 0; r < ranks; r++) s += value(set, r, i)
    return s
  })
  if (dtype === 'f32') return new Uint32Array(Float32Array.from(sums).buffer)
  return Uint16Array.from(sums, (s) => DTYPE_CODECS.bf16.encodeLane(s))
}

const results = []
let calls = 0
let wrong = 0
let checks = 0
const started = performance.now()
const stream = d.streamCreate()
try {
  for (const cfg of configs) {
    const { algorithm, dtype, count } = cfg
    const bytes = count * (dtype === 'f32' ? 4 : 2)
    const alloc = () => d.memAlloc(Math.ceil(bytes / 256) * 256)
    const free = []
    const mk = () => {
      const p = alloc()
      free.push(p)
      return p
    }
    const work = { inputs: Array.from({ length: ranks }, mk), outputs: Array.from({ length: ranks }, mk) }
    const sets = Array.from({ length: SETS }, (_, s) => {
      const inputs = Array.from({ length: ranks }, (_, r) => {
        const p = mk()
        d.copyHtoD(p, hostInput(dtype, count, s, r), bytes)
        return p
      })
      return { inputs, outputs: Array.from({ length: ranks }, mk), expected: expectedWords(dtype, count, s) }
    })
    d.contextSynchronize()
    comm.testHooks.setChannelEpochs(storedEpoch)
    const call = comm.prepareDeviceAllReduce({ ...work, count, dtype, algorithm, fallback: false, stream })
    const graphs = sets.map((s) =>
      CapturedGraph.capture(
        d,
        [stream],
        () => {},
        () => {
          for (let r = 0; r < ranks; r++) d.copyDtoDAsync(work.inputs[r], s.inputs[r], bytes, stream)
          call.issue([stream])
          for (let r = 0; r < ranks; r++) d.copyDtoDAsync(s.outputs[r], work.outputs[r], bytes, stream)
        },
      ),
    )
    let cfgWrong = 0
    let cfgChecks = 0
    let error
    const t0 = performance.now()
    const check = () => {
      d.streamSynchronize(stream)
      comm.checkDeviceError()
      const host = dtype === 'f32' ? new Uint32Array(count) : new Uint16Array(count)
      for (const s of sets) {
        for (let r = 0; r < ranks; r++) {
          d.copyDtoH(host, s.outputs[r], bytes)
          for (let i = 0; i < count; i++) if (host[i] !== s.expected[i]) cfgWrong++
          d.memsetD32Async(s.outputs[r], POISON, Math.ceil(bytes / 4), stream) // the next check needs fresh writes
        }
        cfgChecks++
      }
    }
    try {
      for (let i = 0; i < perConfig; i++) {
        graphs[i % SETS].replay(stream)
        // Every set replayed since the last check: SETS replays before a check.
        if ((i + 1) % checkEvery === 0 && i + 1 >= SETS) check()
      }
      check()
    } catch (e) {
      error = `${e.code ?? ''} ${e.message}`
    }
    const ms = performance.now() - t0
    for (const g of graphs) g.destroy()
    d.streamSynchronize(stream)
    for (const p of free.reverse()) d.memFree(p)
    calls += perConfig
    wrong += cfgWrong
    checks += cfgChecks
    results.push({
      ...cfg,
      replays: perConfig,
      setsChecked: cfgChecks,
      wrong: cfgWrong,
      ms: Math.round(ms),
      ...(error ? { error } : {}),
    })
    console.log(
      `${algorithm} ${dtype} ${count}: ${perConfig} replays, ${cfgChecks} sets checked, ${cfgWrong} wrong${error ? `, ${error}` : ''}`,
    )
    if (error) await comm.recover()
  }
} finally {
  d.streamDestroy(stream)
  await comm.close()
}
const doc = {
  what: 'cuda long run: graph replays of copy-in + AllReduce + copy-out on virtual ranks, sampled bitwise checks, every configuration started just below the u32 epoch wrap',
  date,
  commit,
  machine: { hostname: hostname(), node: process.version },
  command: `node scripts/long-run-cuda.mjs ${args.join(' ')}`.trim(),
  ranks,
  calls,
  wrong,
  errors: results.filter((r) => r.error).length,
  setsChecked: checks,
  checkEvery,
  storedEpoch,
  elapsedS: Number(((performance.now() - started) / 1000).toFixed(1)),
  configurations: results,
}
mkdirSync(dirname(out), { recursive: true })
writeFileSync(out, `${JSON.stringify(doc, null, 2)}\n`)
console.log(`${calls} replays: ${wrong} wrong, ${doc.errors} configurations failed -> ${out}`)
process.exitCode = wrong === 0 && doc.errors === 0 ? 0 : 1
