/**
 * `llcomm launch -n N [--] command…`: one process per rank, torchrun's habit. Starts N copies of the command with
 * LLCOMM_RANK, LLCOMM_WORLD_SIZE and LLCOMM_RENDEZVOUS set (a free loopback port unless --rendezvous names an
 * address), prefixes every output line with its rank, forwards SIGINT / SIGTERM / SIGHUP to every rank, and when
 * one rank fails (a non-zero exit or a signal) ends the others (SIGTERM, then SIGKILL after --grace-ms). Exits
 * with the first non-zero code (128 + the signal number for a rank killed by a signal), else 0. Never leaves a
 * rank running: every child is waited for before the launcher exits.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { constants } from 'node:os'
import type { Readable, Writable } from 'node:stream'
import type { Command } from 'commander'
import {
  findFreePort,
  formatRendezvousAddress,
  LlcommError,
  parseIntegerSetting,
  parseRendezvousAddress,
  RENDEZVOUS_ENV,
} from 'llcomm/internal'

export interface LaunchOptions {
  ranks: number
  command: string[]
  /** 'tcp://HOST:PORT'; default a free port on 127.0.0.1. */
  rendezvous?: string
  /** Between SIGTERM and SIGKILL when the others are ended after a failure. Default 5000. */
  graceMs?: number
  /** Where prefixed output goes (tests capture it). Default process.stdout / process.stderr. */
  stdout?: Writable
  stderr?: Writable
  /** Forward these signals from the launcher to every rank. Default true. */
  forwardSignals?: boolean
  env?: NodeJS.ProcessEnv
}

export interface LaunchResult {
  exitCode: number
  /** Per rank: its exit code, or the signal that ended it. */
  ranks: { rank: number; pid: number; code: number | null; signal: NodeJS.Signals | null }[]
}

const FORWARDED_SIGNALS: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP']

function exitCodeOf(code: number | null, signal: NodeJS.Signals | null): number {
  if (signal) return 128 + (constants.signals[signal] ?? 1)
  return code ?? 1
}

/** Copies `from` to `to` line by line, each line prefixed (a partial last line is flushed at the end). */
function prefixLines(from: Readable, to: Writable, prefix: string): Promise<void> {
  return new Promise((resolve) => {
    let pending = ''
    from.setEncoding('utf8')
    from.on('data', (chunk: string) => {
      pending += chunk
      const lines = pending.split('\n')
      pending = lines.pop() ?? ''
      if (lines.length > 0) to.write(lines.map((l) => `${prefix}${l}\n`).join(''))
    })
    from.on('end', () => {
      if (pending !== '') to.write(`${prefix}${pending}\n`)
      resolve()
    })
    from.on('error', () => resolve())
  })
}

export async function launch(options: LaunchOptions): Promise<LaunchResult> {
  const ranks = parseIntegerSetting(options.ranks, '-n', 1, 1024)
  if (options.command.length === 0) throw new LlcommError('INVALID_ARGUMENT', 'launch needs a command to run')
  const address = options.rendezvous
    ? parseRendezvousAddress(options.rendezvous)
    : { host: '127.0.0.1', port: await findFreePort('127.0.0.1') }
  const rendezvous = formatRendezvousAddress(address)
  const graceMs = options.graceMs ?? 5000
  const stdout = options.stdout ?? process.stdout
  const stderr = options.stderr ?? process.stderr
  const width = String(ranks - 1).length
  const children: ChildProcess[] = []
  const result: LaunchResult = { exitCode: 0, ranks: [] }
  let ending = false
  let killTimer: NodeJS.Timeout | undefined

  const endOthers = (signal: NodeJS.Signals): void => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill(signal)
    if (!killTimer) {
      killTimer = setTimeout(() => {
        for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL')
      }, graceMs)
    }
  }
  const onSignal = (signal: NodeJS.Signals): void => {
    ending = true
    if (result.exitCode === 0) result.exitCode = 128 + (constants.signals[signal] ?? 1)
    endOthers(signal)
  }
  const forward = options.forwardSignals ?? true
  if (forward) for (const s of FORWARDED_SIGNALS) process.on(s, onSignal)

  const exits: Promise<void>[] = []
  for (let rank = 0; rank < ranks; rank++) {
    const [file, ...args] = options.command
    const child = spawn(file, args, {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        ...(options.env ?? process.env),
        [RENDEZVOUS_ENV.rank]: String(rank),
        [RENDEZVOUS_ENV.worldSize]: String(ranks),
        [RENDEZVOUS_ENV.address]: rendezvous,
      },
    })
    children.push(child)
    const prefix = `[rank ${String(rank).padStart(width)}] `
    const copied = Promise.all([
      child.stdout ? prefixLines(child.stdout, stdout, prefix) : Promise.resolve(),
      child.stderr ? prefixLines(child.stderr, stderr, prefix) : Promise.resolve(),
    ])
    exits.push(
      new Promise<void>((resolve) => {
        let spawnError: Error | undefined
        child.once('error', (e) => {
          spawnError = e
        })
        child.once('close', (code, signal) => {
          void copied.then(() => {
            if (spawnError) stderr.write(`${prefix}llcomm launch: ${spawnError.message}\n`)
            const failed = spawnError !== undefined || code !== 0 || signal !== null
            result.ranks.push({ rank, pid: child.pid ?? -1, code: spawnError ? 127 : code, signal })
            if (failed && result.exitCode === 0) result.exitCode = spawnError ? 127 : exitCodeOf(code, signal)
            if (failed && !ending) {
              ending = true
              endOthers('SIGTERM')
            }
            resolve()
          })
        })
      }),
    )
  }
  try {
    await Promise.all(exits)
  } finally {
    if (killTimer) clearTimeout(killTimer)
    if (forward) for (const s of FORWARDED_SIGNALS) process.removeListener(s, onSignal)
  }
  result.ranks.sort((a, b) => a.rank - b.rank)
  return result
}

export function register(program: Command): void {
  // `launch` passes everything after the command through untouched (its own options come first).
  program.enablePositionalOptions()
  program
    .command('launch')
    .description('run a command once per rank with LLCOMM_RANK, LLCOMM_WORLD_SIZE, LLCOMM_RENDEZVOUS set')
    .requiredOption('-n, --nproc <count>', 'number of ranks (processes)')
    .option('--rendezvous <address>', 'tcp://HOST:PORT for rank 0 to host (default: a free 127.0.0.1 port)')
    .option('--grace-ms <ms>', 'after one rank fails: SIGTERM to the others, SIGKILL after this long', '5000')
    .argument('<command...>', 'the command and its arguments (put -- before it when it has options)')
    .passThroughOptions()
    .action(async (command: string[], flags: { nproc: string; rendezvous?: string; graceMs: string }) => {
      const r = await launch({
        ranks: parseIntegerSetting(flags.nproc, '-n', 1, 1024),
        command,
        rendezvous: flags.rendezvous,
        graceMs: parseIntegerSetting(flags.graceMs, '--grace-ms', 0, 3_600_000),
      })
      process.exitCode = r.exitCode
    })
}
