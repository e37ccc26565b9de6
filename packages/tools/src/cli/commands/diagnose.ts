/**
 * `llcomm diagnose TRACE`: collectives and their sizes, gaps between kernels, communication on the critical
 * path, the bottleneck class (seed 003's table) and the step time with llcomm's latencies.
 */
import { writeFileSync } from 'node:fs'
import type { Command } from 'commander'
import { LlcommError } from 'llcomm/internal'
import { analyzeTrace } from '../../diagnose/analyze.js'
import { classify } from '../../diagnose/classify.js'
import { analyzeAcrossRanks, type CrossRankAnalysis } from '../../diagnose/cross-rank.js'
import { readTraceFile } from '../../diagnose/read-trace.js'
import { diagnoseHtml } from '../../diagnose/report-html.js'
import { diagnoseText } from '../../diagnose/report-text.js'
import { benchLatencySource, type LatencySource, modelLatencySource, whatIf } from '../../diagnose/what-if.js'
import { type BenchFile, readBenchFile } from '../../model/bench-results.js'
import { loadAlgorithmTable, loadPlatformTable } from '../../model/latency-tables.js'

interface DiagnoseOptions {
  json?: boolean
  html?: string
  bench?: string[]
  platform?: string
  ranks?: string
  step?: string
  collectiveBytes?: string
}

export function register(program: Command): void {
  program
    .command('diagnose')
    .description('find collectives, gaps and communication on the critical path in a PyTorch-profiler / Chrome trace')
    .argument(
      '<traces...>',
      'trace JSON (.json or .json.gz): PyTorch profiler, Chrome trace, or llcomm format; several = one per rank of one run, in rank order (the first is reported, all are lined up across ranks)',
    )
    .option('--json', 'print { totalUs, busyUs, commUs, commShare, collectives, classification, whatIf }')
    .option('--html <file>', 'write a self-contained HTML page with a timeline and plots')
    .option(
      '--bench <files...>',
      'llcomm bench JSON files with measured latencies (none by default: then --platform prices with the model)',
    )
    .option(
      '--platform <name>',
      'without bench results: price AllReduces with the latency model of this platform (gb200, h200, …)',
    )
    .option('--step <regex>', 'annotation names that mark one step (default ^ProfilerStep#\\d+$)')
    .option('--ranks <n>', "rank count to price the AllReduces at (default: the trace's process-group size)")
    .option(
      '--collective-bytes <n>',
      'bytes per rank of the collectives the trace gives no size (e.g. NCCL kernels replayed from a CUDA graph, found by name)',
    )
    .action((paths: string[], o: DiagnoseOptions) => {
      const path = paths[0]
      const traces = paths.map(readTraceFile)
      const trace = traces[0]
      const analysis = analyzeTrace(trace, { stepPattern: o.step })
      const acrossRanks: CrossRankAnalysis | undefined = traces.length > 1 ? analyzeAcrossRanks(traces) : undefined
      if (o.collectiveBytes !== undefined) {
        const bytes = Number(o.collectiveBytes)
        if (!Number.isInteger(bytes) || bytes < 1)
          throw new LlcommError('INVALID_ARGUMENT', `--collective-bytes needs an integer ≥ 1, got ${o.collectiveBytes}`)
        // the size the user states for every collective the trace left unsized (noted in the report)
        for (const c of [...analysis.collectives, ...(acrossRanks?.collectives ?? [])])
          if (c.bytes === null) c.bytes = bytes
        analysis.notes.push(`collectives without a size in the trace taken as ${bytes} B per rank (--collective-bytes)`)
      }
      const classification = classify(analysis, acrossRanks)
      // files named with --bench must be bench documents (no default: the package ships no measurements to read)
      const files = (o.bench ?? []).map(readBenchFile).filter((f): f is BenchFile => f.rows.length > 0)
      let source: LatencySource | undefined
      if (files.length > 0) source = benchLatencySource(files)
      else if (o.platform) source = modelLatencySource(loadAlgorithmTable(), loadPlatformTable(), o.platform)
      let ranks: number | undefined
      if (o.ranks !== undefined) {
        ranks = Number(o.ranks)
        if (!Number.isInteger(ranks) || ranks < 2)
          throw new LlcommError('INVALID_ARGUMENT', `--ranks needs an integer ≥ 2, got ${o.ranks}`)
      }
      const prediction = whatIf(analysis, source, ranks, acrossRanks)
      const text = diagnoseText(path, analysis, classification, prediction, acrossRanks)
      // with one trace per rank, the page's timelines show every rank's streams on the shared clock
      const shown =
        traces.length > 1
          ? {
              ...trace,
              activities: traces.flatMap((t, r) =>
                t.activities.map((a) => ({ ...a, stream: `rank ${r} ${a.stream}` })),
              ),
            }
          : trace
      if (o.html) writeFileSync(o.html, diagnoseHtml(path, shown, analysis, classification, prediction, text))
      if (o.json) {
        const { totalUs, busyUs, commUs, commShare, collectives } = analysis
        const out = {
          totalUs,
          busyUs,
          commUs,
          commShare,
          collectives: collectives.map(({ name, count, bytes, totalUs: t, meanUs, cpuOnly, groupSize, dtype }) => ({
            name,
            count,
            bytes,
            totalUs: t,
            meanUs,
            cpuOnly,
            groupSize,
            dtype,
          })),
          classification,
          whatIf: prediction,
          acrossRanks,
          exposedCommUs: analysis.exposedCommUs,
          idleUs: analysis.idleUs,
          steps: analysis.steps,
          streams: analysis.streams,
          notes: analysis.notes,
        }
        process.stdout.write(`${JSON.stringify(out, null, 2)}\n`)
      } else {
        process.stdout.write(`${text}\n${o.html ? `\nwrote ${o.html}\n` : ''}`)
      }
    })
}
