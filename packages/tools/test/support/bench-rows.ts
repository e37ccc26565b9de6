import type { BenchRow } from '../../src/bench/document.js'

/** A bench row for table, plot and tune tests: cpu, 4 ranks, f32, p99 = median unless `extra` says otherwise. */
export function benchRow(
  algorithm: BenchRow['algorithm'],
  bytes: number,
  medianUs: number,
  extra: Partial<BenchRow> = {},
): BenchRow {
  return {
    backend: 'cpu',
    ranks: 4,
    algorithm,
    requestedAlgorithm: algorithm,
    fallback: false,
    dtype: 'f32',
    bytes,
    medianUs,
    p99Us: medianUs,
    algbwGBs: 0,
    busbwGBs: 0,
    wrong: 0,
    iters: 1,
    warmup: 0,
    ...extra,
  }
}
