/**
 * The sol primitives' analogues on CPU worker threads (the cpu backend's ranks are worker_threads sharing
 * SharedArrayBuffers):
 *   L2 round trip   → one seq-cst Atomics.store + Atomics.load pair on shared memory (the store is a full fence
 *                     on x86 and a release+acquire pair on Arm: the cost of making a write visible, like
 *                     __threadfence())
 *   ping-pong       → two workers handing a flag back and forth (Atomics store / spin on Atomics.load)
 *   kernel floor    → an empty timed region inside a worker (the floor of in-rank timing)
 *   copy bandwidth  → TypedArray.set between two SharedArrayBuffers in a worker
 * Every spin is bounded by a deadline and its timeout names the rank, the peer and the round (epoch).
 */
import { Worker } from 'node:worker_threads'
import { LlcommError } from 'llcomm/internal'
import { remoteStoreFromPingPongUs, type SolPrimitives } from './model.js'

export interface CpuSolRaw {
  fenceUs: number
  pingPongRoundTripUs: number
  emptyRegionUs: number
  copyBandwidthGBs: number
  copyBytes: number
}

// Runs in the workers (eval'd CommonJS). Each task posts { ok, value } or { ok: false, error }.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads')
const { performance } = require('node:perf_hooks')
const median = (a) => { const s = [...a].sort((x, y) => x - y); const m = s.length >> 1; return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2 }
function timeout(rank, peer, round) {
  return { code: 'TIMEOUT', message: 'rank ' + rank + ' timed out waiting for peer ' + peer + ' at epoch ' + round + ' (sol ping-pong)', details: { rank, peer, epoch: round } }
}
function run(task) {
  if (task.kind === 'fence') {
    const cell = new Int32Array(task.sab)
    const iterations = 200000, reps = 7, perRep = []
    for (let r = 0; r < reps; r++) {
      const t0 = performance.now()
      // seq-cst store then load: the store cannot complete before earlier accesses are visible (full fence).
      for (let i = 0; i < iterations; i++) { Atomics.store(cell, 0, i); if (Atomics.load(cell, 0) !== i) throw new Error('fence cell changed under us') }
      perRep.push(((performance.now() - t0) * 1000) / iterations)
    }
    return median(perRep)
  }
  if (task.kind === 'pingpong') {
    // flags[0]: ping round written by rank 0; flags[1]: pong round written by rank 1; flags[2]: rank 1 ready.
    // Seq-cst Atomics order each flag store after everything before it and each load before everything after,
    // so a round's flag seen by the peer is exactly one hop; nothing weaker is portable in JS.
    const flags = new Int32Array(task.sab)
    // The deadline is per wait (timeoutMs without progress), not for the whole run: on a loaded machine with fewer
    // free cores than ranks, each round trip may wait for the peer's thread to be scheduled, and a run that keeps
    // making progress is slow, not hung (a 2-core VM under load once took over 10 s for 28 000 round trips).
    const spinUntil = (index, value, rank, peer, round) => {
      let spins = 0
      let deadline = 0
      while (Atomics.load(flags, index) !== value) {
        if ((++spins & 4095) === 0) {
          const now = performance.now()
          if (deadline === 0) deadline = now + task.timeoutMs
          else if (now > deadline) throw timeout(rank, peer, round)
        }
      }
    }
    const batches = task.batches, perBatch = task.roundTripsPerBatch, means = []
    if (task.rank === 1) {
      Atomics.store(flags, 2, 1)
      for (let round = 1; round <= batches * perBatch; round++) { spinUntil(0, round, 1, 0, round); Atomics.store(flags, 1, round) }
      return 0
    }
    spinUntil(2, 1, 0, 1, 0)
    let round = 0
    for (let b = 0; b < batches; b++) {
      const t0 = performance.now()
      for (let i = 0; i < perBatch; i++) { round++; Atomics.store(flags, 0, round); spinUntil(1, round, 0, 1, round) }
      means.push(((performance.now() - t0) * 1000) / perBatch)
    }
    return median(means)
  }
  if (task.kind === 'empty') {
    const samples = []
    for (let i = 0; i < 20001; i++) { const t0 = performance.now(); samples.push((performance.now() - t0) * 1000) }
    return median(samples)
  }
  if (task.kind === 'copy') {
    const src = new Float32Array(task.src), dst = new Float32Array(task.dst)
    src.fill(1)
    const times = []
    for (let r = 0; r < 9; r++) { const t0 = performance.now(); dst.set(src); times.push((performance.now() - t0) * 1000) }
    return task.bytes / median(times) / 1e3
  }
  throw new Error('unknown task ' + task.kind)
}
try { parentPort.postMessage({ ok: true, value: run(workerData) }) } catch (e) { parentPort.postMessage({ ok: false, error: e && e.code ? e : { code: 'WORKER_FAILED', message: String(e && e.message || e), details: {} } }) }
`

function runInWorker(task: Record<string, unknown>): Promise<number> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: task })
    let settled = false
    worker.once(
      'message',
      (m: {
        ok: boolean
        value?: number
        error?: { code: 'TIMEOUT' | 'WORKER_FAILED'; message: string; details: Record<string, unknown> }
      }) => {
        settled = true
        if (m.ok && typeof m.value === 'number') resolve(m.value)
        else reject(LlcommError.fromJSON(m.error ?? { code: 'WORKER_FAILED', message: 'sol worker failed' }))
      },
    )
    worker.once('error', (e) => {
      settled = true
      reject(
        new LlcommError('WORKER_FAILED', `sol worker (${String(task.kind)}) failed: ${e.message}`, {}, { cause: e }),
      )
    })
    worker.once('exit', (code) => {
      if (!settled)
        reject(
          new LlcommError(
            'WORKER_FAILED',
            `sol worker (${String(task.kind)}) exited with code ${code} before answering`,
          ),
        )
    })
  })
}

export interface CpuSolOptions {
  /** Deadline of the ping-pong spins. Default 10 s. */
  timeoutMs?: number
  pingPongBatches?: number
  roundTripsPerBatch?: number
  copyBytes?: number
}

export async function measureCpuPrimitives(
  o: CpuSolOptions = {},
): Promise<{ primitives: SolPrimitives; raw: CpuSolRaw }> {
  const fenceUs = await runInWorker({ kind: 'fence', sab: new SharedArrayBuffer(64) })
  const flags = new SharedArrayBuffer(64)
  const pingPong = {
    kind: 'pingpong',
    sab: flags,
    timeoutMs: o.timeoutMs ?? 10_000,
    batches: o.pingPongBatches ?? 31,
    roundTripsPerBatch: o.roundTripsPerBatch ?? 2000,
  }
  const [pingPongRoundTripUs] = await Promise.all([
    runInWorker({ ...pingPong, rank: 0 }),
    runInWorker({ ...pingPong, rank: 1 }),
  ])
  const emptyRegionUs = await runInWorker({ kind: 'empty' })
  const copyBytes = o.copyBytes ?? 8 << 20
  const copyBandwidthGBs = await runInWorker({
    kind: 'copy',
    src: new SharedArrayBuffer(copyBytes),
    dst: new SharedArrayBuffer(copyBytes),
    bytes: copyBytes,
  })
  return {
    primitives: {
      l2RoundTripUs: fenceUs,
      remoteStoreUs: remoteStoreFromPingPongUs(pingPongRoundTripUs, fenceUs),
      kernelFloorUs: emptyRegionUs,
      copyBandwidthGBs,
    },
    raw: { fenceUs, pingPongRoundTripUs, emptyRegionUs, copyBandwidthGBs, copyBytes },
  }
}
