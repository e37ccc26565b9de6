// `llcomm launch` (src/cli/commands/launch.ts): the rendezvous variables, rank-prefixed output, the first non-zero
// exit code, the others ended when one fails, a killed rank, signals forwarded, no rank outliving the launcher,
// and a real per-rank communicator started through it.
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { PassThrough } from 'node:stream'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { isLlcommError, processAlive } from 'llcomm/internal'
import { launch } from '../../src/cli/commands/launch.js'
import { repoPath } from '../support/paths.js'

const BIN = fileURLToPath(new URL('../../../bin/llcomm.js', import.meta.url))
// A rank program of the library's per-process tests (packages/llcomm/test/process/rank-main.ts), run under the launcher.
const RANK_MAIN = repoPath('packages/llcomm/dist/test/process/rank-main.js')

function capture(): { stream: PassThrough; text: () => string } {
  const stream = new PassThrough()
  let text = ''
  stream.setEncoding('utf8').on('data', (d: string) => {
    text += d
  })
  return { stream, text: () => text }
}

const node = (script: string): string[] => [process.execPath, '-e', script]

test('every rank gets LLCOMM_RANK / LLCOMM_WORLD_SIZE / LLCOMM_RENDEZVOUS, output prefixed by rank, exit 0', async () => {
  const out = capture()
  const r = await launch({
    ranks: 3,
    command: node(
      'console.log([process.env.LLCOMM_RANK, process.env.LLCOMM_WORLD_SIZE, process.env.LLCOMM_RENDEZVOUS].join(" "))',
    ),
    stdout: out.stream,
    stderr: out.stream,
    forwardSignals: false,
  })
  assert.equal(r.exitCode, 0)
  const lines = out.text().trim().split('\n').sort()
  assert.equal(lines.length, 3)
  for (let rank = 0; rank < 3; rank++)
    assert.match(lines[rank], new RegExp(`^\\[rank ${rank}\\] ${rank} 3 tcp://127\\.0\\.0\\.1:\\d+$`))
  const addresses = new Set(lines.map((l) => l.split(' ').pop()))
  assert.equal(addresses.size, 1, 'one rendezvous address for all')
})

test('one rank fails: the first non-zero code, the others ended (SIGTERM) at once, none left running', async () => {
  const out = capture()
  const started = performance.now()
  const r = await launch({
    ranks: 4,
    command: node(
      'if (process.env.LLCOMM_RANK === "2") { console.error("bad"); process.exit(7) } setTimeout(() => {}, 60000)',
    ),
    stdout: out.stream,
    stderr: out.stream,
    forwardSignals: false,
  })
  assert.equal(r.exitCode, 7)
  assert.ok(performance.now() - started < 20_000, 'the sleeping ranks did not run out their 60 s')
  assert.match(out.text(), /\[rank 2\] bad/)
  for (const x of r.ranks) {
    if (x.rank === 2) assert.equal(x.code, 7)
    else assert.equal(x.signal, 'SIGTERM')
    assert.equal(processAlive(x.pid), false)
  }
})

test('a rank killed by a signal: exit 128 + signal; a rank that ignores SIGTERM is SIGKILLed after the grace', async () => {
  const r = await launch({
    ranks: 3,
    command: node(
      'process.on("SIGTERM", () => {}); if (process.env.LLCOMM_RANK === "0") setTimeout(() => process.kill(process.pid, "SIGKILL"), 1500); setInterval(() => {}, 1000)',
    ),
    graceMs: 300,
    stdout: new PassThrough().resume(),
    stderr: new PassThrough().resume(),
    forwardSignals: false,
  })
  assert.equal(r.exitCode, 137)
  // Rank 0 waits 1.5 s first, so that the others have installed their SIGTERM handler.
  for (const x of r.ranks) assert.equal(x.signal, 'SIGKILL')
})

test('bad arguments: -n 0, no command', async () => {
  await assert.rejects(launch({ ranks: 0, command: ['true'] }), (e) => isLlcommError(e, 'INVALID_ARGUMENT'))
  await assert.rejects(launch({ ranks: 2, command: [] }), (e) => isLlcommError(e, 'INVALID_ARGUMENT'))
})

function runCli(
  args: string[],
  env: Record<string, string> = {},
  onStdout?: (text: string, child: ReturnType<typeof spawn>) => void,
) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    const child = spawn(process.execPath, [BIN, ...args], { env: { ...process.env, ...env } })
    let stdout = ''
    let stderr = ''
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      stdout += d
      onStdout?.(stdout, child)
    })
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      stderr += d
    })
    child.on('close', (code) => resolve({ code, stdout, stderr }))
  })
}

test('npx llcomm launch: SIGTERM to the launcher is forwarded, exit 143, no rank left', async () => {
  let sent = false
  const r = await runCli(
    ['launch', '-n', '2', '--', process.execPath, '-e', 'console.log("pid", process.pid); setTimeout(() => {}, 60000)'],
    {},
    (text, child) => {
      if (!sent && (text.match(/pid \d+/g) ?? []).length === 2) {
        sent = true
        child.kill('SIGTERM')
      }
    },
  )
  assert.equal(r.code, 143, r.stderr)
  const pids = [...r.stdout.matchAll(/pid (\d+)/g)].map((m) => Number(m[1]))
  assert.equal(pids.length, 2)
  for (const pid of pids) assert.equal(processAlive(pid), false)
})

test('npx llcomm launch with per-rank communicators: the exit code of the rank that fails after its calls', async () => {
  // The victim exits only after the others reported (rank-main.ts, LLCOMM_TEST_DONE_DIR): the launcher ends the
  // others when it exits, and a report cut short is what this test once saw.
  const doneDir = mkdtempSync(join(tmpdir(), 'llcomm-launch-exit-'))
  const r = await runCli(['launch', '-n', '3', '--', process.execPath, RANK_MAIN], {
    LLCOMM_TEST_SCENARIO: 'exit-code',
    LLCOMM_TEST_VICTIM: '1',
    LLCOMM_TEST_DONE_DIR: doneDir,
  }).finally(() => rmSync(doneDir, { recursive: true, force: true }))
  assert.equal(r.code, 7, r.stderr)
  for (let rank = 0; rank < 3; rank++)
    assert.match(r.stdout, new RegExp(`\\[rank ${rank}\\] RESULT \\{"rank":${rank}\\}`))
})
