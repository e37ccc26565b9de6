/**
 * The sol document ({ machine, commit, date, command, primitives, bounds }) and its tables: bounds per algorithm
 * × rank count × size, and, given a bench document, each measured row's ratio to its bound.
 */
import type { AlgorithmName, Backend } from 'llcomm/internal'
import { ALL_ALGORITHMS } from 'llcomm/internal'
import type { BenchDocument, MachineInfo } from '../bench/document.js'
import { formatBytes } from '../bench/sizes.js'
import { formatMicros, formatTable } from '../bench/table.js'
import { hopLatencyUs, type SolBound, type SolPrimitives, solBound } from './model.js'

export interface SolComparison {
  algorithm: AlgorithmName
  ranks: number
  bytes: number
  dtype: string
  measuredUs: number
  boundUs: number
  /** measured / bound: 1 is the speed of light. */
  ratio: number
}

export interface SolDocument {
  machine: MachineInfo
  commit: string
  date: string
  command: string
  /** Where the primitives come from: 'measured' on a backend, or a named constants table entry. */
  source:
    | { backend: Backend; measured: true; devices?: number[] }
    | { measured: false; constants: string; description: string }
  primitives: SolPrimitives & { hopLatencyUs: number; raw?: Record<string, number> }
  bounds: SolBound[]
  comparisons?: SolComparison[]
}

export function boundsFor(p: SolPrimitives, rankCounts: readonly number[], sizesBytes: readonly number[]): SolBound[] {
  const bounds: SolBound[] = []
  for (const algorithm of ALL_ALGORITHMS) {
    for (const ranks of rankCounts) {
      for (const bytes of sizesBytes) {
        const b = solBound(p, algorithm, ranks, bytes)
        if (b) bounds.push(b)
      }
    }
  }
  return bounds
}

/** Each bench row's measured median over its bound (same algorithm, rank count and size). */
export function compareWithBench(p: SolPrimitives, bench: BenchDocument): SolComparison[] {
  const out: SolComparison[] = []
  for (const r of bench.rows) {
    if (r.fallback || r.wrong !== 0) continue
    const b = solBound(p, r.algorithm, r.ranks, r.bytes)
    if (!b) continue
    out.push({
      algorithm: r.algorithm,
      ranks: r.ranks,
      bytes: r.bytes,
      dtype: r.dtype,
      measuredUs: r.medianUs,
      boundUs: b.boundUs,
      ratio: r.medianUs / b.boundUs,
    })
  }
  return out
}

export function withHopLatency(p: SolPrimitives, raw?: Record<string, number>): SolDocument['primitives'] {
  return { ...p, hopLatencyUs: hopLatencyUs(p), ...(raw ? { raw } : {}) }
}

export function formatSolReport(doc: SolDocument): string {
  const p = doc.primitives
  const src = doc.source.measured
    ? `measured on ${doc.source.backend}${doc.source.devices ? ` devices ${doc.source.devices.join(',')}` : ''}`
    : `constants '${doc.source.constants}': ${doc.source.description}`
  const lines = [
    `# llcomm sol  ${doc.date}  commit ${doc.commit.slice(0, 12)}`,
    `# machine ${doc.machine.hostname}: ${doc.machine.cpuModel}, ${doc.machine.cores} cores${doc.machine.gpu ? `, ${doc.machine.gpu}` : ''}`,
    `# primitives ${src}`,
    formatTable(
      ['primitive', 'value'],
      [
        ['L2 round trip (fence)', `${formatMicros(p.l2RoundTripUs)} us`],
        ['remote store', `${formatMicros(p.remoteStoreUs)} us`],
        ['L_SoL = 2 L2 + store', `${formatMicros(p.hopLatencyUs)} us`],
        ['kernel floor', p.kernelFloorUs === undefined ? 'not measured' : `${formatMicros(p.kernelFloorUs)} us`],
        ['copy bandwidth', p.copyBandwidthGBs === undefined ? 'not measured' : `${p.copyBandwidthGBs.toFixed(1)} GB/s`],
      ],
      [false, true],
    ),
    '',
  ]
  const ranks = [...new Set(doc.bounds.map((b) => b.ranks))]
  const groups = new Map<string, SolBound[]>()
  for (const b of doc.bounds) {
    const key = `${b.algorithm}|${b.bytes}`
    groups.set(key, [...(groups.get(key) ?? []), b])
  }
  const cells = [...groups.values()].map((g) => [
    g[0].algorithm,
    formatBytes(g[0].bytes),
    ...ranks.map((n) => {
      const b = g.find((x) => x.ranks === n)
      return b ? `${formatMicros(b.boundUs)} (${b.hops}h)` : '-'
    }),
  ])
  const omitted = [
    p.kernelFloorUs === undefined ? 'kernel floor' : '',
    p.copyBandwidthGBs === undefined ? 'bandwidth term' : '',
  ].filter(Boolean)
  lines.push(
    `# lower bound in us per algorithm and size (Nh = hops on the critical path)${omitted.length ? `; left out (not measured): ${omitted.join(', ')}` : ''}`,
  )
  lines.push(
    formatTable(['algorithm', 'size', ...ranks.map((n) => `${n} ranks`)], cells, [
      false,
      true,
      ...ranks.map(() => true),
    ]),
  )
  if (doc.comparisons && doc.comparisons.length > 0) {
    lines.push('', '# measured / bound (1.00x = speed of light)')
    lines.push(
      formatTable(
        ['algorithm', 'ranks', 'size', 'dtype', 'measured us', 'bound us', 'ratio'],
        doc.comparisons.map((c) => [
          c.algorithm,
          String(c.ranks),
          formatBytes(c.bytes),
          c.dtype,
          formatMicros(c.measuredUs),
          formatMicros(c.boundUs),
          `${c.ratio.toFixed(2)}x`,
        ]),
        [false, true, true, false, true, true, true],
      ),
    )
  }
  return `${lines.join('\n')}\n`
}
