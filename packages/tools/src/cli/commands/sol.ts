/**
 * `llcomm sol`: the speed-of-light bound of this machine from measured primitives (seed 000's formula, see
 * src/sol/model.ts), per algorithm × rank count × size; with --bench, each measured row's ratio to its bound.
 * --constants uses a published table entry instead of measuring (e.g. gb200-seed000).
 */
import { readFileSync } from 'node:fs'
import type { Command } from 'commander'
import type { Backend } from 'llcomm/internal'
import { LlcommError } from 'llcomm/internal'
import { commandLine, currentCommit, describeMachine, queryGpuNames, readBenchDocument } from '../../bench/document.js'
import { countVisibleGpus } from '../../bench/open-communicator.js'
import { parseDevices, parseRankCounts } from '../../bench/options.js'
import { parseSizeList } from '../../bench/sizes.js'
import { SOL_CONSTANTS, type SolPrimitives } from '../../sol/model.js'
import { boundsFor, compareWithBench, formatSolReport, type SolDocument, withHopLatency } from '../../sol/report.js'
import { emitReport } from '../emit.js'
import { parseBackend } from './bench.js'

interface SolFlags {
  backend?: string
  devices?: string
  ranks: string
  sizes: string
  constants?: string
  bench?: string
  from?: string
  json?: string | boolean
}

interface Measured {
  primitives: SolPrimitives
  raw: Record<string, number>
  source: SolDocument['source']
  gpu?: string
  /** With --from: the machine the primitives were measured on (not the one re-printing them). */
  savedMachine?: SolDocument['machine']
}

async function measureOnCuda(devices: number[]): Promise<Measured> {
  const { measureCudaPrimitives } = await import('../../sol/measure-cuda.js')
  const m = await measureCudaPrimitives({ devices })
  return {
    primitives: m.primitives,
    raw: m.raw,
    source: { backend: 'cuda', measured: true, devices },
    gpu: await queryGpuNames(devices),
  }
}

async function measureOnCpu(): Promise<Measured> {
  const { measureCpuPrimitives } = await import('../../sol/measure-cpu.js')
  const m = await measureCpuPrimitives()
  return { primitives: m.primitives, raw: { ...m.raw }, source: { backend: 'cpu', measured: true } }
}

async function measure(backend: Backend | undefined, devices: number[] | undefined): Promise<Measured> {
  if (backend === 'cpu') {
    if (devices) throw new LlcommError('INVALID_ARGUMENT', '--devices is for the cuda backend')
    return measureOnCpu()
  }
  const cudaDevices = devices ?? ((await countVisibleGpus()) >= 2 ? [0, 1] : [0, 0])
  if (backend === 'cuda' || devices) return measureOnCuda(cudaDevices)
  try {
    const m = await measureOnCuda(cudaDevices)
    process.stderr.write(`llcomm sol: GPU found: measuring on cuda devices ${cudaDevices.join(',')}\n`)
    return m
  } catch (e) {
    const why = e instanceof Error ? e.message.split('\n')[0] : String(e)
    process.stderr.write(`llcomm sol: no usable GPU (${why}); measuring the cpu analogues on worker threads\n`)
    return measureOnCpu()
  }
}

/** The primitives of a saved `llcomm sol --json` document (e.g. one measured on the GPU machine). */
function readSavedPrimitives(path: string): Measured {
  let doc: SolDocument
  try {
    doc = JSON.parse(readFileSync(path, 'utf8')) as SolDocument
  } catch (e) {
    throw new LlcommError('INVALID_ARGUMENT', `cannot read sol document ${path}: ${(e as Error).message}`, { path })
  }
  const p = doc?.primitives
  if (!p || typeof p.l2RoundTripUs !== 'number' || typeof p.remoteStoreUs !== 'number') {
    throw new LlcommError('INVALID_ARGUMENT', `${path} has no primitives.l2RoundTripUs / remoteStoreUs`, { path })
  }
  const primitives: SolPrimitives = { l2RoundTripUs: p.l2RoundTripUs, remoteStoreUs: p.remoteStoreUs }
  if (typeof p.kernelFloorUs === 'number') primitives.kernelFloorUs = p.kernelFloorUs
  if (typeof p.copyBandwidthGBs === 'number') primitives.copyBandwidthGBs = p.copyBandwidthGBs
  return { primitives, raw: { ...(p.raw ?? {}) }, source: doc.source, gpu: doc.machine?.gpu, savedMachine: doc.machine }
}

async function runSolCommand(flags: SolFlags): Promise<void> {
  const backend = parseBackend(flags.backend)
  const devices = flags.devices !== undefined ? parseDevices(flags.devices) : undefined
  const rankCounts = parseRankCounts(flags.ranks)
  const sizes = parseSizeList(flags.sizes)
  const bench = flags.bench ? readBenchDocument(flags.bench) : undefined
  let measured: Measured
  if (flags.from !== undefined) {
    if (flags.constants !== undefined || backend || devices)
      throw new LlcommError('INVALID_ARGUMENT', '--from reuses saved primitives: drop --constants/--backend/--devices')
    measured = readSavedPrimitives(flags.from)
  } else if (flags.constants !== undefined) {
    const entry = SOL_CONSTANTS[flags.constants]
    if (!entry)
      throw new LlcommError(
        'INVALID_ARGUMENT',
        `unknown --constants ${JSON.stringify(flags.constants)}: expected one of ${Object.keys(SOL_CONSTANTS).join(', ')}`,
      )
    if (backend || devices)
      throw new LlcommError('INVALID_ARGUMENT', '--constants replaces measuring: drop --backend/--devices')
    measured = {
      primitives: entry.primitives,
      raw: {},
      source: { measured: false, constants: flags.constants, description: entry.source },
    }
  } else {
    measured = await measure(backend, devices)
  }
  const doc: SolDocument = {
    machine: measured.savedMachine ?? describeMachine(measured.gpu),
    commit: currentCommit(),
    date: new Date().toISOString(),
    command: commandLine(),
    source: measured.source,
    primitives: withHopLatency(measured.primitives, Object.keys(measured.raw).length > 0 ? measured.raw : undefined),
    bounds: boundsFor(measured.primitives, rankCounts, sizes),
  }
  if (bench) {
    const benchBackend = bench.rows[0]?.backend
    if (measured.source.measured && benchBackend && benchBackend !== measured.source.backend) {
      process.stderr.write(
        `llcomm sol: note: the bench rows are from ${benchBackend}, the primitives from ${measured.source.backend}\n`,
      )
    }
    doc.comparisons = compareWithBench(measured.primitives, bench)
  }
  emitReport(doc, formatSolReport(doc), flags.json)
}

export function register(program: Command): void {
  program
    .command('sol')
    .description('speed-of-light bounds from measured primitives (fence, ping-pong hop, kernel floor, copy bandwidth)')
    .option('--backend <name>', 'cpu or cuda (default: cuda when a GPU is found, else the cpu analogues)')
    .option('--devices <list>', 'two cuda devices for the ping-pong, e.g. 0,1 (0,0: two blocks on one GPU)')
    .option('--ranks <list>', 'rank counts to bound', '2,4,8')
    .option('--sizes <list>', 'message sizes per rank to bound', '8,4K,64K,1M')
    .option(
      '--constants <name>',
      `use a published table instead of measuring: ${Object.keys(SOL_CONSTANTS).join(', ')}`,
    )
    .option('--from <sol.json>', 'do not measure: reuse the primitives of a saved sol --json document')
    .option('--bench <file.json>', 'a bench --json document: print each row measured / bound')
    .option('--json [file]', 'write { machine, commit, date, command, primitives, bounds } (stdout when no file)')
    .action(async (flags: SolFlags) => runSolCommand(flags))
}
