import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { analyzeTrace } from '../../src/diagnose/analyze.js'
import { classify } from '../../src/diagnose/classify.js'
import { analyzeAcrossRanks } from '../../src/diagnose/cross-rank.js'
import { parseTraceText, readTraceFile } from '../../src/diagnose/read-trace.js'
import { benchLatencySource, whatIf } from '../../src/diagnose/what-if.js'
import type { BenchFile } from '../../src/model/bench-results.js'
import { repoPath } from '../support/paths.js'
import { type Ev, ownTrace } from './own-trace.js'

const repo = (path: string) => fileURLToPath(new URL(`../../../${path}`, import.meta.url))
const BIN = repo('bin/llcomm.js')
// the two-H200 sweep the README's table comes from (commit 1bac1a6): diagnose reads no bench file unless named
const BENCH_2GPU = ['--bench', repoPath('bench/results/cuda-h200x2-bench-2gpu-2026-11-29c.json')]

const own = ownTrace

/**
 * Rank r of `ranks`: per call k, compute until its arrival base_k + lateUs(r, k), then an AllReduce that ends for
 * every rank at base_k + max over ranks of lateUs + postUs. A clock offset shifts every event of the rank.
 */
function rankTrace(
  r: number,
  ranks: number,
  calls: number,
  lateUs: (r: number, k: number) => number,
  postUs: number,
  clockUs = 0,
) {
  const events: Ev[] = []
  for (let k = 0; k < calls; k++) {
    const base = 1000 * k
    const arrive = base + lateUs(r, k)
    let last = 0
    for (let q = 0; q < ranks; q++) last = Math.max(last, base + lateUs(q, k))
    events.push({ name: 'gemm', stream: '0', startUs: clockUs + base, durUs: lateUs(r, k) })
    events.push({
      name: 'ar',
      stream: '0',
      startUs: clockUs + arrive,
      durUs: last + postUs - arrive,
      collective: { name: 'allreduce', bytes: 8192, ranks },
    })
  }
  return own(events)
}

describe('diagnose across ranks: one trace per rank of the same run', () => {
  // rank 2 arrives 100 µs after rank 0, rank 1 40 µs after rank 0; every 4th call rank 1 is the last (150 µs)
  const late = (r: number, k: number) => (k % 4 === 3 ? [0, 150, 100][r] : [0, 40, 100][r])

  it('splits each call into arrival skew, post-arrival time and each rank’s wait (known answers)', () => {
    const x = analyzeAcrossRanks([0, 1, 2].map((r) => rankTrace(r, 3, 8, late, 7)))
    assert.equal(x.ranks, 3)
    assert.ok(x.clocksAgree)
    assert.equal(x.endSpreadMedianUs, 0)
    assert.equal(x.collectives.length, 1)
    const c = x.collectives[0]
    assert.equal(c.calls, 8)
    assert.deepEqual(c.callsPerRank, [8, 8, 8])
    assert.equal(c.skewUs.medianUs, 100)
    assert.equal(c.skewUs.maxUs, 150)
    assert.equal(c.postArrivalUs.medianUs, 7)
    assert.equal(c.postArrivalUs.meanUs, 7)
    assert.deepEqual(c.lastToArrive, [0, 2, 6])
    // calls 0,1,2,4,5,6: waits 100 / 60 / 0; calls 3,7: 150 / 0 / 50
    assert.deepEqual(c.waitUsPerRank, [6 * 100 + 2 * 150, 6 * 60, 2 * 50])
  })

  it('says when the clocks do not agree, and lines up only the calls every rank has', () => {
    const shifted = analyzeAcrossRanks([rankTrace(0, 2, 6, late, 7), rankTrace(1, 2, 5, late, 7, 5000)])
    assert.equal(shifted.clocksAgree, false)
    assert.equal(shifted.collectives[0].calls, 5)
    assert.ok(shifted.notes.some((n) => /calls per rank differ \(6, 5\)/.test(n)))
    assert.ok(shifted.notes.some((n) => /clocks do not seem to agree/.test(n)))
    assert.throws(() => analyzeAcrossRanks([rankTrace(0, 2, 1, late, 7)]), /needs a trace per rank/)
  })

  it("what-if with every rank's trace replaces only the post-arrival time", () => {
    const traces = [0, 1, 2].map((r) => rankTrace(r, 3, 8, late, 7))
    const a = analyzeTrace(traces[0]) // rank 0 arrives first: its kernels are mostly waiting
    const bench: BenchFile = {
      path: 'synthetic.json',
      machine: { gpu: '3x NVIDIA H200' },
      date: '2026-11-29T00:00:00Z',
      command: 'llcomm bench --devices 0,1,2',
      rows: [{ backend: 'cuda', ranks: 3, algorithm: 'oneshot-ll', dtype: 'bf16', bytes: 8192, medianUs: 3, wrong: 0 }],
    }
    const naive = whatIf(a, benchLatencySource([bench]))
    const lined = whatIf(a, benchLatencySource([bench]), undefined, analyzeAcrossRanks(traces))
    assert.equal(naive.rows[0].replaces, 'kernel time')
    assert.equal(lined.rows[0].replaces, 'post-arrival time')
    assert.equal(lined.rows[0].replacedMeanUs, 7)
    // no compute overlaps the AllReduces here: every µs of them is exposed
    assert.ok(Math.abs(lined.savedUs - 8 * (7 - 3)) < 1e-9, String(lined.savedUs))
    assert.ok(naive.savedUs > 10 * lined.savedUs) // the naive what-if would credit the waiting to the collective
    // waiting (100 + 60 µs a call, mostly) outweighs the 7 µs of post-arrival work on each of the 3 ranks
    assert.equal(classify(a, analyzeAcrossRanks(traces)).label, 'arrival skew (ranks reach collectives apart)')
    assert.notEqual(classify(a).label, 'arrival skew (ranks reach collectives apart)')
  })

  it('prices at the nearest rank count with distinct GPUs, the trace dtype and the newest file preferred', () => {
    const row = (algorithm: string, dtype: string, bytes: number, medianUs: number) => ({
      backend: 'cuda',
      ranks: 2,
      algorithm,
      dtype,
      bytes,
      medianUs,
      wrong: 0,
    })
    const files: BenchFile[] = [
      {
        path: 'virtual.json',
        machine: { gpu: 'NVIDIA H200' },
        date: '2026-11-29T12:00:00Z',
        command: 'llcomm bench --devices 0,0',
        rows: [row('oneshot-ll', 'bf16', 4096, 1)],
      },
      {
        path: 'old.json',
        machine: { gpu: '2x NVIDIA H200' },
        date: '2026-11-28T00:00:00Z',
        command: 'llcomm bench --devices 0,1',
        rows: [row('oneshot-ll', 'bf16', 4096, 4), row('oneshot-ll', 'f32', 4096, 2)],
      },
      {
        path: 'new.json',
        machine: { gpu: '2x NVIDIA H200' },
        date: '2026-11-29T00:00:00Z',
        command: 'llcomm bench --devices 0,1',
        rows: [row('oneshot-ll', 'bf16', 4096, 3), row('oneshot-ll', 'f32', 4096, 2.5)],
      },
    ]
    const src = benchLatencySource(files)
    const bf16 = src.latency(2, 4096, 'bf16')
    assert.deepEqual([bf16?.latencyUs, bf16?.from, bf16?.setup], [3, ['new.json'], 'distinct GPUs'])
    assert.equal(src.latency(2, 4096, 'f32')?.latencyUs, 2.5)
    assert.equal(src.latency(2, 4096)?.latencyUs, 2.5) // no dtype given: the fastest of the newest rows
  })
})

describe('diagnose across ranks on a real two-GPU PyTorch trace', () => {
  // scripts/record-torch-trace.py --tp 2 on two H200s (test/fixtures/traces/torch-llama-decode-h200x2-tp2.meta.json):
  // 8 layers × 3 decode steps, 2 AllReduces of 2048 bf16 elements per layer, NCCL over NVLink
  const FIX = ['rank0', 'rank1'].map((r) =>
    repo(`test/fixtures/traces/torch-llama-decode-h200x2-tp2.${r}.trace.json.gz`),
  )

  it('lines up the 48 AllReduces of both ranks on one clock and finds who waited', () => {
    const traces = FIX.map(readTraceFile)
    for (const t of traces) {
      const ars = analyzeTrace(t).collectives.filter((c) => c.name === 'allreduce')
      assert.deepEqual(
        ars.map((c) => [c.count, c.bytes, c.groupSize, c.dtype]),
        [[48, 4096, 2, 'BFloat16']],
      )
    }
    const x = analyzeAcrossRanks(traces)
    assert.ok(x.clocksAgree && x.endSpreadMedianUs < 1, String(x.endSpreadMedianUs))
    const c = x.collectives[0]
    assert.equal(c.calls, 48)
    // NCCL's own time once both ranks are in: near its bench figure for 4 KB on these GPUs (5.8 µs in a graph)
    assert.ok(c.postArrivalUs.medianUs > 2 && c.postArrivalUs.medianUs < 12, String(c.postArrivalUs.medianUs))
    // in this run rank 0 arrived last nearly every time, by about a millisecond (eager PyTorch, host-bound: the GPU
    // is idle over 99% of the span): the waiting is rank 1's, and it dwarfs the collective
    assert.ok(c.lastToArrive[0] >= 40, String(c.lastToArrive))
    assert.ok(c.skewUs.medianUs > 200, String(c.skewUs.medianUs))
    assert.ok(c.waitUsPerRank[1] > 100 * c.postArrivalUs.meanUs * c.calls)
  })

  it('prices the what-if on the two-GPU bench file, bf16, and reports the across-ranks section', () => {
    const r = spawnSync(process.execPath, [BIN, 'diagnose', ...FIX, ...BENCH_2GPU, '--json'], {
      encoding: 'utf8',
      cwd: repo('.'),
    })
    assert.equal(r.status, 0, r.stderr)
    const out = JSON.parse(r.stdout)
    assert.equal(out.acrossRanks.ranks, 2)
    const row = out.whatIf.rows[0]
    assert.equal(row.replaces, 'post-arrival time')
    assert.match(row.setup, /^distinct GPUs, bf16$/)
    assert.ok(
      row.from.every((f: string) => /cuda-h200x2-bench-2gpu/.test(f)),
      row.from.join(),
    )
    const text = spawnSync(process.execPath, [BIN, 'diagnose', ...FIX, ...BENCH_2GPU], {
      encoding: 'utf8',
      cwd: repo('.'),
    }).stdout
    assert.match(text, /## across ranks \(2 traces/)
    assert.match(text, /the stall is arrival skew/)
    assert.equal(out.classification.label, 'arrival skew (ranks reach collectives apart)')
    const html = join(mkdtempSync(join(tmpdir(), 'llcomm-diag-')), 'page.html')
    const h = spawnSync(process.execPath, [BIN, 'diagnose', ...FIX, ...BENCH_2GPU, '--html', html], {
      encoding: 'utf8',
      cwd: repo('.'),
    })
    assert.equal(h.status, 0, h.stderr)
    const page = readFileSync(html, 'utf8')
    assert.ok(page.includes('rank 0 ') && page.includes('rank 1 '), 'both ranks in the timeline')
  })
})

describe('diagnose across ranks on a CUDA-graph TP=2 decode step (NCCL kernels found by name)', () => {
  // scripts/measure-decode.py --tp-real 2 --trace-dir: 3 graph replays of Llama-3.1-8B TP=2, batch 1, 64 AllReduces
  // of 8 KB per step (test/fixtures/traces/torch-llama8b-tp2-graph-h200x2.meta.json)
  const FIX = ['rank0', 'rank1'].map((r) =>
    repo(`test/fixtures/traces/torch-llama8b-tp2-graph-h200x2.${r}.trace.json.gz`),
  )

  it('splits the in-step AllReduce: little skew, NCCL near its bench time, a launch gap before each call', () => {
    const traces = FIX.map(readTraceFile)
    const a = analyzeTrace(traces[0])
    const ars = a.collectives.filter((c) => c.name === 'allreduce')
    // graph replays carry no record_param_comms: the kernels are found by name, their size unknown, dtype from it
    assert.deepEqual(
      ars.map((c) => [c.count, c.bytes, c.dtype]),
      [[3 * 64, null, 'BFloat16']],
    )
    const x = analyzeAcrossRanks(traces)
    assert.ok(x.clocksAgree)
    const c = x.collectives[0]
    assert.equal(c.calls, 192)
    assert.ok(c.skewUs.medianUs < 3, String(c.skewUs.medianUs))
    assert.ok(c.postArrivalUs.medianUs > 3 && c.postArrivalUs.medianUs < 9, String(c.postArrivalUs.medianUs))
    // the stream idles before each NCCL kernel: the part of the in-step cost that is neither skew nor the kernel
    const gapBefore = a.streams[0].gapsBeforeCommUs / c.calls
    assert.ok(gapBefore > 1 && gapBefore < 5, String(gapBefore))
  })

  it('prices the unsized collectives with --collective-bytes, and refuses a bad size', () => {
    const r = spawnSync(
      process.execPath,
      [BIN, 'diagnose', ...FIX, ...BENCH_2GPU, '--collective-bytes', '8192', '--json'],
      {
        encoding: 'utf8',
        cwd: repo('.'),
      },
    )
    assert.equal(r.status, 0, r.stderr)
    const row = JSON.parse(r.stdout).whatIf.rows[0]
    assert.equal(row.bytes, 8192)
    assert.match(row.setup, /^distinct GPUs, bf16$/)
    const bad = spawnSync(process.execPath, [BIN, 'diagnose', FIX[0], '--collective-bytes', '0'], { encoding: 'utf8' })
    assert.notEqual(bad.status, 0)
    assert.match(bad.stderr, /--collective-bytes needs an integer ≥ 1/)
  })
})
