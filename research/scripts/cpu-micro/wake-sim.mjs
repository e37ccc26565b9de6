#!/usr/bin/env node
// A model of one call on worker threads, without llcomm: N threads (env N, default 4); per call each publishes a
// flag, waits for every peer's (spin, env SPIN polls, then Atomics.wait on a doorbell), then busy-works W µs (env
// W). MODE=oneshot has one such wait point per call, MODE=barrier two (a second flag round after the work).
// TARGET=1 notifies only a sleeper that waits for the writer. Prints per-call median (last finish - last arrival)
// and the back-to-back loop time per call, as llcomm's CPU bench reports them.
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads'

const N = +(process.env.N || 4),
  ITERS = 2000,
  W = +(process.env.W || 40),
  MODE = process.env.MODE || 'oneshot',
  TARGET = process.env.TARGET === '1',
  SPIN = +(process.env.SPIN || 0)
if (isMainThread) {
  const sab = new SharedArrayBuffer(64 * 64)
  const ws = Array.from({ length: N }, (_, id) => new Worker(new URL(import.meta.url), { workerData: { sab, id } }))
  const res = await Promise.all(ws.map((w) => new Promise((r) => w.on('message', r))))
  const a = res.map((r) => r.a),
    f = res.map((r) => r.f)
  const per = []
  for (let i = 100; i < ITERS; i++) per.push(Math.max(...f.map((x) => x[i])) - Math.max(...a.map((x) => x[i])))
  per.sort((x, y) => x - y)
  console.log(
    JSON.stringify({
      mode: MODE,
      threads: N,
      workUs: W,
      spin: SPIN,
      targeted: TARGET,
      medianPerCallUs: Math.round(per[per.length >> 1] * 1000),
      backToBackUs: Math.round(
        ((Math.max(...f.map((x) => x[ITERS - 1])) - Math.min(...a.map((x) => x[100]))) * 1000) / (ITERS - 100),
      ),
    }),
  )
  for (const w of ws) await w.terminate()
} else {
  const { sab, id } = workerData
  const a = new Int32Array(sab)
  const FLAG = (r) => r * 16,
    BELL = (r) => r * 16 + 1,
    SLEEP = (r) => r * 16 + 2,
    AWAIT = (r) => r * 16 + 3
  const ring = () => {
    for (let p = 0; p < N; p++)
      if (p !== id) {
        Atomics.add(a, BELL(p), 1)
        if (Atomics.load(a, SLEEP(p)) && (!TARGET || Atomics.load(a, AWAIT(p)) === id)) Atomics.notify(a, BELL(p))
      }
  }
  const waitAll = (v) => {
    for (let p = 0; p < N; p++) {
      let s = 0
      while (Atomics.load(a, FLAG(p)) < v) {
        if (s++ < SPIN) continue
        Atomics.store(a, AWAIT(id), p)
        Atomics.store(a, SLEEP(id), 1)
        const b = Atomics.load(a, BELL(id))
        if (Atomics.load(a, FLAG(p)) >= v) break
        Atomics.wait(a, BELL(id), b, 1000)
      }
      Atomics.store(a, SLEEP(id), 0)
    }
  }
  const work = (us) => {
    const e = performance.now() + us / 1000
    while (performance.now() < e);
  }
  const arr = new Float64Array(ITERS),
    fin = new Float64Array(ITERS)
  const off = performance.timeOrigin
  for (let it = 1; it <= ITERS; it++) {
    arr[it - 1] = off + performance.now()
    if (MODE === 'oneshot') {
      work(W / 4)
      Atomics.store(a, FLAG(id), it)
      ring()
      waitAll(it)
      work(W)
    } else {
      work(W / 8)
      Atomics.store(a, FLAG(id), 2 * it - 1)
      ring()
      waitAll(2 * it - 1)
      work(W)
      Atomics.store(a, FLAG(id), 2 * it)
      ring()
      waitAll(2 * it)
    }
    fin[it - 1] = off + performance.now()
  }
  parentPort.postMessage({ a: arr, f: fin })
}
