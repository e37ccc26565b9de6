/**
 * `llcomm decode` (docs/design.md §6): an end-to-end tensor-parallel decode step of a Llama-style model (real shapes, random
 * weights, one CUDA graph per step) whose AllReduce is pluggable: inter-token latency with NCCL against each
 * llcomm algorithm and against no AllReduce at all, in one run, taking turns. cuda only: the CPU backend has no
 * model step (`llcomm model --decode` is the cost model).
 */
import { readFileSync } from 'node:fs'
import type { Command } from 'commander'
import type { AlgorithmName, CudaCommunicator } from 'llcomm/internal'
import { LlcommError } from 'llcomm/internal'
import { commandLine, currentCommit, describeMachine, queryGpuNames } from '../../bench/document.js'
import { openCommunicator } from '../../bench/open-communicator.js'
import { algorithmsFor, parseAlgorithms, parseDevices, parseRanks, parseWholeNumber } from '../../bench/options.js'
import { shouldShowProgress, startProgress } from '../../bench/progress.js'
import { median } from '../../bench/stats.js'
import { planDecodeStep } from '../../decode/plan.js'
import {
  buildDecodeRows,
  type DecodeDocument,
  formatDecodeReport,
  NO_ALLREDUCE_NAME,
  planSummary,
  validateDecodeDocument,
} from '../../decode/report.js'
import { type DecodeAlgorithm, decodeStep, FUSED_DECODE_VARIANTS, isFusedDecodeVariant } from '../../decode/step.js'
import { estimateDecode } from '../../model/decode-model.js'
import { findGpu, findModel, loadGpuTable, loadModelTable } from '../../model/decode-tables.js'
import { getPlatform, loadAlgorithmTable, loadPlatformTable } from '../../model/latency-tables.js'
import { emitReport } from '../emit.js'

export interface DecodeFlags {
  model: string
  ranks?: string
  devices?: string
  batch: string
  context: string
  layers?: string
  algorithms?: string
  replays: string
  rounds: string
  warmup: string
  benchIters: string
  gemvBlocksPerSm: string
  pdl?: string
  gpu: string
  json?: string | boolean
  plot?: string
  from?: string
  progress?: boolean
  timeoutMs?: string
  fused?: boolean
}

/** --algorithms for decode: the bench names plus `none` (the step without AllReduce). */
export function parseDecodeAlgorithms(text: string | undefined): {
  none: boolean
  requested: ReturnType<typeof parseAlgorithms>
} {
  if (text === undefined) return { none: true, requested: undefined }
  const items = text.split(',').map((s) => s.trim())
  const none = items.includes(NO_ALLREDUCE_NAME)
  const rest = items.filter((s) => s !== NO_ALLREDUCE_NAME)
  if (rest.includes('auto')) throw new LlcommError('INVALID_ARGUMENT', 'decode runs named algorithms, not auto')
  return { none, requested: rest.length > 0 ? parseAlgorithms(rest.join(',')) : [] }
}

async function emit(doc: DecodeDocument, flags: DecodeFlags): Promise<void> {
  emitReport(doc, formatDecodeReport(doc), flags.json)
  if (flags.plot) {
    const { writeDecodePlot } = await import('../../decode/plot.js')
    await writeDecodePlot(doc, flags.plot)
    process.stderr.write(`llcomm: plot written to ${flags.plot}\n`)
  }
}

export async function runDecodeCommand(flags: DecodeFlags): Promise<void> {
  if (flags.from) {
    let saved: unknown
    try {
      saved = JSON.parse(readFileSync(flags.from, 'utf8'))
    } catch (e) {
      throw new LlcommError(
        'INVALID_ARGUMENT',
        `cannot read ${flags.from}: ${e instanceof Error ? e.message : String(e)}`,
        {
          path: flags.from,
        },
      )
    }
    await emit(validateDecodeDocument(saved, flags.from), flags)
    return
  }
  const architecture = findModel(loadModelTable(), flags.model)
  const gpuSpec = findGpu(loadGpuTable(), flags.gpu)
  const ranks = flags.ranks !== undefined ? parseRanks(flags.ranks) : undefined
  const devices = flags.devices !== undefined ? parseDevices(flags.devices) : undefined
  const batch = parseWholeNumber(flags.batch, '--batch', 1)
  const context = parseWholeNumber(flags.context, '--context', 1)
  const layers = flags.layers !== undefined ? parseWholeNumber(flags.layers, '--layers', 1) : undefined
  const replays = parseWholeNumber(flags.replays, '--replays', 1)
  const rounds = parseWholeNumber(flags.rounds, '--rounds', 1)
  const warmup = parseWholeNumber(flags.warmup, '--warmup', 0)
  const benchIters = parseWholeNumber(flags.benchIters, '--bench-iters', 0)
  const gemvBlocksPerSm = parseWholeNumber(flags.gemvBlocksPerSm, '--gemv-blocks-per-sm', 0)
  const timeoutMs = flags.timeoutMs !== undefined ? parseWholeNumber(flags.timeoutMs, '--timeout-ms', 1) : undefined
  if (flags.pdl !== undefined && flags.pdl !== 'on' && flags.pdl !== 'off')
    throw new LlcommError('INVALID_ARGUMENT', `--pdl must be on or off, got ${JSON.stringify(flags.pdl)}`)
  const pdl = flags.pdl === 'on'
  const { none, requested } = parseDecodeAlgorithms(flags.algorithms)
  // The model's shapes are checked before any GPU is opened (the SM count only sets attention splits).
  const tpKnown = devices?.length ?? ranks
  planDecodeStep(architecture, { tp: tpKnown ?? 1, batch, context, layers, smCount: 1 })

  let opened: Awaited<ReturnType<typeof openCommunicator>>
  try {
    opened = await openCommunicator({
      backend: 'cuda',
      ranks,
      devices,
      timeoutMs,
      note: (line) => process.stderr.write(`${line}\n`),
    })
  } catch (e) {
    const why = e instanceof LlcommError ? `${e.code}: ${e.message}` : e instanceof Error ? e.message : String(e)
    throw new LlcommError(
      'NO_DEVICE',
      `llcomm decode runs a model step on GPUs (cuda backend) and none could be opened (${why.split('\n')[0]}); the CPU backend has no decode step: 'llcomm model --decode' is the cost model`,
    )
  }
  const comm = opened.comm as CudaCommunicator
  try {
    const named = requested && requested.length === 0 ? [] : algorithmsFor(comm, requested)
    const algorithms: DecodeAlgorithm[] = [
      ...(none ? [NO_ALLREDUCE_NAME as DecodeAlgorithm] : []),
      ...named.filter((a): a is AlgorithmName => a !== 'auto'),
      // --fused: the AllReduce + RMSNorm pairs fused, unfused with the same RMSNorm, after NCCL, and without AllReduce
      ...(flags.fused
        ? FUSED_DECODE_VARIANTS.filter((v) => v !== 'nccl+rmsnorm' || comm.algorithms.includes('nccl'))
        : []),
    ]
    if (comm.size === 1 && algorithms.some((a) => a !== NO_ALLREDUCE_NAME))
      throw new LlcommError('INVALID_ARGUMENT', 'a TP 1 step has no AllReduce: give --algorithms none')
    const progress = startProgress(rounds * replays * algorithms.length, shouldShowProgress(flags.progress))
    let result: Awaited<ReturnType<typeof decodeStep>>
    try {
      result = await decodeStep(comm, {
        architecture,
        batch,
        context,
        layers,
        algorithms,
        replays,
        rounds,
        warmup,
        pdl,
        gemvBlocksPerSm,
        onReplay: () => progress.tick('decode step'),
      })
    } finally {
      progress.stop()
    }
    const plan = result.plan
    const benchUs: Record<string, number> = {}
    if (benchIters > 0) {
      for (const a of algorithms) {
        if (a === NO_ALLREDUCE_NAME || isFusedDecodeVariant(a)) continue // no plain AllReduce to bench alone
        const r = await comm.benchmark({
          algorithm: a,
          dtype: 'bf16',
          count: plan.allReduceCount,
          iters: benchIters,
          warmup: Math.min(200, benchIters),
          pdl,
        })
        if (r.wrong > 0)
          throw new LlcommError('INVALID_ARGUMENT', `${a}: ${r.wrong} wrong elements in the back-to-back bench`)
        benchUs[a] = median(r.timesUs)
      }
    }
    // The decode cost model's price of one AllReduce in a step (latency model + in-step term) for each algorithm.
    const algorithmTable = loadAlgorithmTable()
    const platform = getPlatform(loadPlatformTable(), gpuSpec.latencyPlatform)
    const modelPerAllReduceUs = (a: string): number | undefined => {
      try {
        const est = estimateDecode(
          { model: architecture, gpu: gpuSpec, tp: comm.size, batch, contextTokens: context, algorithms: [a] },
          algorithmTable,
          platform,
        )
        return est.perAlgorithm[0].commUs / (2 * architecture.layers)
      } catch {
        return undefined // an algorithm the model does not price
      }
    }
    const rows = buildDecodeRows(plan, result.rows, benchUs, modelPerAllReduceUs)
    const noneRow = rows.find((r) => r.algorithm === NO_ALLREDUCE_NAME)
    const usedDevices = opened.devices ?? []
    const doc: DecodeDocument = {
      kind: 'llcomm-decode',
      machine: describeMachine(await queryGpuNames(usedDevices)),
      commit: currentCommit(),
      date: new Date().toISOString(),
      command: commandLine(),
      devices: usedDevices,
      model: architecture.name,
      tp: comm.size,
      batch,
      context,
      layers: plan.layers,
      modelLayers: plan.modelLayers,
      pdl,
      gemvBlocksPerSm,
      plan: planSummary(plan),
      ...(noneRow ? { computeGBs: (plan.weightBytes + plan.kvCacheBytesRead) / (noneRow.stepMedianUs * 1e3) } : {}),
      rows,
      samplesUs: Object.fromEntries(result.rows.map((r) => [r.algorithm, r.stepUs])),
    }
    await emit(doc, flags)
    // Without AllReduce each rank adds only its own partial sum: the ranks are expected to differ there.
    const bad = rows.filter(
      (r) => !r.finite || (r.algorithm !== NO_ALLREDUCE_NAME && r.algorithm !== 'none+rmsnorm' && !r.ranksAgree),
    )
    if (bad.length > 0)
      throw new LlcommError(
        'INVALID_ARGUMENT',
        `ranks disagree or produced NaN/Inf with ${bad.map((r) => r.algorithm).join(', ')}: the step is wrong`,
      )
  } finally {
    await comm.close()
  }
}

export function register(program: Command): void {
  program
    .command('decode')
    .description(
      'an end-to-end tensor-parallel decode step (Llama-style, real shapes, random weights, one CUDA graph per step) with each AllReduce: inter-token latency side by side',
    )
    .option(
      '--model <name>',
      'llama-3.1-8b or llama-3.1-70b (dense GQA models of data/models/models.json)',
      'llama-3.1-8b',
    )
    .option('--ranks <n>', 'tensor-parallel degree: the first N GPUs, or N virtual ranks on GPU 0')
    .option('--devices <list>', 'cuda device per rank, e.g. 0,1 (a repeated index gives virtual ranks)')
    .option('--batch <n>', 'sequences per step (1..16)', '1')
    .option('--context <tokens>', 'tokens each sequence attends to, the new one included', '4096')
    .option('--layers <n>', "run only the first N layers (default: all of the model's)")
    .option(
      '--algorithms <list>',
      "comma-separated; 'none' = the step without AllReduce (default: none and every algorithm but auto)",
    )
    .option('--replays <n>', 'timed steps per algorithm and round', '20')
    .option('--rounds <n>', 'rounds; the algorithms take turns within each', '5')
    .option('--warmup <n>', 'untimed steps per algorithm first', '5')
    .option('--bench-iters <n>', 'back-to-back AllReduce calls per algorithm at the step size (0: skip)', '2000')
    .option(
      '--gemv-blocks-per-sm <n>',
      'GEMV grid: at most n blocks per SM, taking several rows in turn (0: a warp per row pair at batch 1, a block per 16 rows above)',
      '0',
    )
    .option('--pdl <mode>', 'programmatic dependent launch for the AllReduce: on or off', 'off')
    .option('--gpu <name>', 'GPU of the decode cost model to compare with (data/models/gpus.json)', 'h200')
    .option('--json [file]', 'write the document to a file (or to stdout, the table then going to stderr)')
    .option('--plot <file.svg>', 'draw the step time per algorithm and each call in the step against back to back')
    .option('--from <results.json>', 'do not measure: print (or --plot) a saved --json document')
    .option('--progress', 'show a progress bar on stderr (default: when stderr is a terminal)')
    .option('--no-progress', 'never show a progress bar')
    .option('--timeout-ms <ms>', 'per-wait deadline inside the ranks')
    .option(
      '--fused',
      'also run the step with fused AllReduce + RMSNorm (fused, fused-oneshot, fused-twoshot) beside unfused, nccl+rmsnorm and none+rmsnorm (the same RMSNorm kernel)',
    )
    .action(async (flags: DecodeFlags) => runDecodeCommand(flags))
}
