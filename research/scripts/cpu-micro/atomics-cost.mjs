#!/usr/bin/env node
// Cost of SC Atomics vs plain typed-array accesses on a SharedArrayBuffer Int32Array in this V8 (the figures behind
// the sentinel range design, docs/protocols.md). Prints one JSON object: ns per access of each kind.
const a = new Int32Array(new SharedArrayBuffer(4 * 8192))
const src = Int32Array.from({ length: 3072 }, (_, i) => i)
const out = new Int32Array(3072)
const SENTINEL = 0x7fa57fa5
const kinds = {
  scStore: () => {
    for (let i = 0; i < 3072; i++) Atomics.store(a, i, src[i])
  },
  plainStore: () => {
    for (let i = 0; i < 3072; i++) a[i] = src[i]
  },
  bulkCopy: () => {
    a.set(src, 0)
  },
  scLoad: () => {
    for (let i = 0; i < 3072; i++) {
      let w = Atomics.load(a, i)
      if (w === SENTINEL) w = 0
      out[i] = w
    }
  },
  plainLoad: () => {
    for (let i = 0; i < 3072; i++) {
      let w = a[i]
      if (w === SENTINEL) w = 0
      out[i] = w
    }
  },
}
const result = {}
for (const [name, f] of Object.entries(kinds)) {
  for (let k = 0; k < 3000; k++) f()
  let best = Number.POSITIVE_INFINITY
  for (let rep = 0; rep < 5; rep++) {
    const t = performance.now()
    for (let k = 0; k < 5000; k++) f()
    best = Math.min(best, ((performance.now() - t) * 1e6) / 5000 / 3072)
  }
  result[`${name}NsPerWord`] = Number(best.toFixed(3))
}
console.log(JSON.stringify(result))
