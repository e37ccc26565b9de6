import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { analyzeTrace } from '../../src/diagnose/analyze.js'
import { classify } from '../../src/diagnose/classify.js'
import { parseTraceText } from '../../src/diagnose/read-trace.js'
import { diagnoseHtml } from '../../src/diagnose/report-html.js'
import { benchLatencySource, interpolateLogLog, whatIf } from '../../src/diagnose/what-if.js'
import type { BenchFile } from '../../src/model/bench-results.js'
import { type Ev, ownText } from './own-trace.js'

const BIN = fileURLToPath(new URL('../../../bin/llcomm.js', import.meta.url))

const own = ownText
const ar = (bytes: number) => ({ name: 'allreduce', bytes, ranks: 4 })

// Stream 0: compute [0,10], AllReduce [12,14], compute [14,20], AllReduce [25,27]; stream 1: compute [12,13].
const KNOWN: Ev[] = [
  { name: 'gemm', stream: '0', startUs: 0, durUs: 10 },
  { name: 'ar', stream: '0', startUs: 12, durUs: 2, collective: ar(8192) },
  { name: 'mlp', stream: '0', startUs: 14, durUs: 6 },
  { name: 'ar', stream: '0', startUs: 25, durUs: 2, collective: ar(8192) },
  { name: 'side', stream: '1', startUs: 12, durUs: 1 },
]

describe('diagnose on synthetic traces with known answers', () => {
  it('finds busy time, communication share, exposed communication and gaps', () => {
    const a = analyzeTrace(parseTraceText(own(KNOWN)))
    assert.equal(a.totalUs, 27)
    assert.equal(a.busyUs, 20) // [0,10] ∪ [12,20] ∪ [25,27]
    assert.equal(a.commUs, 4)
    assert.equal(a.commShare, 0.2)
    assert.equal(a.exposedCommUs, 3) // [13,14] and [25,27]: [12,13] is overlapped by stream 1
    assert.equal(a.idleUs, 7)
    const s0 = a.streams.find((s) => s.stream === '0')
    assert.ok(s0)
    assert.equal(s0.gaps, 2)
    assert.equal(s0.gapUs, 7)
    assert.equal(s0.gapsBeforeCommUs, 7)
    assert.equal(s0.gapsAfterCommUs, 0)
    assert.equal(s0.maxGapUs, 5)
    assert.deepEqual(a.collectives, [
      { name: 'allreduce', count: 2, bytes: 8192, totalUs: 4, meanUs: 2, cpuOnly: 0, groupSize: 4 },
    ])
  })

  it('classifies after seed 003: compute-bound, communication-bound, gpu-waiting', () => {
    const compute = classify(
      analyzeTrace(
        parseTraceText(
          own([
            { name: 'a', stream: '0', startUs: 0, durUs: 100 },
            { name: 'ar', stream: '0', startUs: 100, durUs: 2, collective: ar(8192) },
            { name: 'b', stream: '0', startUs: 102, durUs: 100 },
          ]),
        ),
      ),
    )
    assert.equal(compute.label, 'compute-bound')
    const small = classify(
      analyzeTrace(
        parseTraceText(
          own([
            { name: 'a', stream: '0', startUs: 0, durUs: 10 },
            { name: 'ar', stream: '0', startUs: 10, durUs: 10, collective: ar(8192) },
          ]),
        ),
      ),
    )
    assert.equal(small.label, 'communication-bound (small messages)')
    assert.equal(small.signals.commShare, 0.5)
    const big = classify(
      analyzeTrace(
        parseTraceText(
          own([
            { name: 'a', stream: '0', startUs: 0, durUs: 10 },
            { name: 'ar', stream: '0', startUs: 10, durUs: 10, collective: ar(64 << 20) },
          ]),
        ),
      ),
    )
    assert.equal(big.label, 'communication-bound (bandwidth)')
    const waiting = classify(
      analyzeTrace(
        parseTraceText(
          own([
            { name: 'a', stream: '0', startUs: 0, durUs: 10 },
            { name: 'ar', stream: '0', startUs: 30, durUs: 1, collective: ar(8192) },
            { name: 'b', stream: '0', startUs: 50, durUs: 10 },
          ]),
        ),
      ),
    )
    assert.equal(waiting.label, 'gpu-waiting (gaps between kernels)')
    assert.ok(Math.abs(waiting.signals.idleShare - 39 / 60) < 1e-12)
  })

  it('ties PyTorch kernels to record_param_comms through correlation, flow events and kernel names', () => {
    const events = [
      // AllReduce of 4096 bf16 elements (8192 B) on a 4-rank group: launch on thread 1 inside the op
      {
        ph: 'X',
        cat: 'cpu_op',
        name: 'record_param_comms',
        pid: 1,
        tid: 1,
        ts: 100,
        dur: 50,
        args: {
          'Collective name': 'allreduce',
          'In msg nelems': 4096,
          'Out msg nelems': 4096,
          dtype: 'BFloat16',
          'Group size': 4,
        },
      },
      {
        ph: 'X',
        cat: 'cuda_runtime',
        name: 'cudaLaunchKernel',
        pid: 1,
        tid: 1,
        ts: 120,
        dur: 5,
        args: { correlation: 7 },
      },
      {
        ph: 'X',
        cat: 'kernel',
        name: 'ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)',
        pid: 0,
        tid: 7,
        ts: 200,
        dur: 10,
        args: { correlation: 7, device: 0, stream: 7 },
      },
      // a second AllReduce (f32, 1024 elements) whose kernel lacks a correlation arg: the ac2g flow supplies it
      {
        ph: 'X',
        cat: 'cpu_op',
        name: 'record_param_comms',
        pid: 1,
        tid: 1,
        ts: 300,
        dur: 50,
        args: { 'Collective name': 'allreduce', 'In msg nelems': 1024, dtype: 'Float', 'Group size': 4 },
      },
      {
        ph: 'X',
        cat: 'cuda_runtime',
        name: 'cudaLaunchKernel',
        pid: 1,
        tid: 1,
        ts: 310,
        dur: 5,
        args: { correlation: 8 },
      },
      { ph: 's', cat: 'ac2g', name: 'ac2g', id: 8, pid: 1, tid: 1, ts: 310 },
      { ph: 'f', cat: 'ac2g', name: 'ac2g', id: 8, pid: 0, tid: 7, ts: 400, bp: 'e' },
      {
        ph: 'X',
        cat: 'kernel',
        name: 'ncclDevKernel_AllReduce_Sum_f32_RING_LL',
        pid: 0,
        tid: 7,
        ts: 400,
        dur: 6,
        args: { device: 0, stream: 7 },
      },
      // a compute kernel launched inside a comms op (a cast) is not communication
      {
        ph: 'X',
        cat: 'cpu_op',
        name: 'record_param_comms',
        pid: 1,
        tid: 1,
        ts: 500,
        dur: 50,
        args: { 'Collective name': 'allgather', 'In msg nelems': 10, dtype: 'Float', 'Group size': 4 },
      },
      {
        ph: 'X',
        cat: 'cuda_runtime',
        name: 'cudaLaunchKernel',
        pid: 1,
        tid: 1,
        ts: 510,
        dur: 5,
        args: { correlation: 9 },
      },
      {
        ph: 'X',
        cat: 'kernel',
        name: 'void at::native::vectorized_elementwise_kernel<4>',
        pid: 0,
        tid: 7,
        ts: 600,
        dur: 4,
        args: { correlation: 9, device: 0, stream: 7 },
      },
      // an NCCL kernel with no CPU op: known by name only, size unknown
      {
        ph: 'X',
        cat: 'kernel',
        name: 'ncclDevKernel_AllGather_RING_LL',
        pid: 0,
        tid: 8,
        ts: 700,
        dur: 3,
        args: { device: 0, stream: 8 },
      },
    ]
    const trace = parseTraceText(JSON.stringify({ traceEvents: events }))
    assert.equal(trace.format, 'pytorch')
    const comm = trace.activities.filter((x) => x.collective)
    assert.deepEqual(
      comm.map((x) => [x.collective?.name, x.collective?.bytes, x.collective?.via]),
      [
        ['allreduce', 8192, 'correlation'],
        ['allreduce', 4096, 'correlation'],
        ['allgather', null, 'kernel-name'],
      ],
    )
    const a = analyzeTrace(trace)
    assert.equal(a.commUs, 19)
    assert.equal(a.busyUs, 23)
    const byKey = Object.fromEntries(a.collectives.map((c) => [`${c.name}/${c.bytes}`, c]))
    assert.equal(byKey['allreduce/8192'].count, 1)
    assert.equal(byKey['allreduce/8192'].groupSize, 4)
    assert.equal(byKey['allgather/40'].cpuOnly, 1) // the allgather op launched only a cast
    assert.equal(a.streams.length, 2)
  })

  it("prices the step with llcomm's measured latencies (log-log interpolation)", () => {
    assert.ok(
      Math.abs(
        interpolateLogLog(
          [
            { bytes: 4096, us: 5 },
            { bytes: 16384, us: 7 },
          ],
          8192,
        ) - Math.sqrt(35),
      ) < 1e-12,
    )
    assert.equal(
      interpolateLogLog(
        [
          { bytes: 4096, us: 5 },
          { bytes: 16384, us: 7 },
        ],
        8,
      ),
      5,
    )
    const bench: BenchFile = {
      path: 'synthetic.json',
      machine: {},
      command: 'llcomm bench',
      rows: [
        { backend: 'cuda', ranks: 4, algorithm: 'oneshot-ll', dtype: 'bf16', bytes: 4096, medianUs: 5, wrong: 0 },
        { backend: 'cuda', ranks: 4, algorithm: 'oneshot-ll', dtype: 'bf16', bytes: 16384, medianUs: 7, wrong: 0 },
        { backend: 'cuda', ranks: 4, algorithm: 'oneshot-sentinel', dtype: 'bf16', bytes: 8192, medianUs: 9, wrong: 0 },
        { backend: 'cuda', ranks: 4, algorithm: 'nccl', dtype: 'bf16', bytes: 8192, medianUs: 1, wrong: 0 },
      ],
    }
    const a = analyzeTrace(
      parseTraceText(
        own([
          { name: 'a', stream: '0', startUs: 0, durUs: 10 },
          { name: 'ar', stream: '0', startUs: 10, durUs: 10, collective: ar(8192) },
        ]),
      ),
    )
    const w = whatIf(a, benchLatencySource([bench]))
    assert.ok(w.available)
    assert.equal(w.ranks, 4)
    assert.equal(w.rows[0].algorithm, 'oneshot-ll@4') // barrier-free only: nccl's row is not llcomm's
    assert.ok(Math.abs(w.savedUs - (10 - Math.sqrt(35))) < 1e-9)
    assert.ok(Math.abs(w.predictedStepUs - (20 - 10 + Math.sqrt(35))) < 1e-9)
    const none = whatIf(a, undefined)
    assert.equal(none.available, false)
  })

  it('handles a long trace: 200 000 activities, exact shares, a small page', () => {
    const events: Ev[] = []
    for (let i = 0; i < 200_000; i++) {
      events.push({
        name: i % 10 ? 'k' : 'ar',
        stream: String(i % 2),
        startUs: i * 3,
        durUs: 2,
        ...(i % 10 ? {} : { collective: ar(8192) }),
      })
    }
    const trace = parseTraceText(own(events))
    const a = analyzeTrace(trace)
    assert.equal(a.busyUs, 400_000)
    assert.equal(a.commUs, 40_000)
    assert.equal(a.commShare, 0.1)
    assert.equal(a.collectives[0].count, 20_000)
    const html = diagnoseHtml('long', trace, a, classify(a), whatIf(a, undefined), '')
    assert.ok(html.length < 200_000, String(html.length))
  })

  it('prints the --json shape and writes a self-contained --html page', () => {
    const dir = mkdtempSync(join(tmpdir(), 'llcomm-diag-'))
    const path = join(dir, 'known.json')
    writeFileSync(path, own(KNOWN))
    const html = join(dir, 'out.html')
    const r = spawnSync(
      process.execPath,
      [BIN, 'diagnose', path, '--json', '--html', html, '--bench', join(dir, 'none.json'), '--platform', 'gb200'],
      { encoding: 'utf8' },
    )
    // a missing --bench file is an error, typed
    assert.notEqual(r.status, 0)
    assert.match(r.stderr, /INVALID_ARGUMENT/)
    const ok = spawnSync(process.execPath, [BIN, 'diagnose', path, '--json', '--html', html, '--platform', 'gb200'], {
      encoding: 'utf8',
      cwd: dir,
    })
    assert.equal(ok.status, 0, ok.stderr)
    const out = JSON.parse(ok.stdout)
    for (const k of ['totalUs', 'busyUs', 'commUs', 'commShare', 'collectives', 'classification', 'whatIf'])
      assert.ok(k in out, k)
    assert.equal(out.commShare, 0.2)
    assert.deepEqual(Object.keys(out.collectives[0]).slice(0, 5), ['name', 'count', 'bytes', 'totalUs', 'meanUs'])
    assert.equal(out.whatIf.available, true)
    assert.match(out.whatIf.source, /^model:gb200/)
    const page = readFileSync(html, 'utf8')
    assert.match(page, /<svg/)
    assert.doesNotMatch(page, /\s(src|href)=/)
    assert.match(page, /#e15759/) // the collectives' colour in the timeline
  })
})
