/** Plain-text tables for the model and diagnose reports: right-aligned numbers, left-aligned text. */
export function textTable(header: string[], rows: (string | number)[][]): string {
  const cells = [header, ...rows.map((r) => r.map(String))]
  const widths = header.map((_, j) => Math.max(...cells.map((r) => (r[j] ?? '').length)))
  const numeric = header.map(
    (_, j) =>
      rows.length > 0 &&
      rows.every((r) => typeof r[j] === 'number' || /^[-+]?[\d.]+(e[-+]?\d+)?%?$/.test(String(r[j]))),
  )
  const line = (r: string[]) =>
    r
      .map((c, j) => (numeric[j] ? c.padStart(widths[j]) : c.padEnd(widths[j])))
      .join('  ')
      .trimEnd()
  return [line(cells[0]), widths.map((w) => '-'.repeat(w)).join('  '), ...cells.slice(1).map(line)].join('\n')
}

export function fixed(v: number, digits: number): string {
  return Number.isFinite(v) ? v.toFixed(digits) : String(v)
}

export function percent(v: number, digits = 1): string {
  return `${(v * 100).toFixed(digits)}%`
}

export function formatBytes(bytes: number): string {
  if (bytes >= 1024 ** 3 && bytes % 1024 ** 3 === 0) return `${bytes / 1024 ** 3}G`
  if (bytes >= 1024 ** 2 && bytes % 1024 ** 2 === 0) return `${bytes / 1024 ** 2}M`
  if (bytes >= 1024 && bytes % 1024 === 0) return `${bytes / 1024}K`
  return String(bytes)
}
