/**
 * `llcomm model`: the latency model per algorithm with a scale simulation (2–72 GPUs), calibration against
 * bench JSON (llcomm bench --json) with residuals, the decode cost model for named models, and the checks against the
 * seeds.
 */
import { existsSync, readdirSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Command } from 'commander'
import { type Accumulation, BLOCK_TARGETS, LlcommError, type TwoshotAllGatherMode } from 'llcomm/internal'
import { readBenchFile, rowTopology, tryReadBenchFile } from '../../model/bench-results.js'
import {
  applyCalibration,
  type CalibrationResult,
  type CalibrationRow,
  calibratePlatform,
  calibrationRowsByPlatform,
  platformForCalibration,
  type ResidualRow,
} from '../../model/calibrate.js'
import { validateDecodeFile } from '../../model/decode-calibration.js'
import { type DecodeEstimate, estimateDecode, parseLaunchMode } from '../../model/decode-model.js'
import { findGpu, findModel, loadGpuTable, loadModelTable } from '../../model/decode-tables.js'
import { validateDecodeTpFile } from '../../model/decode-tp.js'
import {
  BLOCK_TARGETS_BEFORE_SWEEP,
  MODEL_ACCUMULATION,
  MODEL_BLOCK_TARGETS,
  MODEL_TWOSHOT_ALLGATHER,
  MODEL_TWOSHOT_ATOMIC_ALLGATHER,
  MODEL_TWOSHOT_BROADCAST,
  type TwoshotAtomicAllGather,
  type TwoshotBroadcast,
} from '../../model/kernel-counts.js'
import {
  FIT_PARAMS,
  type FitParam,
  type LaunchCounting,
  type ParamValues,
  paramsFromPlatform,
} from '../../model/latency-model.js'
import {
  getPlatform,
  loadAlgorithmTable,
  loadPlatformTable,
  PLATFORMS_URL,
  type PlatformConstants,
  type PlatformTopology,
} from '../../model/latency-tables.js'
import { NCCL_FITTABLE } from '../../model/nccl-calibrate.js'
import { NCCL_CONSTANT_NAMES, type NcclConstantName, type NcclConstants } from '../../model/nccl-model.js'
import { parseGpuCounts, parseSizes, type ScaleRow, simulateScaling } from '../../model/scale.js'
import { runSeedChecks, type SeedCheck } from '../../model/seed-checks.js'
import { fixed, formatBytes, percent, textTable } from '../../model/text-table.js'

interface ModelOptions {
  platform: string
  algorithms?: string
  gpus: string
  sizes: string
  calibrate?: string[]
  fit?: string
  write?: boolean
  table?: string
  decode?: boolean
  model: string
  tp: string
  batch: string
  context: string
  gpu: string
  usdPerGpuHour?: string
  hbmEfficiency?: string
  seedChecks?: boolean
  launch: string
  validateDecode?: string | boolean
  validateDecodeTp?: string | boolean
  residuals?: boolean
  blockTargets?: string
  twoshotAllgather?: string
  accumulation?: string
  twoshotBroadcast?: string
  twoshotAtomicAllgather?: string
  leaveOneOut?: boolean
  json?: boolean
}

/** --block-targets' values: the model's own (MODEL_BLOCK_TARGETS), the library's, those before the 12-02 sweep. */
const BLOCK_TARGET_CHOICES = {
  model: MODEL_BLOCK_TARGETS,
  library: BLOCK_TARGETS,
  'before-sweep': BLOCK_TARGETS_BEFORE_SWEEP,
}

/**
 * --block-targets, --twoshot-allgather, --accumulation, --twoshot-broadcast and --twoshot-atomic-allgather: how the
 * --calibrate files' launches are counted (the build they measured; each file's buffer is its own bufferBytes).
 * Absent: the model's own (kernel-counts.ts MODEL_BLOCK_TARGETS, MODEL_TWOSHOT_ALLGATHER, MODEL_ACCUMULATION,
 * MODEL_TWOSHOT_BROADCAST, MODEL_TWOSHOT_ATOMIC_ALLGATHER); undefined when none is given.
 */
function parseCounting(
  blockTargets?: string,
  allGather?: string,
  accumulation?: string,
  twoshotBroadcast?: string,
  twoshotAtomicAllGather?: string,
): LaunchCounting | undefined {
  if (
    blockTargets === undefined &&
    allGather === undefined &&
    accumulation === undefined &&
    twoshotBroadcast === undefined &&
    twoshotAtomicAllGather === undefined
  )
    return undefined
  const counting: LaunchCounting = {}
  if (blockTargets !== undefined) {
    if (!Object.hasOwn(BLOCK_TARGET_CHOICES, blockTargets))
      throw new LlcommError(
        'INVALID_ARGUMENT',
        `--block-targets ${blockTargets}: ${Object.keys(BLOCK_TARGET_CHOICES).join(', ')}`,
        { value: blockTargets },
      )
    counting.blockTargets = BLOCK_TARGET_CHOICES[blockTargets as keyof typeof BLOCK_TARGET_CHOICES]
  }
  if (accumulation !== undefined) {
    if (accumulation !== 'f32' && accumulation !== 'dtype')
      throw new LlcommError('INVALID_ARGUMENT', `--accumulation ${accumulation}: f32 or dtype`, { value: accumulation })
    counting.accumulation = accumulation as Accumulation
  }
  if (allGather !== undefined) {
    if (!['push', 'pull', 'auto'].includes(allGather))
      throw new LlcommError('INVALID_ARGUMENT', `--twoshot-allgather ${allGather}: push, pull or auto`, {
        value: allGather,
      })
    counting.allGather = allGather as TwoshotAllGatherMode
  }
  if (twoshotBroadcast !== undefined) {
    if (twoshotBroadcast !== 'words' && twoshotBroadcast !== 'slots')
      throw new LlcommError('INVALID_ARGUMENT', `--twoshot-broadcast ${twoshotBroadcast}: words or slots`, {
        value: twoshotBroadcast,
      })
    counting.twoshotBroadcast = twoshotBroadcast as TwoshotBroadcast
  }
  if (twoshotAtomicAllGather !== undefined) {
    if (twoshotAtomicAllGather !== 'serial' && twoshotAtomicAllGather !== 'batched')
      throw new LlcommError(
        'INVALID_ARGUMENT',
        `--twoshot-atomic-allgather ${twoshotAtomicAllGather}: serial or batched`,
        { value: twoshotAtomicAllGather },
      )
    counting.twoshotAtomicAllGather = twoshotAtomicAllGather as TwoshotAtomicAllGather
  }
  return counting
}

function benchFilesFrom(paths: string[]): string[] {
  const files: string[] = []
  for (const p of paths) {
    if (!existsSync(p))
      throw new LlcommError('INVALID_ARGUMENT', `--calibrate: no such file or folder ${p}`, { path: p })
    if (statSync(p).isDirectory()) {
      for (const f of readdirSync(p).sort()) if (f.endsWith('.json')) files.push(join(p, f))
    } else {
      files.push(p)
    }
  }
  return files
}

/**
 * --fit: the parameters to fit ('none': fit nothing, the table's prediction); the rest keep the table's values.
 * The overlap exponent is chosen again only when 'overlapExponent' is in the list.
 */
function parseFitList(text: string): {
  fitOnly: FitParam[]
  ncclFitOnly: NcclConstantName[]
  overlapExponents: readonly number[] | null | undefined
} {
  const names = text === 'none' ? [] : text.split(',').map((s) => s.trim())
  const isNccl = (n: string): n is NcclConstantName => (NCCL_FITTABLE as readonly string[]).includes(n)
  for (const n of names)
    if (n !== 'overlapExponent' && !(FIT_PARAMS as readonly string[]).includes(n) && !isNccl(n))
      throw new LlcommError(
        'INVALID_ARGUMENT',
        `--fit: unknown parameter ${JSON.stringify(n)} (known: ${FIT_PARAMS.join(', ')}, overlapExponent, ${NCCL_FITTABLE.join(', ')}, none)`,
      )
  return {
    fitOnly: names.filter((n): n is FitParam => (FIT_PARAMS as readonly string[]).includes(n)),
    ncclFitOnly: names.filter(isNccl),
    overlapExponents: names.includes('overlapExponent') ? undefined : null,
  }
}

/** A platform entry whose `nccl` block carries calibrated values (sources unchanged: nothing is written). */
function withNcclConstants(platform: PlatformConstants, k: NcclConstants | undefined): PlatformConstants {
  if (!k || !platform.nccl) return platform
  const nccl = { ...platform.nccl }
  for (const n of NCCL_CONSTANT_NAMES) nccl[n] = { ...nccl[n], value: k[n] }
  return { ...platform, nccl }
}

function positiveNumber(text: string, flag: string): number {
  const v = Number(text)
  if (!Number.isFinite(v) || v <= 0)
    throw new LlcommError('INVALID_ARGUMENT', `${flag} needs a positive number, got ${JSON.stringify(text)}`)
  return v
}

function scaleText(rows: ScaleRow[], platform: string): string {
  const sizes = [...new Set(rows.map((r) => r.bytes))]
  const header = ['algorithm', 'gpus', ...sizes.map((s) => `${formatBytes(s)} µs`), 'note']
  const keyed = new Map<string, ScaleRow[]>()
  for (const r of rows) {
    const key = `${r.algorithm}|${r.gpus}`
    const list = keyed.get(key)
    if (list) list.push(r)
    else keyed.set(key, [r])
  }
  const body = [...keyed.values()].map((rs) => {
    const notes = [
      rs[0].modelOnly ? 'model only' : '',
      rs[0].beyondDomain ? 'beyond NVLink domain' : '',
      rs[0].missingTerms.length ? `missing ${rs[0].missingTerms.join('+')}` : '',
    ].filter(Boolean)
    return [rs[0].algorithm, rs[0].gpus, ...rs.map((r) => fixed(r.latencyUs, 2)), notes.join('; ')]
  })
  // the fastest algorithm that runs (not model-only) and whose terms are all in the table, per GPU count and size
  const gpus = [...new Set(rows.map((r) => r.gpus))]
  const fastest = gpus.map((n) => [
    n,
    ...sizes.map((b) => {
      const candidates = rows.filter(
        (r) => r.gpus === n && r.bytes === b && !r.modelOnly && r.missingTerms.length === 0,
      )
      const best = candidates.reduce<ScaleRow | undefined>(
        (x, r) => (!x || r.latencyUs < x.latencyUs ? r : x),
        undefined,
      )
      return best ? best.algorithm : '-'
    }),
  ])
  const tables = [
    `# predicted AllReduce latency on ${platform}\n${textTable(header, body)}`,
    `# fastest runnable algorithm (complete terms only)\n${textTable(['gpus', ...sizes.map(formatBytes)], fastest)}`,
  ]
  // algorithms priced in NCCL's cost form: the candidate NCCL's tuner would run
  for (const name of [...new Set(rows.filter((r) => r.ncclChoice).map((r) => r.algorithm))]) {
    const choice = gpus.map((n) => [
      n,
      ...sizes.map((b) => rows.find((r) => r.algorithm === name && r.gpus === n && r.bytes === b)?.ncclChoice ?? '-'),
    ])
    tables.push(
      `# ${name}: NCCL's choice (algorithm/protocol, the least of its cost form's candidates)\n${textTable(['gpus', ...sizes.map(formatBytes)], choice)}`,
    )
  }
  return tables.join('\n\n')
}

function calibrationText(file: string, r: CalibrationResult, showRows: boolean): string {
  const lines = [`# calibration of ${r.platform} from ${file}: ${r.inSample.rows} rows`]
  if (r.fitted.length || !r.nccl)
    lines.push(`fitted: ${r.fitted.map((p) => `${p}=${r.params[p]?.toPrecision(4)}`).join(', ') || 'none'}`)
  if (r.nccl) {
    const k = r.nccl.constants
    lines.push(
      `NCCL's cost form (${r.nccl.rows} rows; the least of ring and tree × LL, LL128, Simple): fitted: ${r.nccl.fitted.map((n) => `${n}=${k[n].toPrecision(4)}`).join(', ') || 'none'}`,
    )
    if (r.nccl.notIdentified.length)
      lines.push(`  not identified by these rows (table value kept): ${r.nccl.notIdentified.join(', ')}`)
    if (r.nccl.held.length) lines.push(`  held at the table's value (--fit): ${r.nccl.held.join(', ')}`)
    lines.push(
      `  priors and held constants: ${NCCL_CONSTANT_NAMES.filter((n) => !r.nccl?.fitted.includes(n))
        .map((n) => `${n}=${Number(k[n].toPrecision(4))}`)
        .join(', ')}`,
    )
  }
  if (r.overlapExponentScan && r.overlapExponentScan.length > 1)
    lines.push(
      `overlap exponent q (a launch's latency path L and bandwidth time B combined as (L^q + B^q)^(1/q)), in-sample: ${r.overlapExponentScan
        .map((x) => `q=${x.overlapExponent} ${x.within15}/${x.rows} rms ${percent(x.rmsRelError)}`)
        .join('; ')}; kept q=${r.overlapExponent}`,
    )
  else if (r.overlapExponent !== null && r.overlapExponent !== 1)
    lines.push(`overlap exponent q = ${r.overlapExponent}`)
  if (r.notIdentified.length)
    lines.push(`not identified by these rows (table value kept): ${r.notIdentified.join(', ')}`)
  if (r.held.length) lines.push(`held at the table's value (--fit): ${r.held.join(', ')}`)
  const s = (x: CalibrationResult['inSample']) =>
    `${x.within15}/${x.rows} within ±15%, rms ${percent(x.rmsRelError)}, max ${percent(x.maxAbsRelError)}`
  lines.push(
    `residuals ${r.fitted.length || r.nccl?.fitted.length ? 'in-sample' : "with the table's constants (nothing fitted)"}: ${s(r.inSample)}`,
  )
  if (r.leaveOneOut) lines.push(`residuals leave-one-out: ${s(r.leaveOneOut)}`)
  if (r.leaveOneRankCountOut) {
    // Fit on every rank count but one, predict that one: the test of how the model scales.
    lines.push(`residuals leave-one-rank-count-out: ${s(r.leaveOneRankCountOut.all)}`)
    for (const b of r.leaveOneRankCountOut.byRanks) lines.push(`  ${b.ranks} ranks held out: ${s(b.summary)}`)
  }
  if (r.leaveOneSizeDecadeOut) {
    // Fit on every size decade but one, predict that one: the test of how the model scales in message size.
    lines.push(`residuals leave-one-size-decade-out: ${s(r.leaveOneSizeDecadeOut.all)}`)
    for (const b of r.leaveOneSizeDecadeOut.byDecade) lines.push(`  ${b.decade} held out: ${s(b.summary)}`)
  }
  if (r.leaveOneDtypeOut) {
    // Fit on the other element types, predict this one.
    lines.push(`residuals leave-one-dtype-out: ${s(r.leaveOneDtypeOut.all)}`)
    for (const b of r.leaveOneDtypeOut.byDtype) lines.push(`  ${b.dtype} held out: ${s(b.summary)}`)
  }
  // the held-out errors the calibration computed (columns without any value are left out)
  const heldOut = (
    [
      ['leave-one-out', 'LOO error', (x) => x.looRelError],
      ['leave-one-rank-count-out', 'rank count out', (x) => x.lorcoRelError],
      ['leave-one-size-decade-out', 'size decade out', (x) => x.losdoRelError],
      ['leave-one-dtype-out', 'dtype out', (x) => x.lodtoRelError],
    ] as const satisfies readonly (readonly [string, string, (x: ResidualRow) => number | undefined])[]
  ).filter(([, , get]) => r.residuals.some((x) => get(x) !== undefined))
  const algorithmsSeen = [...new Set(r.residuals.map((x) => x.algorithm))]
  if (algorithmsSeen.length > 1) {
    const count = (errors: (number | undefined)[]) => {
      const known = errors.filter((e): e is number => e !== undefined)
      return known.length ? `${known.filter((e) => Math.abs(e) <= 0.15).length}/${known.length}` : ''
    }
    lines.push(
      textTable(
        ['algorithm', 'within ±15% in-sample', ...heldOut.map(([name]) => name)],
        algorithmsSeen.map((a) => {
          const rs = r.residuals.filter((x) => x.algorithm === a)
          return [a, count(rs.map((x) => x.relError)), ...heldOut.map(([, , get]) => count(rs.map(get)))]
        }),
      ),
    )
  }
  if (showRows) {
    const withChoice = r.residuals.some((x) => x.choice !== undefined)
    lines.push(
      textTable(
        [
          'algorithm',
          'dtype',
          'ranks',
          'bytes',
          'measured µs',
          'predicted µs',
          'error',
          ...heldOut.map(([, column]) => column),
          ...(withChoice ? ['NCCL choice'] : []),
        ],
        r.residuals.map((x) => [
          x.algorithm,
          x.dtype ?? '',
          x.ranks,
          formatBytes(x.bytes),
          fixed(x.measuredUs, 2),
          fixed(x.predictedUs, 2),
          percent(x.relError),
          ...heldOut.map(([, , get]) => {
            const e = get(x)
            return e === undefined ? '' : percent(e)
          }),
          ...(withChoice ? [x.choice ?? ''] : []),
        ]),
      ),
    )
  }
  return lines.join('\n')
}

export function decodeText(e: DecodeEstimate): string {
  const head = [
    `# decode: ${e.model}, TP=${e.tp} on ${e.gpu}, batch ${e.batch}, context ${e.contextTokens}`,
    `weights read per GPU ${(e.weightBytesPerGpu / 1e9).toFixed(2)} GB, KV cache ${(e.kvBytesPerGpu / 1e9).toFixed(3)} GB, at ${e.effectiveHbmGBs.toFixed(0)} GB/s: ${(e.memoryUs / 1e3).toFixed(3)} ms`,
    `${e.allReducesPerToken} AllReduces per token of ${formatBytes(e.allReduceBytes)} bytes`,
    `launch ${e.launch}: ${e.kernelsPerStep.toFixed(0)} kernels per step, +${(e.launchUs / 1e3).toFixed(3)} ms on the GPU${e.launch === 'eager' ? `, ${(e.hostIssueUs / 1e3).toFixed(3)} ms to issue` : ''}; step without AllReduce ${(e.stepUs / 1e3).toFixed(3)} ms`,
  ]
  const rows = [
    [
      '(no AllReduce)',
      '',
      '',
      fixed(e.noAllReduce.itlMs, 3),
      fixed(e.noAllReduce.tokensPerSec, 1),
      e.noAllReduce.usdPerMillionTokens === undefined ? '' : fixed(e.noAllReduce.usdPerMillionTokens, 3),
      '',
    ],
    ...e.perAlgorithm.map((a) => [
      a.algorithm,
      fixed(a.allReduceUs, 2),
      fixed(a.commUs / 1e3, 3),
      fixed(a.itlMs, 3),
      fixed(a.tokensPerSec, 1),
      a.usdPerMillionTokens === undefined ? '' : fixed(a.usdPerMillionTokens, 3),
      a.missingTerms.length ? `missing ${a.missingTerms.join('+')}` : '',
    ]),
  ]
  return [
    ...head,
    textTable(['algorithm', 'AR µs', 'comm ms', 'ITL ms', 'tokens/s', '$/M tokens', 'note'], rows),
    ...e.notes.map((n) => `note: ${n}`),
  ].join('\n')
}

export function seedChecksText(checks: SeedCheck[]): string {
  const rows = checks.flatMap((c) =>
    c.figures.map((f) => [
      c.id,
      f.what,
      f.unit === 'fraction' ? percent(f.predicted) : fixed(f.predicted, 2) + ' ' + f.unit,
      f.unit === 'fraction' ? percent(f.claimed) : `${f.claimed} ${f.unit}`,
      percent(f.relError),
    ]),
  )
  const notes = checks.map(
    (c) =>
      `${c.id}: ${c.source}; assumed ${c.assumptions}${c.missingTerms.length ? `; terms absent from the table: ${c.missingTerms.join(', ')}` : ''}`,
  )
  return [
    "# the model against the seeds' claims (error = (predicted − claimed) / claimed)",
    textTable(['claim', 'figure', 'predicted', 'claimed', 'error'], rows),
    ...notes,
  ].join('\n')
}

export function register(program: Command): void {
  program
    .command('model')
    .description('latency model per algorithm, scale simulation to 72 GPUs, calibration, decode cost, seed checks')
    .option('--platform <name>', 'latency platform: gb200, h200, h200-virtual, cpu', 'gb200')
    .option(
      '--algorithms <list>',
      'comma-separated algorithms (default: all in data/latency/algorithms.json); with --calibrate, only their rows',
    )
    .option('--gpus <range>', "GPU counts: '2..72' or '2,4,8'", '2..72')
    .option('--sizes <list>', 'message sizes per rank', '8K,16K,64K,256K,1M')
    .option(
      '--calibrate <files...>',
      'bench JSON files (llcomm bench --json) or folders of them to fit the constants to',
    )
    .option(
      '--fit <params>',
      "with --calibrate: fit only these parameters (comma-separated, as printed after 'fitted:'; 'none' = predict with the table); the others keep the table's values",
    )
    .option('--residuals', 'print every calibration row')
    .option(
      '--block-targets <which>',
      "with --calibrate: the block targets the files ran with, 'model' (the shipped fit's, the default), 'library' (BLOCK_TARGETS: files from the 2026-12-02b sweep on) or 'before-sweep' (files before 5e2560d)",
    )
    .option(
      '--twoshot-allgather <mode>',
      "with --calibrate: twoshot-sentinel's all-gather kernel counted: auto (what the host launches), push (files before the pull kernel) or pull; default the shipped fit's",
    )
    .option(
      '--accumulation <mode>',
      "with --calibrate: f16/bf16 accumulation of ring and twoshot-atomic the files ran with, f32 (the library's default since 42e4626) or dtype (16-bit: files before 42e4626); default the shipped fit's",
    )
    .option(
      '--twoshot-broadcast <mode>',
      "with --calibrate: twoshot-sentinel's spread-path broadcast the files ran, words (each reducing thread's word to every peer: files before 4e5f9c1) or slots (a 16-byte slot a (slot, peer) pair: the kernel since 4e5f9c1); default the shipped fit's (slots)",
    )
    .option(
      '--twoshot-atomic-allgather <mode>',
      "with --calibrate: twoshot-atomic's all-gather the files ran, serial (owner after owner: files before 615ecff) or batched (8 owners with data a poll: the kernel since 615ecff); default the shipped fit's",
    )
    .option(
      '--no-leave-one-out',
      'with --calibrate: skip the leave-one-row-out refits (one fit a row: the slow part on a large grid); the fits holding out a rank count, a size class and a dtype still run',
    )
    .option('--write', 'write calibrated constants back into the platform table')
    .option('--table <path>', 'platform table to read/write', fileURLToPath(PLATFORMS_URL))
    .option('--decode', 'decode cost model instead of the latency table')
    .option('--model <name>', 'llama-3.1-8b, llama-3.1-70b, deepseek-v3, qwen3-235b-a22b', 'llama-3.1-70b')
    .option('--tp <n>', 'tensor-parallel degree', '4')
    .option('--batch <n>', 'sequences per decode step', '1')
    .option('--context <tokens>', 'context length', '4096')
    .option('--gpu <name>', 'h200 or gb200', 'gb200')
    .option('--usd-per-gpu-hour <usd>', 'price of one GPU-hour (user-supplied; no default)')
    .option('--hbm-efficiency <fraction>', "override the GPU table's HBM efficiency (user-supplied)")
    .option('--seed-checks', "the model against the seeds' claims")
    .option('--launch <mode>', 'decode launch term: graph (CUDA-graph replay), eager (host-issued), none', 'graph')
    .option(
      '--validate-decode [file]',
      'decode model vs measured shards (default: the shipped data/models/cuda-h200-decode-shards-2026-11-29.json)',
    )
    .option(
      '--validate-decode-tp [file]',
      'decode model vs real tensor-parallel steps with NCCL AllReduce (default: the shipped data/models/cuda-h200x2-decode-tp2-2026-11-29.json)',
    )
    .option('--json', 'print JSON')
    .action((o: ModelOptions) => {
      const platforms = loadPlatformTable(o.table)
      const algorithms = loadAlgorithmTable()
      const out: Record<string, unknown> = {}
      const text: string[] = []
      const calibrated: Record<string, ParamValues> = {}
      const calibratedNccl: Record<string, NcclConstants> = {}
      if (o.calibrate) {
        const calibrations: unknown[] = []
        // Rows of one platform are pooled over every file given, then fitted once.
        const pooled = new Map<
          string,
          { rows: CalibrationRow[]; files: Set<string>; topology: PlatformTopology; skipped: number }
        >()
        const skippedReasons = new Set<string>()
        const explicit = new Set(o.calibrate)
        const only = o.algorithms ? new Set(o.algorithms.split(',').map((s) => s.trim())) : undefined
        const fitList = o.fit === undefined ? undefined : parseFitList(o.fit)
        const counting = parseCounting(
          o.blockTargets,
          o.twoshotAllgather,
          o.accumulation,
          o.twoshotBroadcast,
          o.twoshotAtomicAllgather,
        )
        if (counting)
          text.push(
            `counted with: block targets ${o.blockTargets ?? 'model'}, twoshot-sentinel all-gather ${counting.allGather ?? MODEL_TWOSHOT_ALLGATHER}, accumulation ${counting.accumulation ?? MODEL_ACCUMULATION}, twoshot-sentinel broadcast ${counting.twoshotBroadcast ?? MODEL_TWOSHOT_BROADCAST}, twoshot-atomic all-gather ${counting.twoshotAtomicAllGather ?? MODEL_TWOSHOT_ATOMIC_ALLGATHER}; each file's own buffer`,
          )
        for (const path of benchFilesFrom(o.calibrate)) {
          // a file named on the command line must be a bench document; in a folder, other documents are skipped
          const file = explicit.has(path) ? readBenchFile(path) : tryReadBenchFile(path)
          if (!file) {
            skippedReasons.add(`${path} is not a bench results document`)
            continue
          }
          const { groups, skipped } = calibrationRowsByPlatform(file, algorithms, counting)
          for (const sk of skipped) skippedReasons.add(sk.reason)
          for (const [name, all] of groups) {
            const rows = only ? all.filter((r) => only.has(r.algorithm)) : all
            if (rows.length === 0) continue
            const sample =
              file.rows.find((r) => r.algorithm === rows[0].algorithm && r.ranks === rows[0].ranks) ?? file.rows[0]
            const entry = pooled.get(name) ?? {
              rows: [],
              files: new Set<string>(),
              topology: rowTopology(file, sample),
              skipped: 0,
            }
            entry.rows.push(...rows)
            entry.files.add(path)
            entry.skipped += skipped.length
            pooled.set(name, entry)
          }
        }
        if (pooled.size === 0) text.push('no usable bench rows to calibrate from')
        for (const [name, entry] of pooled) {
          const files = [...entry.files].join(', ')
          const platform = platformForCalibration(platforms, name, entry.topology)
          const result = calibratePlatform(name, platform, entry.rows, algorithms, {
            ...(fitList && {
              fitOnly: fitList.fitOnly,
              ncclFitOnly: fitList.ncclFitOnly,
              overlapExponents: fitList.overlapExponents,
            }),
            leaveOneOut: o.leaveOneOut !== false,
          })
          calibrated[name] = result.params
          if (result.nccl) calibratedNccl[name] = result.nccl.constants
          calibrations.push({ files: [...entry.files], ...result, skippedRows: entry.skipped })
          text.push(calibrationText(files, result, o.residuals === true))
          if (o.write) {
            platforms.platforms[name] = platform
            applyCalibration(platform, result, files)
          }
        }
        if (skippedReasons.size) text.push(`skipped: ${[...skippedReasons].join('; ')}`)
        if (o.write) {
          writeFileSync(o.table as string, `${JSON.stringify(platforms, null, 2)}\n`)
          text.push(`wrote ${o.table}`)
        }
        out.calibrations = calibrations
      }
      if (o.seedChecks) {
        const checks = runSeedChecks(algorithms, platforms, calibrated)
        out.seedChecks = checks
        text.push(seedChecksText(checks))
      }
      if (o.decode) {
        const model = findModel(loadModelTable(), o.model)
        const tableGpu = findGpu(loadGpuTable(), o.gpu)
        const efficiency =
          o.hbmEfficiency === undefined ? undefined : positiveNumber(o.hbmEfficiency, '--hbm-efficiency')
        if (efficiency !== undefined && efficiency > 1)
          throw new LlcommError('INVALID_ARGUMENT', `--hbm-efficiency is a fraction ≤ 1, got ${efficiency}`)
        const gpu =
          efficiency === undefined
            ? tableGpu
            : { ...tableGpu, hbmEfficiency: { value: efficiency, source: 'user-supplied (--hbm-efficiency)' } }
        const platform = getPlatform(platforms, gpu.latencyPlatform)
        const names = o.algorithms
          ? o.algorithms.split(',').map((s) => s.trim())
          : ['nccl', 'oneshot-barrier', 'oneshot-ll', 'oneshot-sentinel', 'twoshot-sentinel', 'twoshot-atomic']
        const est = estimateDecode(
          {
            model,
            gpu,
            tp: positiveNumber(o.tp, '--tp'),
            batch: positiveNumber(o.batch, '--batch'),
            contextTokens: Number(o.context),
            algorithms: names,
            usdPerGpuHour:
              o.usdPerGpuHour === undefined ? undefined : positiveNumber(o.usdPerGpuHour, '--usd-per-gpu-hour'),
            latencyParams: calibrated[gpu.latencyPlatform],
            launch: parseLaunchMode(o.launch),
          },
          algorithms,
          platform,
        )
        out.decode = est
        text.push(decodeText(est))
      }
      if (o.validateDecode) {
        const v = validateDecodeFile(typeof o.validateDecode === 'string' ? o.validateDecode : undefined)
        out.validateDecode = v.calibration
        text.push(v.text)
      }
      if (o.validateDecodeTp) {
        const v = validateDecodeTpFile(typeof o.validateDecodeTp === 'string' ? o.validateDecodeTp : undefined)
        out.validateDecodeTp = { ...v.validation, file: undefined }
        text.push(v.text)
      }
      // with --calibrate, --algorithms picks the rows to fit; the scale table needs --platform
      if (
        !o.decode &&
        !o.seedChecks &&
        !o.validateDecode &&
        !o.validateDecodeTp &&
        (!o.calibrate || o.platform !== 'gb200')
      ) {
        const platform = withNcclConstants(getPlatform(platforms, o.platform), calibratedNccl[o.platform])
        const names = o.algorithms ? o.algorithms.split(',').map((s) => s.trim()) : Object.keys(algorithms.algorithms)
        const gpus = parseGpuCounts(o.gpus)
        const sizes = parseSizes(o.sizes)
        if (gpus.length === 0 || sizes.some((s) => !Number.isFinite(s)))
          throw new LlcommError('INVALID_ARGUMENT', `bad --gpus ${o.gpus} or --sizes ${o.sizes}`)
        const params = calibrated[o.platform] ?? paramsFromPlatform(platform)
        const rows = simulateScaling(platform, algorithms, names, gpus, sizes, params)
        out.platform = { name: o.platform, ...platform, params }
        out.scale = rows
        text.push(scaleText(rows, `${o.platform} (${platform.description})`))
        text.push(
          ...Object.entries(platform.constants).map(([k, v]) => `constant ${k} = ${v.value ?? 'absent'}: ${v.source}`),
          ...Object.entries(platform.nccl ?? {}).map(
            ([k, v]) => `constant nccl.${k} = ${v.value ?? 'absent'}: ${v.source}`,
          ),
        )
      }
      process.stdout.write(o.json ? `${JSON.stringify(out, null, 2)}\n` : `${text.join('\n\n')}\n`)
    })
}
