// The tools at their edges (issue 19 item 8): a bench sweep that cannot fit is refused before anything is
// allocated, and unreadable inputs or unwritable outputs are one line naming the path (no stack).
import assert from 'node:assert/strict'
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { isLlcommError } from 'llcomm/internal'
import { checkSweepFits, cpuSweepBytes } from '../../src/bench/memory-fit.js'
import { runCli } from './cli-helpers.js'

const FIXTURE = fileURLToPath(
  new URL('../../../test/fixtures/traces/torch-llama-decode-h200.trace.json.gz', import.meta.url),
)

function oneLine(stderr: string): string {
  const lines = stderr.trim().split('\n')
  assert.equal(lines.length, 1, `one line expected, got:\n${stderr}`)
  assert.doesNotMatch(lines[0], /\n\s+at /)
  return lines[0]
}

test('checkSweepFits: ranks x largest size x buffers against free memory', () => {
  assert.equal(cpuSweepBytes(2, 1024), 2 * 1024 * 9)
  checkSweepFits('cpu', 2, [8, 1024], 2 * 1024 * 9)
  assert.throws(
    () => checkSweepFits('cpu', 2, [8, 1025], 2 * 1024 * 9),
    (e) => isLlcommError(e, 'OUT_OF_MEMORY'),
  )
  checkSweepFits('cuda', 8, [2 ** 40], 1) // device memory: the device allocator's to refuse
})

test('llcomm bench --sizes 4G on the cpu is refused at once with one line', async () => {
  const started = performance.now()
  const r = await runCli(['bench', '--backend', 'cpu', '--ranks', '2', '--sizes', '4G'], 60_000)
  assert.equal(r.code, 1)
  assert.match(oneLine(r.stderr), /^llcomm: OUT_OF_MEMORY: the sweep does not fit: 2 ranks x 4294967296 bytes/)
  assert.ok(performance.now() - started < 30_000)
})

test('llcomm diagnose on a truncated .json.gz: one line naming the file', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'llcomm-cli-'))
  const truncated = join(dir, 'cut.trace.json.gz')
  writeFileSync(truncated, readFileSync(FIXTURE).subarray(0, 5000))
  const r = await runCli(['diagnose', truncated])
  assert.equal(r.code, 1)
  assert.match(
    oneLine(r.stderr),
    new RegExp(`TRACE_FORMAT: cannot decompress ${truncated.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}`),
  )
})

test('--plot, --json FILE and --html into a missing folder: one line naming the path', async () => {
  const missing = join(mkdtempSync(join(tmpdir(), 'llcomm-cli-')), 'no', 'such', 'folder')
  const small = ['bench', '--backend', 'cpu', '--ranks', '2', '--sizes', '8', '--iters', '5', '--warmup', '1']
  for (const [flag, file] of [
    ['--plot', 'x.svg'],
    ['--json', 'x.json'],
  ] as const) {
    const path = join(missing, file)
    const r = await runCli([...small, '--algorithms', 'oneshot-ll', '--dtype', 'f32', flag, path])
    assert.equal(r.code, 1, r.stderr)
    assert.equal(oneLine(r.stderr), `llcomm: cannot open ${path}: ENOENT (no such file or directory)`)
  }
  const html = join(missing, 'x.html')
  const r = await runCli(['diagnose', FIXTURE, '--html', html])
  assert.equal(r.code, 1, r.stderr)
  assert.equal(oneLine(r.stderr), `llcomm: cannot open ${html}: ENOENT (no such file or directory)`)
})
