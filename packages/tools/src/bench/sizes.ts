/**
 * Message sizes for a sweep: '8,4K,64K' lists and --min/--max ranges (powers of two between, like nccl-tests'
 * -b/-e/-f 2). Sizes are bytes per rank; K, M, G are binary (1K = 1024 bytes).
 */
import type { Dtype } from 'llcomm/internal'
import { DTYPE_BYTES, LlcommError } from 'llcomm/internal'

const UNIT_BYTES: Readonly<Record<string, number>> = {
  '': 1,
  B: 1,
  K: 1024,
  KB: 1024,
  KIB: 1024,
  M: 1 << 20,
  MB: 1 << 20,
  MIB: 1 << 20,
  G: 1 << 30,
  GB: 1 << 30,
  GIB: 1 << 30,
}

/** '4K' → 4096, '16M' → 16777216, '8' → 8. Throws INVALID_ARGUMENT on anything else. */
export function parseSizeBytes(text: string): number {
  const m = /^\s*(\d+)\s*([a-zA-Z]*)\s*$/.exec(text)
  const unit = m ? UNIT_BYTES[m[2].toUpperCase()] : undefined
  if (!m || unit === undefined) {
    throw new LlcommError(
      'INVALID_ARGUMENT',
      `bad size ${JSON.stringify(text)}: expected a byte count like 8, 4K, 64K, 1M`,
      { size: text },
    )
  }
  const bytes = Number(m[1]) * unit
  if (!Number.isSafeInteger(bytes) || bytes <= 0) {
    throw new LlcommError('INVALID_ARGUMENT', `bad size ${JSON.stringify(text)}: must be a positive byte count`, {
      size: text,
    })
  }
  return bytes
}

/** '8,4K,64K' → [8, 4096, 65536], sorted ascending, duplicates removed. */
export function parseSizeList(text: string): number[] {
  const parts = text.split(',').filter((p) => p.trim() !== '')
  if (parts.length === 0) throw new LlcommError('INVALID_ARGUMENT', `empty size list ${JSON.stringify(text)}`)
  return [...new Set(parts.map(parseSizeBytes))].sort((a, b) => a - b)
}

/** Every power of two from minBytes up to maxBytes (both rounded to powers of two within the range). */
export function powersOfTwoBetween(minBytes: number, maxBytes: number): number[] {
  if (minBytes > maxBytes) {
    throw new LlcommError('INVALID_ARGUMENT', `--min (${minBytes} B) is larger than --max (${maxBytes} B)`)
  }
  const sizes: number[] = []
  let bytes = 2 ** Math.ceil(Math.log2(minBytes))
  for (; bytes <= maxBytes; bytes *= 2) sizes.push(bytes)
  if (sizes.length === 0) {
    throw new LlcommError('INVALID_ARGUMENT', `no power of two between ${minBytes} B and ${maxBytes} B`)
  }
  return sizes
}

/** Elements per rank for a byte count; the byte count must be a whole number of elements. */
export function elementCount(bytes: number, dtype: Dtype): number {
  const elementBytes = DTYPE_BYTES[dtype]
  if (bytes % elementBytes !== 0) {
    throw new LlcommError(
      'INVALID_ARGUMENT',
      `size ${bytes} B is not a whole number of ${dtype} elements (${elementBytes} B each)`,
      { bytes, dtype },
    )
  }
  return bytes / elementBytes
}

/** 4096 → '4K', 1536 → '1536', 16777216 → '16M': the short form used in tables and plots. */
export function formatBytes(bytes: number): string {
  for (const [unit, scale] of [
    ['G', 1 << 30],
    ['M', 1 << 20],
    ['K', 1024],
  ] as const) {
    if (bytes >= scale && bytes % scale === 0) return `${bytes / scale}${unit}`
  }
  return String(bytes)
}
