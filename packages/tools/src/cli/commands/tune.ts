/**
 * `llcomm tune`: sweeps every algorithm at each rank count asked for, picks the fastest correct one per size band
 * (src/bench/tune-bands.ts) and writes the table `auto` reads. --install rewrites the shipped
 * data/tuning/default.json, keeping the rows of anything not measured (e.g. cuda rows on a CPU machine).
 */
import { existsSync, writeFileSync } from 'node:fs'
import { hostname } from 'node:os'
import { fileURLToPath } from 'node:url'
import type { Command } from 'commander'
import type { Backend } from 'llcomm/internal'
import { LlcommError, loadTuningTable, SHIPPED_TUNING_TABLE_PATH, type TuningTable } from 'llcomm/internal'
import { measureBench } from '../../bench/bench-run.js'
import { type BenchDocument, type BenchRow, commandLine, currentCommit, describeMachine } from '../../bench/document.js'
import { openCommunicator } from '../../bench/open-communicator.js'
import {
  algorithmsFor,
  parseAlgorithms,
  parseDevices,
  parseDtypes,
  parseRankCounts,
  parseWholeNumber,
  resolveSizes,
} from '../../bench/options.js'
import { shouldShowProgress } from '../../bench/progress.js'
import { formatBytes } from '../../bench/sizes.js'
import { formatTable } from '../../bench/table.js'
import { formatTuningTable, mergeTuningTable, tuningEntriesFromRows } from '../../bench/tune-bands.js'
import { parseBackend } from './bench.js'

/** `llcomm tune --install` writes the library's shipped table (the one `auto` reads by default). */
export const SHIPPED_TABLE_PATH = SHIPPED_TUNING_TABLE_PATH

/** Sweep ranges: the decode range on cuda; on cpu smaller, since worker ranks share few cores. */
export const TUNE_SIZE_RANGE: Readonly<Record<Backend, { min: number; max: number }>> = {
  cpu: { min: 8, max: 1 << 20 },
  cuda: { min: 8, max: 16 << 20 },
}

interface TuneFlags {
  backend?: string
  ranks?: string
  devices?: string
  sizes?: string
  min?: string
  max?: string
  algorithms?: string
  dtype: string
  iters: string
  warmup: string
  out?: string
  install?: boolean
  json?: string
  progress?: boolean
}

export function describeMachineLine(gpu?: string): string {
  const m = describeMachine(gpu)
  return `${m.hostname}: ${m.cpuModel}, ${m.cores} cores${m.gpu ? `, ${m.gpu}` : ''}`
}

async function runTuneCommand(flags: TuneFlags): Promise<void> {
  const backendFlag = parseBackend(flags.backend)
  const devices = flags.devices !== undefined ? parseDevices(flags.devices) : undefined
  const rankCounts =
    flags.ranks !== undefined
      ? parseRankCounts(flags.ranks)
      : devices
        ? [devices.length]
        : backendFlag === 'cuda'
          ? [undefined]
          : [2, 4, 8]
  if (devices) {
    for (const n of rankCounts) {
      if (n !== undefined && n > devices.length)
        throw new LlcommError(
          'INVALID_ARGUMENT',
          `--ranks ${n} needs at least ${n} --devices entries, got ${devices.length}`,
        )
    }
  }
  const dtypes = parseDtypes(flags.dtype)
  const requested = parseAlgorithms(flags.algorithms)
  const iters = parseWholeNumber(flags.iters, '--iters', 1)
  const warmup = parseWholeNumber(flags.warmup, '--warmup', 0)
  if (flags.out && flags.install) throw new LlcommError('INVALID_ARGUMENT', 'give --out or --install, not both')
  resolveSizes(flags.sizes, flags.min, flags.max, TUNE_SIZE_RANGE[backendFlag ?? 'cpu'])

  const rows: BenchRow[] = []
  let gpu: string | undefined
  let backendUsed: Backend | undefined
  for (const n of rankCounts) {
    const { comm, devices: usedDevices } = await openCommunicator({
      backend: backendUsed ?? backendFlag,
      ranks: n,
      devices: devices && n !== undefined ? devices.slice(0, n) : devices,
      note: (line) => process.stderr.write(`${line}\n`),
    })
    try {
      backendUsed = comm.backend
      const algorithms = algorithmsFor(comm, requested).filter((a) => a !== 'auto')
      process.stderr.write(`llcomm tune: ${comm.backend}, ${comm.size} ranks: ${algorithms.join(', ')}\n`)
      const doc = await measureBench(
        comm,
        {
          dtypes,
          sizesBytes: resolveSizes(flags.sizes, flags.min, flags.max, TUNE_SIZE_RANGE[comm.backend]),
          algorithms,
          pdlSettings: [undefined],
          iters,
          warmup,
          skewUs: 0,
        },
        { showProgress: shouldShowProgress(flags.progress), devices: usedDevices },
      )
      gpu = doc.machine.gpu
      rows.push(...doc.rows)
    } finally {
      await comm.close()
    }
  }

  const command = commandLine()
  const date = new Date().toISOString()
  const commit = currentCommit()
  if (flags.json) {
    const doc: BenchDocument = { machine: describeMachine(gpu), commit, date, command, rows }
    writeFileSync(flags.json, `${JSON.stringify(doc, null, 2)}\n`)
  }
  const measured = tuningEntriesFromRows(rows)
  const out = flags.install ? SHIPPED_TABLE_PATH : (flags.out ?? `llcomm-tuning-${hostname()}.json`)
  // Merge into the file being replaced (so its other backends' rows survive); a fresh --out file starts empty.
  const previous: TuningTable | undefined = existsSync(out) ? loadTuningTable(out) : undefined
  const table = mergeTuningTable(previous, measured, { machine: describeMachineLine(gpu), date, commit, command })
  writeFileSync(out, formatTuningTable(table))

  const cells = measured.map((e, i) => {
    const prev = measured[i - 1]
    const from = prev && prev.backend === e.backend && prev.ranks === e.ranks ? prev.maxBytes + 1 : 0
    return [
      e.backend,
      String(e.ranks),
      formatBytes(from),
      e.maxBytes === Number.MAX_SAFE_INTEGER ? 'and up' : formatBytes(e.maxBytes),
      e.algorithm,
    ]
  })
  process.stdout.write(
    `${formatTable(['backend', 'ranks', 'from bytes', 'to bytes', 'algorithm'], cells, [false, true, true, true, false])}\n`,
  )
  process.stdout.write(`llcomm tune: table written to ${out}\n`)
}

export function register(program: Command): void {
  program
    .command('tune')
    .description("measure every algorithm per size and rank count and write the table that 'auto' reads")
    .option('--backend <name>', 'cpu or cuda (default: cuda when a GPU is found, else cpu)')
    .option('--ranks <list>', 'rank counts to tune, e.g. 2,4,8 (cpu default 2,4,8; cuda: the first N of --devices)')
    .option('--devices <list>', 'cuda devices, e.g. 0,1,2,3,4,5,6,7 (a repeated index gives virtual ranks)')
    .option('--sizes <list>', 'sizes per rank, e.g. 8,4K,64K')
    .option('--min <size>', 'smallest size (default 8)')
    .option('--max <size>', 'largest size (default 1M on cpu, 16M on cuda)')
    .option('--algorithms <list>', 'candidates (default: every algorithm but auto)')
    .option('--dtype <list>', 'dtype(s) to measure', 'f32')
    .option('--iters <n>', 'timed iterations per case', '20')
    .option('--warmup <n>', 'untimed iterations per case', '5')
    .option('--out <file>', 'where to write the table (default ./llcomm-tuning-<hostname>.json)')
    .option('--install', "overwrite the shipped data/tuning/default.json (other backends' rows kept)")
    .option('--json <file>', 'also save the sweep as a bench JSON document')
    .option('--progress', 'show a progress bar on stderr')
    .option('--no-progress', 'never show a progress bar')
    .action(async (flags: TuneFlags) => runTuneCommand(flags))
}
