/** A constant of the latency tables with where it came from (latency-tables.ts, nccl-model.ts, decode-tables.ts). */
export interface SourcedValue {
  /** null = absent (not measured): the term is left out and reported as missing. */
  value: number | null
  source: string
  /**
   * Rates only (…GBs), with value null: a fit put 0 µs per byte on this rate (the rows show no limit from it), so
   * the term costs nothing rather than being absent.
   */
  unbounded?: boolean
}
