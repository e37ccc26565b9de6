// Starts one Node process per rank (test/process/rank-main.js) with the rendezvous variables set, collects each
// one's exit code and `RESULT` line, and kills every child still running at the harness deadline (no orphans).
import { type ChildProcess, spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { findFreePort } from '../../src/rendezvous/free-port.js'

export const RANK_MAIN = fileURLToPath(new URL('./rank-main.js', import.meta.url))

export interface RankRun {
  rank: number
  pid: number
  code: number | null
  signal: NodeJS.Signals | null
  result: Record<string, unknown> | undefined
  stderr: string
}

export interface SpawnOptions {
  worldSize: number
  scenario: string
  /** Ranks to start (default: all); a rank left out never joins. */
  ranks?: number[]
  /** Per-rank environment overrides (e.g. a duplicate LLCOMM_RANK). */
  rankEnv?: (rank: number) => Record<string, string>
  env?: Record<string, string>
  /** Harness deadline: every child still running then is SIGKILLed and the run rejects. */
  deadlineMs: number
  /** The rank program (default rank-main.js). */
  script?: string
}

export async function runRanks(options: SpawnOptions): Promise<RankRun[]> {
  const port = await findFreePort()
  const ranks = options.ranks ?? Array.from({ length: options.worldSize }, (_, r) => r)
  const children: ChildProcess[] = []
  const runs = ranks.map(
    (rank) =>
      new Promise<RankRun>((resolve) => {
        const child = spawn(process.execPath, [options.script ?? RANK_MAIN], {
          stdio: ['ignore', 'pipe', 'pipe'],
          env: {
            ...process.env,
            LLCOMM_RANK: String(rank),
            LLCOMM_WORLD_SIZE: String(options.worldSize),
            LLCOMM_RENDEZVOUS: `tcp://127.0.0.1:${port}`,
            LLCOMM_TEST_SCENARIO: options.scenario,
            ...options.env,
            ...options.rankEnv?.(rank),
          },
        })
        children.push(child)
        let stdout = ''
        let stderr = ''
        child.stdout?.setEncoding('utf8').on('data', (d: string) => {
          stdout += d
        })
        child.stderr?.setEncoding('utf8').on('data', (d: string) => {
          stderr += d
        })
        child.on('close', (code, signal) => {
          const line = stdout.split('\n').find((l) => l.startsWith('RESULT '))
          resolve({
            rank,
            pid: child.pid ?? -1,
            code,
            signal,
            result: line ? (JSON.parse(line.slice(7)) as Record<string, unknown>) : undefined,
            stderr,
          })
        })
      }),
  )
  let timer: NodeJS.Timeout | undefined
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL')
      reject(new Error(`ranks still running after ${options.deadlineMs} ms (killed)`))
    }, options.deadlineMs)
  })
  try {
    return await Promise.race([Promise.all(runs), deadline])
  } finally {
    clearTimeout(timer)
  }
}
