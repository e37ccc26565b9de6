/**
 * The bench JSON document of docs/design.md §6: { machine, commit, date, command, rows: [...] }, plus how to fill in the
 * machine, commit and command fields, and a schema check used when a saved document is read back (--from).
 */
import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { cpus, hostname, loadavg } from 'node:os'
import { fileURLToPath } from 'node:url'
import type { AlgorithmChoice, AlgorithmName, Backend, Dtype } from 'llcomm/internal'
import { ALL_ALGORITHMS, DTYPES, LlcommError } from 'llcomm/internal'

export interface MachineInfo {
  hostname: string
  cpuModel: string
  /** Logical CPU cores (the CPU backend's ranks share them: 4 ranks on 2 cores time-slice). */
  cores: number
  /** GPU name(s) when the cuda backend ran. */
  gpu?: string
  /** 1-minute load average when the run started: CPU-backend figures from a busy machine are not comparable. */
  loadAverage1m?: number
}

export interface BenchRow {
  backend: Backend
  ranks: number
  /** The algorithm that actually ran. */
  algorithm: AlgorithmName
  /** The algorithm asked for ('auto' or a name); differs from `algorithm` after auto or a fallback. */
  requestedAlgorithm: AlgorithmChoice
  /** True when the requested (non-auto) algorithm could not serve the shape and another one ran instead. */
  fallback: boolean
  dtype: Dtype
  /** Bytes per rank. */
  bytes: number
  medianUs: number
  p99Us: number
  algbwGBs: number
  busbwGBs: number
  /** Wrong elements against a float64 reference, over the checked iterations. */
  wrong: number
  iters: number
  warmup: number
  /** Programmatic dependent launch (cuda), when set explicitly. */
  pdl?: boolean
  /** With --repeat: how many interleaved rounds, and each round's median (medianUs is their median). */
  repeats?: number
  roundMediansUs?: number[]
  /** cpu: per-call time of the whole timed loop run back to back, as nccl-tests reports (BenchmarkResult). */
  backToBackUs?: number
  /** Arrival skew asked for (uniform 0..skewUs per rank and call), and the median wait for the last rank. */
  skewUs?: number
  /**
   * With --compute-us: the fixed delay before every call on every rank (a model's compute), so that the call starts
   * right after a kernel. skewWaitUs is then the delay's own measured time, subtracted from medianUs.
   */
  computeUs?: number
  skewWaitUs?: number
}

export interface BenchDocument {
  machine: MachineInfo
  commit: string
  date: string
  command: string
  rows: BenchRow[]
  /** Cases that could not run, with the reason (e.g. an algorithm that is not usable at this rank count). */
  skipped?: { algorithm: AlgorithmChoice; dtype: Dtype; bytes: number; pdl?: boolean; reason: string }[]
  /** The communicator's bufferBytes when --buffer-bytes set it (absent: the backend's default). It sets how many
   * launches a large message takes, so the latency model leaves such runs out of its fits. */
  bufferBytes?: number
}

export function describeMachine(gpu?: string): MachineInfo {
  const cpuList = cpus()
  const info: MachineInfo = {
    hostname: hostname(),
    cpuModel: cpuList[0]?.model.trim() ?? 'unknown',
    cores: cpuList.length,
    loadAverage1m: Math.round(loadavg()[0] * 100) / 100,
  }
  if (gpu) info.gpu = gpu
  return info
}

/** The GPUs behind a cuda run ('4x NVIDIA H200'): the distinct devices used, named by the driver. */
export async function queryGpuNames(devices?: readonly number[]): Promise<string | undefined> {
  const { probeGpus, describeGpus } = await import('./gpu-probe.js')
  const probe = await probeGpus()
  const used = devices
    ? [...new Set(devices)].filter((d) => d < probe.names.length).map((d) => probe.names[d])
    : probe.names
  return describeGpus(used)
}

const PACKAGE_ROOT = fileURLToPath(new URL('../../../', import.meta.url))

/**
 * LLCOMM_COMMIT, else `git rev-parse HEAD` in the package with '+dirty' when tracked files differ from it, else
 * 'unknown'. The '+dirty' matters on the GPU machine: its copy of the working tree may carry a .git whose HEAD is
 * older than the files (a run of 2026-11-29 recorded 1bac1a6 for code two commits later).
 */
export function currentCommit(root: string = PACKAGE_ROOT): string {
  const fromEnv = process.env.LLCOMM_COMMIT?.trim()
  if (fromEnv) return fromEnv
  const git = (args: string[]) =>
    execFileSync('git', args, { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim()
  try {
    const head = git(['rev-parse', 'HEAD'])
    return git(['status', '--porcelain', '--untracked-files=no']) === '' ? head : `${head}+dirty`
  } catch {
    return 'unknown'
  }
}

/** The command line as typed, for the document: `llcomm bench --ranks 4 ...`. */
export function commandLine(argv: readonly string[] = process.argv): string {
  const quote = (a: string) => (/^[\w@%+=:,./-]+$/.test(a) ? a : `'${a.replaceAll("'", "'\\''")}'`)
  return ['llcomm', ...argv.slice(2)].map(quote).join(' ')
}

function fail(where: string, why: string): never {
  throw new LlcommError('INVALID_ARGUMENT', `bench document ${where}: ${why}`)
}

function checkNumber(o: Record<string, unknown>, key: string, where: string, { integer = false, min = 0 } = {}): void {
  const v = o[key]
  if (typeof v !== 'number' || !Number.isFinite(v) || v < min || (integer && !Number.isInteger(v))) {
    fail(where, `${key} must be a ${integer ? 'whole ' : ''}number ≥ ${min}, got ${JSON.stringify(v)}`)
  }
}

export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

/** Checks the docs/design.md §6 shape; returns the document typed, or throws INVALID_ARGUMENT naming the first bad field. */
export function validateBenchDocument(value: unknown, where = 'document'): BenchDocument {
  if (!isRecord(value)) fail(where, 'not a JSON object')
  const m = value.machine
  if (!isRecord(m) || typeof m.hostname !== 'string' || typeof m.cpuModel !== 'string')
    fail(where, 'machine must have hostname and cpuModel')
  checkNumber(m, 'cores', `${where}.machine`, { integer: true, min: 1 })
  for (const key of ['commit', 'date', 'command'] as const) {
    if (typeof value[key] !== 'string') fail(where, `${key} must be a string`)
  }
  if (Number.isNaN(Date.parse(value.date as string)))
    fail(where, `date ${JSON.stringify(value.date)} is not an ISO date`)
  if (value.bufferBytes !== undefined) checkNumber(value, 'bufferBytes', where, { integer: true, min: 1 })
  if (!Array.isArray(value.rows)) fail(where, 'rows must be an array')
  value.rows.forEach((row: unknown, i: number) => {
    const at = `${where}.rows[${i}]`
    if (!isRecord(row)) fail(at, 'not an object')
    if (row.backend !== 'cpu' && row.backend !== 'cuda') fail(at, `backend ${JSON.stringify(row.backend)}`)
    if (!ALL_ALGORITHMS.includes(row.algorithm as AlgorithmName)) fail(at, `algorithm ${JSON.stringify(row.algorithm)}`)
    if (!DTYPES.includes(row.dtype as Dtype)) fail(at, `dtype ${JSON.stringify(row.dtype)}`)
    checkNumber(row, 'ranks', at, { integer: true, min: 1 })
    checkNumber(row, 'bytes', at, { integer: true, min: 1 })
    checkNumber(row, 'wrong', at, { integer: true })
    for (const key of ['medianUs', 'p99Us', 'algbwGBs', 'busbwGBs']) checkNumber(row, key, at)
  })
  return value as unknown as BenchDocument
}

export function readBenchDocument(path: string): BenchDocument {
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (e) {
    throw new LlcommError('INVALID_ARGUMENT', `cannot read ${path}: ${(e as Error).message}`, { path })
  }
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch (e) {
    throw new LlcommError('INVALID_ARGUMENT', `${path} is not JSON: ${(e as Error).message}`, { path })
  }
  return validateBenchDocument(parsed, path)
}
