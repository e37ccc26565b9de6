/**
 * `llcomm bench`: nccl-tests' all_reduce_perf for llcomm (docs/design.md §6). Sweeps sizes × algorithms × dtypes on one
 * communicator, times each case inside the ranks (comm.benchmark), prints a table with each algorithm's ratio to
 * the reference, and writes --json / --plot. `--from results.json` redraws a saved run (e.g. one from the GPU
 * machine) without measuring.
 */
import type { Command } from 'commander'
import type { Backend, Communicator } from 'llcomm/internal'
import { DEFAULT_BUFFER_BYTES_OF_BACKEND, LlcommError } from 'llcomm/internal'
import { formatSideBySide, readBaselineDocument, sideBySide } from '../../bench/baseline.js'
import { measureBench } from '../../bench/bench-run.js'
import { type BenchDocument, readBenchDocument } from '../../bench/document.js'
import { checkSweepFits } from '../../bench/memory-fit.js'
import { DEFAULT_CPU_RANKS, openCommunicator } from '../../bench/open-communicator.js'
import {
  algorithmsFor,
  parseAlgorithms,
  parseDevices,
  parseDtypes,
  parseNonNegativeNumber,
  parsePdl,
  parseRanks,
  parseWholeNumber,
  resolveSizes,
} from '../../bench/options.js'
import { shouldShowProgress } from '../../bench/progress.js'
import { elementCount, parseSizeBytes } from '../../bench/sizes.js'
import { formatBenchReport } from '../../bench/table.js'
import { emitReport } from '../emit.js'

export interface BenchFlags {
  backend?: string
  ranks?: string
  devices?: string
  sizes?: string
  min?: string
  max?: string
  algorithms?: string
  dtype: string
  iters?: string
  repeat?: string
  warmup?: string
  skewUs: string
  computeUs: string
  pdl?: string
  json?: string | boolean
  plot?: string
  from?: string
  baseline?: string
  bufferBytes?: string
  progress?: boolean
  timeoutMs?: string
  /** One process per rank (cpu): src/bench/process-group.ts. */
  processes?: boolean
}

/**
 * Iterations per case when not given. cuda times graph replays of up to 100 calls each (one sample per replay),
 * so it needs more calls for a median and a p99 to mean something; cpu ranks time every call.
 */
export const DEFAULT_ITERS: Readonly<Record<Backend, { iters: number; warmup: number }>> = {
  cpu: { iters: 20, warmup: 5 },
  cuda: { iters: 2000, warmup: 200 },
}

export const DEFAULT_MAX_BYTES: Readonly<Record<Backend, number>> = { cpu: 1 << 20, cuda: 16 << 20 }

export function parseBackend(text: string | undefined): Backend | undefined {
  if (text === undefined) return undefined
  if (text !== 'cpu' && text !== 'cuda')
    throw new LlcommError('INVALID_ARGUMENT', `--backend must be cpu or cuda, got ${JSON.stringify(text)}`)
  return text
}

/**
 * Writes the report: the JSON to its file (or to stdout, the table then going to stderr), the plot, the table. With
 * --baseline the side-by-side table follows the report, and --plot draws the side-by-side chart instead.
 */
async function emit(doc: BenchDocument, flags: BenchFlags): Promise<void> {
  const base = flags.baseline !== undefined ? readBaselineDocument(flags.baseline) : undefined
  const side = base && sideBySide(doc, base)
  const sideTable = base && side ? `\n${formatSideBySide(side, doc, base)}` : ''
  emitReport(doc, formatBenchReport(doc) + sideTable, flags.json)
  if (!flags.plot) return
  if (base && side) {
    const { writeSideBySidePlot } = await import('../../bench/baseline-plot.js')
    await writeSideBySidePlot(side, doc, base, flags.plot)
    process.stderr.write(`llcomm: side-by-side plot written to ${flags.plot}\n`)
  } else {
    const { writeBenchPlot } = await import('../../bench/plot.js')
    await writeBenchPlot(doc, flags.plot)
    process.stderr.write(`llcomm: plot written to ${flags.plot}\n`)
  }
}

export async function runBenchCommand(flags: BenchFlags): Promise<void> {
  // a bad baseline file is found before anything is measured
  if (flags.baseline !== undefined && !flags.from) readBaselineDocument(flags.baseline)
  if (flags.from) {
    if (flags.json === true)
      throw new LlcommError('INVALID_ARGUMENT', '--from reads a saved run; give --json a file name to copy it')
    await emit(readBenchDocument(flags.from), flags)
    return
  }
  // Everything that can be checked before opening a communicator is checked first, so a typo costs nothing.
  const backend = parseBackend(flags.backend)
  const ranks = flags.ranks !== undefined ? parseRanks(flags.ranks) : undefined
  const devices = flags.devices !== undefined ? parseDevices(flags.devices) : undefined
  const dtypes = parseDtypes(flags.dtype)
  const requestedAlgorithms = parseAlgorithms(flags.algorithms)
  const itersFlag = flags.iters !== undefined ? parseWholeNumber(flags.iters, '--iters', 1) : undefined
  const warmupFlag = flags.warmup !== undefined ? parseWholeNumber(flags.warmup, '--warmup', 0) : undefined
  const skewUs = parseNonNegativeNumber(flags.skewUs, '--skew-us')
  const computeUs = parseNonNegativeNumber(flags.computeUs, '--compute-us')
  const repeats = flags.repeat !== undefined ? parseWholeNumber(flags.repeat, '--repeat', 1) : 1
  const pdlSettings = parsePdl(flags.pdl)
  const timeoutMs = flags.timeoutMs !== undefined ? parseWholeNumber(flags.timeoutMs, '--timeout-ms', 1) : undefined
  const bufferBytes = flags.bufferBytes !== undefined ? parseSizeBytes(flags.bufferBytes) : undefined
  if (backend === 'cpu' && flags.pdl !== undefined && flags.pdl !== 'off')
    throw new LlcommError('INVALID_ARGUMENT', '--pdl is a cuda option (programmatic dependent launch)')
  // Sizes are parsed before the communicator exists too; the default range depends on the backend.
  const sizesFor = (b: Backend) =>
    resolveSizes(flags.sizes, flags.min, flags.max, { min: 8, max: DEFAULT_MAX_BYTES[b] })
  for (const bytes of sizesFor(backend ?? 'cpu')) for (const dtype of dtypes) elementCount(bytes, dtype)

  const { comm, devices: usedDevices } = flags.processes
    ? await openProcessGroup(backend, devices, ranks, timeoutMs, bufferBytes)
    : await openCommunicator({
        backend,
        ranks,
        devices,
        timeoutMs,
        bufferBytes,
        note: (line) => process.stderr.write(`${line}\n`),
      })
  try {
    checkSweepFits(comm.backend, comm.size, sizesFor(comm.backend))
    if (comm.backend === 'cpu' && flags.pdl !== undefined && flags.pdl !== 'off')
      throw new LlcommError('INVALID_ARGUMENT', '--pdl is a cuda option (programmatic dependent launch)')
    const doc = await measureBench(
      comm,
      {
        dtypes,
        sizesBytes: sizesFor(comm.backend),
        algorithms: algorithmsFor(comm, requestedAlgorithms),
        pdlSettings,
        iters: itersFlag ?? DEFAULT_ITERS[comm.backend].iters,
        warmup: warmupFlag ?? DEFAULT_ITERS[comm.backend].warmup,
        skewUs,
        computeUs,
        repeats,
      },
      { showProgress: shouldShowProgress(flags.progress), devices: usedDevices },
    )
    // Always recorded (since 2026-12-02), default or not: a document without the field was measured at the default
    // of its day, 1 MiB on cuda (the model's BENCH_BUFFER_BYTES_BEFORE_FIELD).
    doc.bufferBytes = bufferBytes ?? DEFAULT_BUFFER_BYTES_OF_BACKEND[comm.backend]
    await emit(doc, flags)
  } finally {
    await comm.close()
  }
}

/** --processes: one Node process per rank on the cpu backend (the cuda per-process bench is not written yet). */
async function openProcessGroup(
  backend: Backend | undefined,
  devices: number[] | undefined,
  ranks: number | undefined,
  timeoutMs: number | undefined,
  bufferBytes: number | undefined,
): Promise<{ comm: Communicator; devices?: number[] }> {
  if (backend === 'cuda' || devices) {
    throw new LlcommError('INVALID_ARGUMENT', '--processes runs the cpu backend only (use --backend cpu)')
  }
  const { startProcessGroup } = await import('../../bench/process-group.js')
  process.stderr.write(`llcomm: backend cpu, one process per rank (${ranks ?? DEFAULT_CPU_RANKS} processes)\n`)
  return { comm: await startProcessGroup({ ranks: ranks ?? DEFAULT_CPU_RANKS, timeoutMs, bufferBytes }) }
}

export function register(program: Command): void {
  program
    .command('bench')
    .description('AllReduce latency/bandwidth sweep (like nccl-tests all_reduce_perf): table, --json, --plot')
    .option('--backend <name>', 'cpu or cuda (default: cuda when a GPU is found, else cpu)')
    .option('--ranks <n>', 'ranks (cpu worker threads; on cuda: the first N GPUs, or N virtual ranks on GPU 0)')
    .option('--devices <list>', 'cuda device per rank, e.g. 0,1,2,3 (a repeated index gives virtual ranks)')
    .option('--sizes <list>', 'message sizes per rank, e.g. 8,4K,64K,1M')
    .option('--min <size>', 'smallest size of a powers-of-two sweep (default 8)')
    .option('--max <size>', 'largest size of a powers-of-two sweep (default 1M on cpu, 16M on cuda)')
    .option('--algorithms <list>', "algorithms, comma-separated, or 'all' (default: every algorithm but auto)")
    .option('--dtype <list>', 'f32, f16, bf16 (comma-separated for several)', 'f32')
    .option('--iters <n>', 'timed iterations per case (default 20 on cpu, 2000 on cuda)')
    .option('--warmup <n>', 'untimed iterations per case (default 5 on cpu, 200 on cuda)')
    .option('--repeat <k>', 'interleaved rounds over every case; a row reports the median of its round medians', '1')
    .option('--skew-us <us>', 'random arrival skew per rank and call, uniform 0..U µs', '0')
    .option(
      '--compute-us <us>',
      'a fixed U µs kernel (cuda) or busy-wait (cpu) on every rank before each call, timed apart: the call as in a model step, right after compute',
      '0',
    )
    .option('--pdl <mode>', 'programmatic dependent launch (cuda): on, off or both')
    .option('--timeout-ms <ms>', 'per-wait deadline inside the ranks')
    .option(
      '--buffer-bytes <size>',
      "each rank's receive-buffer payload, e.g. 4M (default 1M on cuda): larger takes a large message in fewer launches",
    )
    .option(
      '--json [file]',
      'write the docs/design.md §6 JSON document to a file (or to stdout, the table then going to stderr)',
    )
    .option('--plot <file.svg>', 'draw latency and speedup vs size as an SVG')
    .option('--from <results.json>', 'do not measure: read a saved --json document (to print or --plot it)')
    .option(
      '--baseline <file.json>',
      "another library's rows measured on the same machine (scripts/baselines/torch-symm-mem.py): printed side by side; --plot then draws them",
    )
    .option('--progress', 'show a progress bar on stderr (default: when stderr is a terminal)')
    .option('--no-progress', 'never show a progress bar')
    .option('--processes', 'cpu: one Node process per rank (shared memory between processes) instead of worker threads')
    .action(async (flags: BenchFlags) => runBenchCommand(flags))
}
