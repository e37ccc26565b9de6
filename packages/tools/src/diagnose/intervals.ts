/** Interval arithmetic on [start, end) spans in µs: unions, total length, differences. */
export type Interval = readonly [number, number]

/** Sorted, disjoint union of the intervals (empty ones dropped). */
export function unionIntervals(spans: readonly Interval[]): Interval[] {
  const sorted = spans.filter(([a, b]) => b > a).sort((x, y) => x[0] - y[0])
  const out: [number, number][] = []
  for (const [a, b] of sorted) {
    const last = out[out.length - 1]
    if (last && a <= last[1]) last[1] = Math.max(last[1], b)
    else out.push([a, b])
  }
  return out
}

export function totalLength(disjoint: readonly Interval[]): number {
  return disjoint.reduce((s, [a, b]) => s + (b - a), 0)
}

/** Length of (union of a) minus (union of b): the part of a that b does not cover. */
export function lengthNotCovered(a: readonly Interval[], b: readonly Interval[]): number {
  const ua = unionIntervals(a)
  const ub = unionIntervals(b)
  let covered = 0
  let j = 0
  for (const [s, e] of ua) {
    while (j < ub.length && ub[j][1] <= s) j++
    for (let k = j; k < ub.length && ub[k][0] < e; k++)
      covered += Math.max(0, Math.min(e, ub[k][1]) - Math.max(s, ub[k][0]))
  }
  return totalLength(ua) - covered
}
