#!/usr/bin/env node
// The Node side of the eager launch-overhead comparison (issue 4, item 4), and the driver of the C++ side.
//
//   node scripts/launch-overhead/measure.mjs --cpp <launch_loop binary> --work <dir> [--out <json>] [--reps 2]
//
// What it does (GPU machine):
//   1. Creates a cuda communicator with two virtual ranks on device 0 (devices [0, 0]: one cooperative launch),
//      and device buffers for a bf16 AllReduce of COUNT elements per rank (inputs non-zero).
//   2. Writes, per case, the cubin llcomm compiled (NVRTC, the communicator's own module cache) and a manifest with
//      the exact parameter bytes, the device buffers they point at (with their fills) and the launch shape, so the
//      C++ loop (launch_loop.cpp) launches identical work: same cubin, same bytes, same grid/block/attributes.
//   3. Times, per case and variant, the JS launch and the C++ launch the same way (see launch_loop.cpp): bursts of
//      64 launches on an idle stream, only the launch calls timed (no back-pressure); device µs per kernel from
//      events around 64 back-to-back kernels; steady state without synchronization. Repeated --reps times, JS and
//      C++ alternating, so the spread between repetitions is visible.
//   4. Prints one table (case, C++ µs/launch, JS µs/launch, ratio, device µs/kernel) and writes JSON.
import { execFileSync } from 'node:child_process'
import { mkdirSync, writeFileSync } from 'node:fs'
import { hostname } from 'node:os'
import { join, resolve } from 'node:path'
import { parseArgs } from 'node:util'

const { values: opts } = parseArgs({
  options: {
    cpp: { type: 'string' },
    work: { type: 'string', default: '/tmp/llcomm-launch-overhead' },
    out: { type: 'string' },
    reps: { type: 'string', default: '4' },
    bursts: { type: 'string', default: '200' },
    steady: { type: 'string', default: '20000' },
    count: { type: 'string', default: '4096' },
    inproc: { type: 'string' },
  },
})
const BURST = 64
const BURSTS = Number(opts.bursts)
const STEADY = Number(opts.steady)
const REPS = Number(opts.reps)
const COUNT = Number(opts.count)
const INPUT_WORD = 0x3f803f80 // bf16 1.0 in both halves: non-zero inputs
const workDir = resolve(opts.work)
mkdirSync(workDir, { recursive: true })

const ffi = await import('llcomm/internal')
const { createCudaCommunicator } = await import('llcomm/internal')
const { deviceBufferLayout } = await import('llcomm/internal')
const { LLCOMM_ERROR_WORD_BYTES } = await import('llcomm/internal')
const { packSolEmptyParams } = await import('../../packages/tools/dist/src/kernels/abi.js')
const { SOL_SOURCE } = await import('../../packages/tools/dist/src/kernels/table.js')

const d = ffi.cudaDriver()
const comm = await createCudaCommunicator({ backend: 'cuda', devices: [0, 0], timeoutMs: 10_000 })
// Internals read for the measurement (plain JS properties; TypeScript's `private` is compile-time only).
const group = comm.deviceSet.groups[0]
const modules = comm.modules
d.setCurrent(group.context)
const stream = d.streamCreate()
const e0 = d.eventCreate()
const e1 = d.eventCreate()
const bytesPerRank = COUNT * 2
const inputs = [d.memAlloc(bytesPerRank), d.memAlloc(bytesPerRank)]
const outputs = [d.memAlloc(bytesPerRank), d.memAlloc(bytesPerRank)]
for (const p of inputs) d.memsetD32(p, INPUT_WORD, bytesPerRank / 4)
for (const p of outputs) d.memsetD32(p, 0, bytesPerRank / 4)

const quantile = (xs, q) => {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.max(0, Math.round(q * (s.length - 1))))]
}
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b)
  const n = s.length
  return n % 2 ? s[(n - 1) / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2])
}

/** Same schedule as launch_loop.cpp; `launch` is one launch on `stream`. */
function timeLaunches(launch) {
  globalThis.gc?.() // run.sh passes --expose-gc: the previous case's garbage is not collected inside this one
  for (let b = 0; b < 10; b++) {
    for (let i = 0; i < BURST; i++) launch()
    d.streamSynchronize(stream)
  }
  const burstUs = new Array(BURSTS)
  let sumUs = 0
  for (let b = 0; b < BURSTS; b++) {
    const t0 = performance.now()
    for (let i = 0; i < BURST; i++) launch()
    const t1 = performance.now()
    d.streamSynchronize(stream)
    const us = ((t1 - t0) * 1000) / BURST
    burstUs[b] = us
    sumUs += us
  }
  const deviceUs = []
  for (let b = 0; b < 20; b++) {
    d.eventRecord(e0, stream)
    for (let i = 0; i < BURST; i++) launch()
    d.eventRecord(e1, stream)
    d.eventSynchronize(e1)
    deviceUs.push((d.eventElapsedMs(e0, e1) * 1000) / BURST)
  }
  const s0 = performance.now()
  for (let i = 0; i < STEADY; i++) launch()
  const s1 = performance.now()
  d.streamSynchronize(stream)
  return {
    hostUsPerLaunchMedian: median(burstUs),
    hostUsPerLaunchMean: sumUs / BURSTS,
    deviceUsPerKernel: median(deviceUs),
    steadyHostUsPerLaunch: ((s1 - s0) * 1000) / STEADY,
  }
}

const hex = (u8) => Buffer.from(u8.buffer, u8.byteOffset, u8.byteLength).toString('hex')

/** Writes a manifest for launch_loop.cpp; `pointers` maps device addresses found in the params to buffers. */
function writeManifest(name, { cubin, kernel, grid, block, smem, params, buffers, variants }) {
  const cubinPath = join(workDir, `${name}.cubin`)
  writeFileSync(cubinPath, cubin)
  const lines = [`case ${name}`, `cubin ${cubinPath}`, `kernel ${kernel}`, `shape ${grid} ${block} ${smem}`]
  const byAddress = new Map()
  buffers.forEach((b, i) => {
    lines.push(`buffer ${i} ${b.bytes} ${b.role}`)
    for (const f of b.fills ?? []) lines.push(`fill ${i} ${f.offset} ${f.bytes} ${(f.word32 >>> 0).toString(16)}`)
    if (b.checkZero) lines.push(`check-zero ${i}`)
    byAddress.set(BigInt(b.address), i)
  })
  lines.push(`params ${params.byteLength} ${hex(params)}`)
  const view = new DataView(params.buffer, params.byteOffset, params.byteLength)
  const found = new Set()
  for (let off = 0; off + 8 <= params.byteLength; off += 8) {
    const v = view.getBigUint64(off, true)
    const i = byAddress.get(v)
    if (i !== undefined) {
      lines.push(`reloc ${off} ${i} 0`)
      found.add(i)
    }
  }
  const missing = buffers.filter((b, i) => b.mustAppear && !found.has(i)).map((b) => b.role)
  if (missing.length) throw new Error(`${name}: pointers not found in the params: ${missing.join(', ')}`)
  for (const v of variants) lines.push(`variant ${v.label} ${v.cooperative ? 1 : 0} ${v.pdl ? 1 : 0}`)
  const path = join(workDir, `${name}.manifest`)
  writeFileSync(path, `${lines.join('\n')}\n`)
  return path
}

// ---- case 1: the empty kernel (pure launch overhead) at two shapes ----
const solCubin = modules.cubin(SOL_SOURCE, group.arch).cubin
const emptyFn = modules.function(group, SOL_SOURCE, 'llcomm_sol_empty')
const emptyParams = new Uint8Array(packSolEmptyParams())

// ---- case 2: oneshot-ll (LL8) bf16 sum, 2 virtual ranks ----
const allreduceArgs = (pdl) => ({
  inputs,
  outputs,
  count: COUNT,
  dtype: 'bf16',
  algorithm: 'oneshot-ll',
  protocol: 'll8',
  pdl,
  fallback: false,
  stream,
})
const prepared = {
  false: comm.prepareDeviceAllReduce(allreduceArgs(false)),
  true: comm.prepareDeviceAllReduce(allreduceArgs(true)),
}
for (const p of Object.values(prepared)) {
  if (p.chunks !== 1 || p.algorithm !== 'oneshot-ll')
    throw new Error(`expected one oneshot-ll chunk, got ${JSON.stringify(p)}`)
  p.issue()
}
d.streamSynchronize(stream)
comm.checkDeviceError()
/** The PreparedLaunch the communicator built for (pdl), found in its launcher's cache. */
const launchOf = (pdl) => {
  // keys: kernel|group|ranks|blocksPerRank|threads|smem|pdl|cooperative (allreduce-launcher.ts launchFor)
  const all = [...comm.launcher.launches.entries()].filter(([k]) => k.split('|')[6] === (pdl ? '1' : '0'))
  if (all.length !== 1) throw new Error(`expected one cached launch for pdl=${pdl}, found ${all.length}`)
  return all[0][1]
}
const arLaunch = launchOf(false)
const arGrid = new DataView(arLaunch.snapshot().bytes.buffer).getUint32(0, true)
const arBlock = new DataView(arLaunch.snapshot().bytes.buffer).getUint32(12, true)
const arParams = arLaunch.snapshot().bytes.slice(256, 256 + arLaunch.paramBytes)
const arVariant = comm.launcher.variant('oneshot-ll', 'bf16', 'sum', 'll8')
if (arVariant.kernelName !== arLaunch.name)
  throw new Error(`variant ${arVariant.kernelName} vs launch ${arLaunch.name}`)
const arCubin = modules.cubin(arVariant.sourceFile, group.arch).cubin
const layout = deviceBufferLayout(2, comm.bufferBytes)

const manifests = {
  'empty-1x32': writeManifest('empty-1x32', {
    cubin: solCubin,
    kernel: 'llcomm_sol_empty',
    grid: 1,
    block: 32,
    smem: 0,
    params: emptyParams,
    buffers: [],
    variants: [
      { label: 'plain', cooperative: false, pdl: false },
      { label: 'coop', cooperative: true, pdl: false },
      { label: 'coop+pdl', cooperative: true, pdl: true },
    ],
  }),
  [`empty-${arGrid}x${arBlock}`]: writeManifest(`empty-${arGrid}x${arBlock}`, {
    cubin: solCubin,
    kernel: 'llcomm_sol_empty',
    grid: arGrid,
    block: arBlock,
    smem: 0,
    params: emptyParams,
    buffers: [],
    variants: [
      { label: 'coop', cooperative: true, pdl: false },
      { label: 'coop+pdl', cooperative: true, pdl: true },
    ],
  }),
  oneshot: writeManifest('oneshot-ll8-bf16', {
    cubin: arCubin,
    kernel: arLaunch.name,
    grid: arGrid,
    block: arBlock,
    smem: 0,
    params: arParams,
    buffers: [
      ...inputs.map((p, r) => ({
        address: p,
        bytes: bytesPerRank,
        role: `input${r}`,
        mustAppear: true,
        fills: [{ offset: 0, bytes: bytesPerRank, word32: INPUT_WORD }],
      })),
      ...outputs.map((p, r) => ({ address: p, bytes: bytesPerRank, role: `output${r}`, mustAppear: true })),
      ...[0, 1].map((r) => {
        const { recvBuf } = comm.deviceBuffersOf(r)
        return {
          address: recvBuf,
          bytes: layout.recvBufBytes,
          role: `recvBuf${r}`,
          mustAppear: true,
          fills: layout.fills.filter((f) => f.region === 'recv'),
        }
      }),
      ...[0, 1].map((r) => {
        const { scratch } = comm.deviceBuffersOf(r)
        return {
          address: scratch,
          bytes: layout.scratchBytes,
          role: `scratch${r}`,
          mustAppear: true,
          fills: layout.fills.filter((f) => f.region === 'scratch'),
        }
      }),
      { address: comm.errorWord, bytes: LLCOMM_ERROR_WORD_BYTES, role: 'errorWord', mustAppear: true, checkZero: true },
    ],
    variants: [
      { label: 'coop', cooperative: true, pdl: false },
      { label: 'coop+pdl', cooperative: true, pdl: true },
    ],
  }),
}

// JS launchers per (case, variant). The empty-kernel ones are PreparedLaunch objects of our own.
const emptyLaunch = (grid, block, flags) => {
  const l = new ffi.PreparedLaunch(
    d,
    emptyFn,
    'llcomm_sol_empty',
    { gridDimX: grid, blockDimX: block, sharedBytes: 0 },
    flags,
    emptyParams.byteLength,
  )
  l.setParams(emptyParams)
  l.setStream(stream)
  return l
}
const jsCases = []
for (const [label, flags] of [
  ['plain', { cooperative: false, pdl: false }],
  ['coop', { cooperative: true, pdl: false }],
  ['coop+pdl', { cooperative: true, pdl: true }],
]) {
  const l = emptyLaunch(1, 32, flags)
  jsCases.push({
    case: 'empty-1x32',
    variant: label,
    path: 'PreparedLaunch.launch()',
    run: () => l.launch(),
    launch: l,
  })
}
for (const [label, flags] of [
  ['coop', { cooperative: true, pdl: false }],
  ['coop+pdl', { cooperative: true, pdl: true }],
]) {
  const l = emptyLaunch(arGrid, arBlock, flags)
  jsCases.push({
    case: `empty-${arGrid}x${arBlock}`,
    variant: label,
    path: 'PreparedLaunch.launch()',
    run: () => l.launch(),
    launch: l,
  })
}
for (const [label, pdl] of [
  ['coop', false],
  ['coop+pdl', true],
]) {
  const l = launchOf(pdl)
  const p = prepared[pdl]
  const args = allreduceArgs(pdl)
  jsCases.push({
    case: 'oneshot-ll8-bf16',
    variant: label,
    path: 'PreparedLaunch.launch()',
    run: () => l.launch(),
    launch: l,
  })
  // The bare koffi function with the same four numbers held in locals: what the crossing alone costs, without
  // PreparedLaunch's method call and return-code check.
  const raw = d.cuLaunchKernelExRaw
  const [cfg, fn, kp, ex] = [l.block.address, l.fn, l.kernelParamsArg, l.extraArg]
  jsCases.push({
    case: 'oneshot-ll8-bf16',
    variant: label,
    path: 'koffi cuLaunchKernelEx, bare',
    run: () => {
      if (raw(cfg, fn, kp, ex) !== 0) throw new Error('cuLaunchKernelEx failed')
    },
    launch: l,
  })
  jsCases.push({
    case: 'oneshot-ll8-bf16',
    variant: label,
    path: 'prepareDeviceAllReduce().issue()',
    run: () => p.issue(),
    launch: l,
  })
  jsCases.push({
    case: 'oneshot-ll8-bf16',
    variant: label,
    path: 'prepare(args).issue() per call (old eager path)',
    run: () => comm.prepareDeviceAllReduce(args).issue(),
    slow: true,
  })
  jsCases.push({
    case: 'oneshot-ll8-bf16',
    variant: label,
    path: 'deviceAllReduce(args)',
    run: () => comm.deviceAllReduce(args),
    launch: l,
  })
  jsCases.push({
    case: 'oneshot-ll8-bf16',
    variant: label,
    path: 'deviceAllReduce({...}) new args each call',
    launch: l,
    run: () =>
      comm.deviceAllReduce({
        inputs,
        outputs,
        count: COUNT,
        dtype: 'bf16',
        algorithm: 'oneshot-ll',
        protocol: 'll8',
        pdl,
        fallback: false,
        stream,
      }),
  })
}

// ---- in-process C loop (--inproc liblaunch_inproc.so, launch_inproc.cpp) ----
// The C loop runs in this process and launches the very PreparedLaunch the JS path ends in (same config block,
// function, parameters, stream, driver instance), so the ratio holds nothing but the JS side's own cost. Bursts
// alternate JS/C and C/JS pair by pair; each burst starts on an idle stream; "paired" is the median of JS/C over
// the pairs, which run back to back and so share the machine's drift.
let inproc
if (opts.inproc) {
  const koffi = (await import('koffi')).default
  const lib = koffi.load(resolve(opts.inproc))
  inproc = {
    init: lib.func('int llcomm_inproc_init()'),
    burst: lib.func(
      'double llcomm_inproc_burst(uint64_t config, uint64_t f, uint64_t kernelParams, uint64_t extra, int n)',
    ),
  }
  if (inproc.init() !== 0) throw new Error('launch_inproc: cuLaunchKernelEx not found in the loaded libcuda.so.1')
}
/** One in-process pass over a case: BURSTS pairs of (JS burst, C burst), order alternating. */
function timeInProcess(c) {
  globalThis.gc?.()
  const l = c.launch
  // Private fields of PreparedLaunch (compile-time private only): what launch() passes to cuLaunchKernelEx.
  const cBurst = () => {
    const us = inproc.burst(l.block.address, l.fn, l.kernelParamsArg, l.extraArg, BURST)
    if (us < 0) throw new Error(`launch_inproc: cuLaunchKernelEx returned ${-us}`)
    return us
  }
  const jsBurst = () => {
    const t0 = performance.now()
    for (let i = 0; i < BURST; i++) c.run()
    const t1 = performance.now()
    return ((t1 - t0) * 1000) / BURST
  }
  for (let b = 0; b < 10; b++) {
    jsBurst()
    d.streamSynchronize(stream)
    cBurst()
    d.streamSynchronize(stream)
  }
  const jsUs = []
  const cUs = []
  for (let b = 0; b < BURSTS; b++) {
    let js
    let cc
    if (b % 2 === 0) {
      js = jsBurst()
      d.streamSynchronize(stream)
      cc = cBurst()
      d.streamSynchronize(stream)
    } else {
      cc = cBurst()
      d.streamSynchronize(stream)
      js = jsBurst()
      d.streamSynchronize(stream)
    }
    jsUs.push(js)
    cUs.push(cc)
  }
  return { jsUs, cUs, paired: jsUs.map((x, i) => x / cUs[i]) }
}
const inprocCases = jsCases.filter((c) => c.launch !== undefined)

const results = []
const inprocResults = []
for (let rep = 0; rep < REPS; rep++) {
  for (const c of jsCases) {
    const r = timeLaunches(c.run)
    results.push({ side: 'js', rep, case: c.case, variant: c.variant, path: c.path, ...r })
  }
  comm.checkDeviceError()
  if (opts.cpp) {
    for (const m of Object.values(manifests)) {
      const text = execFileSync(opts.cpp, [m, String(BURSTS), String(STEADY)], { encoding: 'utf8' })
      for (const line of text.split('\n').filter(Boolean)) results.push({ rep, ...JSON.parse(line) })
    }
  }
  if (inproc) {
    for (const c of inprocCases) {
      const r = timeInProcess(c)
      inprocResults.push({
        rep,
        case: c.case,
        variant: c.variant,
        path: c.path,
        jsUsMedian: median(r.jsUs),
        cUsMedian: median(r.cUs),
        pairedMedian: median(r.paired),
        pairedP25: quantile(r.paired, 0.25),
        pairedP75: quantile(r.paired, 0.75),
      })
    }
    comm.checkDeviceError()
  }
}
const inprocRows = inprocCases.map((c) => {
  const reps = inprocResults.filter((r) => r.case === c.case && r.variant === c.variant && r.path === c.path)
  const jsUs = median(reps.map((r) => r.jsUsMedian))
  const cUs = median(reps.map((r) => r.cUsMedian))
  return {
    case: c.case,
    variant: c.variant,
    jsPath: c.path,
    cUsPerLaunch: cUs,
    jsUsPerLaunch: jsUs,
    ratio: jsUs / cUs,
    pairedMedian: median(reps.map((r) => r.pairedMedian)),
    pairedMedianRange: [Math.min(...reps.map((r) => r.pairedMedian)), Math.max(...reps.map((r) => r.pairedMedian))],
  }
})

// ---- table ----
const rows = []
const cppOf = (c, v) => results.filter((r) => r.side === 'cpp' && r.case === c && r.variant === v)
for (const c of jsCases) {
  const js = results.filter((r) => r.side === 'js' && r.case === c.case && r.variant === c.variant && r.path === c.path)
  const cpp = cppOf(c.case, c.variant)
  const jsUs = median(js.map((r) => r.hostUsPerLaunchMedian))
  const cppUs = cpp.length ? median(cpp.map((r) => r.hostUsPerLaunchMedian)) : undefined
  rows.push({
    case: c.case,
    variant: c.variant,
    jsPath: c.path,
    cppUsPerLaunch: cppUs,
    jsUsPerLaunch: jsUs,
    ratio: cppUs ? jsUs / cppUs : undefined,
    cppUsPerLaunchReps: cpp.map((r) => r.hostUsPerLaunchMedian),
    jsUsPerLaunchReps: js.map((r) => r.hostUsPerLaunchMedian),
    deviceUsPerKernelCpp: cpp.length ? median(cpp.map((r) => r.deviceUsPerKernel)) : undefined,
    deviceUsPerKernelJs: median(js.map((r) => r.deviceUsPerKernel)),
    steadyCppUsPerLaunch: cpp.length ? median(cpp.map((r) => r.steadyHostUsPerLaunch)) : undefined,
    steadyJsUsPerLaunch: median(js.map((r) => r.steadyHostUsPerLaunch)),
  })
}

const deviceName = d.deviceName(group.device)
const doc = {
  machine: `${hostname()}: ${deviceName}, driver API ${d.driverVersion()}, node ${process.version}`,
  commit: process.env.LLCOMM_COMMIT ?? 'unknown',
  date: new Date().toISOString(),
  command: process.env.LLCOMM_COMMAND ?? process.argv.join(' '),
  method:
    `host µs/launch: median over ${BURSTS} bursts of ${BURST} launches on an idle stream (synchronized before each burst; ` +
    `only the launch calls timed, so the queue never fills: launch cost, not back-pressure); device µs/kernel: events ` +
    `around ${BURST} back-to-back launches (median of 20); steady: ${STEADY} launches without synchronizing (host-bound ` +
    `when it is above device µs/kernel, else converges on it). ${REPS} repetitions, JS and C++ alternating; the figure is ` +
    `the median of the repetitions' medians. oneshot: 2 virtual ranks on device 0, ${COUNT} bf16 per rank.`,
  rows,
  inProcess: inproc
    ? {
        method:
          `C loop in this process (launch_inproc.cpp via koffi) launching the same PreparedLaunch as the JS path; ` +
          `${BURSTS} pairs of ${BURST}-launch bursts a repetition, JS/C order alternating, each burst on an idle ` +
          `stream; ratio = median over repetitions of JS median / median over repetitions of C median; paired = ` +
          `median over repetitions of the median JS/C over a repetition's pairs.`,
        rows: inprocRows,
        raw: inprocResults,
      }
    : undefined,
  raw: results,
}
await comm.close()
if (opts.out) writeFileSync(opts.out, `${JSON.stringify(doc, null, 1)}\n`)

const f = (x, n = 2) => (x === undefined ? '-' : x.toFixed(n))
const table = [
  ['case', 'variant', 'JS path', 'C++ µs', 'JS µs', 'ratio', 'dev µs/kernel', 'steady C++', 'steady JS'],
  ...rows.map((r) => [
    r.case,
    r.variant,
    r.jsPath,
    f(r.cppUsPerLaunch),
    f(r.jsUsPerLaunch),
    f(r.ratio),
    f(r.deviceUsPerKernelCpp ?? r.deviceUsPerKernelJs),
    f(r.steadyCppUsPerLaunch),
    f(r.steadyJsUsPerLaunch),
  ]),
]
const widths = table[0].map((_, i) => Math.max(...table.map((row) => row[i].length)))
console.log(`${doc.machine}  commit ${doc.commit}  ${doc.date}`)
for (const row of table) console.log(row.map((cell, i) => cell.padEnd(widths[i])).join('  '))
if (inproc) {
  const t2 = [
    ['in-process: case', 'variant', 'JS path', 'C µs', 'JS µs', 'ratio', 'paired', 'paired range (reps)'],
    ...inprocRows.map((r) => [
      r.case,
      r.variant,
      r.jsPath,
      f(r.cUsPerLaunch),
      f(r.jsUsPerLaunch),
      f(r.ratio, 3),
      f(r.pairedMedian, 3),
      `${f(r.pairedMedianRange[0], 3)}-${f(r.pairedMedianRange[1], 3)}`,
    ]),
  ]
  const w2 = t2[0].map((_, i) => Math.max(...t2.map((row) => row[i].length)))
  console.log('')
  for (const row of t2) console.log(row.map((cell, i) => cell.padEnd(w2[i])).join('  '))
}
