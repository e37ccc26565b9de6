import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { repoPath } from '../support/paths.js'

const BIN = fileURLToPath(new URL('../../../bin/llcomm.js', import.meta.url))
const run = (args: string[]) => spawnSync(process.execPath, [BIN, 'model', ...args], { encoding: 'utf8' })

describe('llcomm model (CLI)', () => {
  it('prints the scale simulation as JSON', () => {
    const r = run([
      '--platform',
      'h200',
      '--gpus',
      '2,4,8,16',
      '--sizes',
      '8K',
      '--algorithms',
      'oneshot-ll,oneshot-barrier',
      '--json',
    ])
    assert.equal(r.status, 0, r.stderr)
    const out = JSON.parse(r.stdout)
    assert.equal(out.scale.length, 8)
    assert.ok(out.scale.find((x: { gpus: number; beyondDomain: boolean }) => x.gpus === 16).beyondDomain)
  })

  it('prices a decode step with a user-supplied $/GPU-hour', () => {
    const r = run([
      '--decode',
      '--model',
      'llama-3.1-70b',
      '--tp',
      '4',
      '--gpu',
      'gb200',
      '--usd-per-gpu-hour',
      '3',
      '--json',
    ])
    assert.equal(r.status, 0, r.stderr)
    const d = JSON.parse(r.stdout).decode
    assert.equal(d.allReducesPerToken, 160)
    assert.ok(d.perAlgorithm.every((a: { usdPerMillionTokens: number }) => a.usdPerMillionTokens > 0))
  })

  it('calibrates from a bench file and reports residuals', () => {
    const dir = mkdtempSync(join(tmpdir(), 'llcomm-model-'))
    const rows = []
    for (const ranks of [2, 4, 8])
      for (const bytes of [1024, 65536, 1048576]) {
        // oneshot-sentinel on 'cpu': 10 µs floor + 5 µs hop + (N−1)·M bytes at 2 GB/s
        rows.push({
          backend: 'cpu',
          ranks,
          algorithm: 'oneshot-sentinel',
          dtype: 'f32',
          bytes,
          medianUs: 15 + ((ranks - 1) * bytes) / 2e3,
          p99Us: 0,
          algbwGBs: 0,
          busbwGBs: 0,
          wrong: 0,
        })
        rows.push({
          backend: 'cpu',
          ranks,
          algorithm: 'ring',
          dtype: 'f32',
          bytes,
          medianUs: 10 + 5 * 2 * (ranks - 1) + (2 * (ranks - 1) * bytes) / ranks / 2e3,
          p99Us: 0,
          algbwGBs: 0,
          busbwGBs: 0,
          wrong: 0,
        })
      }
    const path = join(dir, 'cpu.json')
    writeFileSync(
      path,
      JSON.stringify({
        machine: { hostname: 'h', cpuModel: 'c', cores: 2 },
        commit: 'x',
        date: 'd',
        command: 'llcomm bench --backend cpu',
        rows,
      }),
    )
    const r = run(['--calibrate', path, '--json'])
    assert.equal(r.status, 0, r.stderr)
    const cal = JSON.parse(r.stdout).calibrations[0]
    assert.equal(cal.platform, 'cpu')
    assert.ok(
      Math.abs(cal.params.kernelFloorUs - 10) < 1e-6 && Math.abs(cal.params.hopUs - 5) < 1e-6,
      JSON.stringify(cal.params),
    )
    assert.equal(cal.inSample.within15, 18)
    // held out by rank count and by size class (1–16 KB, 16–256 KB, ≥ 256 KB): exact rows predict exactly
    assert.equal(cal.leaveOneRankCountOut.all.within15, 18)
    assert.deepEqual(
      cal.leaveOneSizeDecadeOut.byDecade.map((d: { decade: string }) => d.decade),
      ['1–16 KB', '16–256 KB', '≥256 KB'],
    )
    assert.equal(cal.leaveOneSizeDecadeOut.all.within15, 18)
    const text = run(['--calibrate', path])
    assert.match(text.stdout, /residuals leave-one-size-decade-out: 18\/18 within ±15%/)
    // --fit: only the named parameters move; 'none' predicts with the table; --algorithms picks the rows
    const floorOnly = JSON.parse(run(['--calibrate', path, '--fit', 'kernelFloorUs', '--json']).stdout).calibrations[0]
    assert.deepEqual(floorOnly.fitted, ['kernelFloorUs'])
    assert.ok(floorOnly.held.includes('hopUs'))
    const none = run(['--calibrate', path, '--fit', 'none', '--algorithms', 'ring'])
    assert.match(none.stdout, /: 9 rows\n/)
    assert.match(none.stdout, /fitted: none/)
    assert.match(none.stdout, /residuals with the table's constants \(nothing fitted\)/)
    assert.doesNotMatch(none.stdout, /leave-one-out/)
    const bad = run(['--calibrate', path, '--fit', 'hopUs,nonsense'])
    assert.notEqual(bad.status, 0)
    assert.match(bad.stderr, /--fit: unknown parameter "nonsense"/)
  })

  it("counts a file's launches as it ran with --block-targets, --twoshot-allgather, --accumulation, --twoshot-broadcast and --twoshot-atomic-allgather (the 12-02b files)", () => {
    const files = [2, 8, 16, 32, 64].map((n) => repoPath(`bench/results/cuda-h200-bench-scale-v${n}-2026-12-02b.json`))
    const asRan = run([
      '--calibrate',
      ...files,
      '--fit',
      'none',
      '--block-targets',
      'library',
      '--twoshot-allgather',
      'auto',
      '--accumulation',
      'f32',
      '--twoshot-broadcast',
      'words',
      '--twoshot-atomic-allgather',
      'serial',
    ])
    assert.equal(asRan.status, 0, asRan.stderr)
    assert.match(
      asRan.stdout,
      /counted with: block targets library, twoshot-sentinel all-gather auto, accumulation f32, twoshot-sentinel broadcast words, twoshot-atomic all-gather serial/,
    )
    // with the 12-03b fit's constants (615ecff's kernels): 68 (75 with the 12-03 fit's)
    assert.match(asRan.stdout, /nothing fitted\): 68\/85 within ±15%/)
    // without the flags, with the model's own (MODEL_BLOCK_TARGETS, MODEL_TWOSHOT_ALLGATHER, MODEL_ACCUMULATION: the
    // same build; MODEL_TWOSHOT_BROADCAST 'slots' and MODEL_TWOSHOT_ATOMIC_ALLGATHER 'batched', which these files did
    // not run), 66; counted as the 11-29 files ran, 59
    const asModel = run(['--calibrate', ...files, '--fit', 'none'])
    assert.doesNotMatch(asModel.stdout, /counted with/)
    assert.match(asModel.stdout, /nothing fitted\): 66\/85 within ±15%/)
    const as1129 = run([
      '--calibrate',
      ...files,
      '--fit',
      'none',
      '--block-targets',
      'before-sweep',
      '--twoshot-allgather',
      'push',
      '--accumulation',
      'dtype',
      '--twoshot-broadcast',
      'words',
      '--twoshot-atomic-allgather',
      'serial',
    ])
    assert.match(as1129.stdout, /nothing fitted\): 59\/85 within ±15%/)
    const bad = run(['--calibrate', files[0], '--block-targets', 'new'])
    assert.notEqual(bad.status, 0)
    assert.match(bad.stderr, /--block-targets new: model, library, before-sweep/)
    const badAccumulation = run(['--calibrate', files[0], '--accumulation', 'f16'])
    assert.notEqual(badAccumulation.status, 0)
    assert.match(badAccumulation.stderr, /--accumulation f16: f32 or dtype/)
    const badMode = run(['--calibrate', files[0], '--twoshot-allgather', 'both'])
    assert.notEqual(badMode.status, 0)
    assert.match(badMode.stderr, /--twoshot-allgather both: push, pull or auto/)
    // the 'slots' broadcast (the kernel since 4e5f9c1), which these files did not run: only twoshot-sentinel's spread
    // rows move (16-64 ranks; the option alone, the rest the model's own)
    const asSlots = run(['--calibrate', ...files, '--fit', 'none', '--twoshot-broadcast', 'slots'])
    assert.equal(asSlots.status, 0, asSlots.stderr)
    assert.match(
      asSlots.stdout,
      /counted with: block targets model, twoshot-sentinel all-gather auto, accumulation f32, twoshot-sentinel broadcast slots, twoshot-atomic all-gather batched/,
    )
    const badBroadcast = run(['--calibrate', files[0], '--twoshot-broadcast', 'word'])
    assert.notEqual(badBroadcast.status, 0)
    assert.match(badBroadcast.stderr, /--twoshot-broadcast word: words or slots/)
    const badAtomic = run(['--calibrate', files[0], '--twoshot-atomic-allgather', 'batch'])
    assert.notEqual(badAtomic.status, 0)
    assert.match(badAtomic.stderr, /--twoshot-atomic-allgather batch: serial or batched/)
  })
})
