/**
 * Statistics of per-iteration times and the bandwidth figures of nccl-tests: algbw = bytes / time,
 * busbw = algbw × 2(n−1)/n for AllReduce (the traffic each rank's link carries in a bandwidth-optimal ring).
 */
import { LlcommError } from 'llcomm/internal'

function sortedCopy(values: readonly number[], what: string): number[] {
  if (values.length === 0) throw new LlcommError('INVALID_ARGUMENT', `cannot take the ${what} of no samples`)
  return [...values].sort((a, b) => a - b)
}

/** Median; the mean of the two middle values for an even count. */
export function median(values: readonly number[]): number {
  const s = sortedCopy(values, 'median')
  const mid = s.length >> 1
  return s.length % 2 === 1 ? s[mid] : (s[mid - 1] + s[mid]) / 2
}

/** Nearest-rank percentile: the smallest sample with at least p% of the samples at or below it. */
export function percentile(values: readonly number[], p: number): number {
  if (!(p > 0 && p <= 100)) throw new LlcommError('INVALID_ARGUMENT', `percentile ${p} is outside (0, 100]`)
  const s = sortedCopy(values, `p${p}`)
  return s[Math.max(0, Math.ceil((p / 100) * s.length) - 1)]
}

/** Algorithm bandwidth in GB/s (10^9 bytes per second) for `bytes` per rank moved in `timeUs`. */
export function algorithmBandwidthGBs(bytes: number, timeUs: number): number {
  return timeUs > 0 ? bytes / timeUs / 1e3 : 0
}

/** AllReduce's bus-bandwidth factor 2(n−1)/n (nccl-tests' all_reduce.cu). */
export function allReduceBusFactor(ranks: number): number {
  return (2 * (ranks - 1)) / ranks
}

/** Bus bandwidth in GB/s: algbw × 2(n−1)/n. */
export function busBandwidthGBs(bytes: number, timeUs: number, ranks: number): number {
  return algorithmBandwidthGBs(bytes, timeUs) * allReduceBusFactor(ranks)
}
