/**
 * Symbolic values for the interleaving checker: a memory cell or a register holds which contributions
 * (rank, call) a value is made of, so the checker can tell exactly what a read or a reduction combined.
 *
 * Bit layout of one Int32 (cells and registers use the same encoding):
 *   bits  0..15  contribution mask: bit (call * ranks + rank) = "rank's input of that call is in this value"
 *   bits 16..17  chunk index (two-shot: which owner's chunk the value belongs to; 0 in one-shot)
 *   bits 18..21  LL flag: the epoch stored in the same single-copy-atomic store as the data (0 = never written)
 *   bit  22      DATA: the cell holds data written by a sender (not the initial zero or the sentinel)
 *   bit  23      SENTINEL: the cell holds the sentinel bit pattern (armed, waiting for data)
 *   bit  24      UNREAD: ghost bit, memory only: data was stored and its reader has not consumed it yet.
 *                Real memory has no such bit; the checker uses it to detect lost writes and stale reads.
 */
export const CONTRIBUTION_BITS = 16
export const MAX_CHUNKS = 4
export const MAX_LL_EPOCH = 15

const MASK_BITS = 0xffff
const CHUNK_SHIFT = 16
const FLAG_SHIFT = 18
const FLAG_BITS = 0xf
export const DATA_BIT = 1 << 22
export const SENTINEL_VALUE = 1 << 23
export const UNREAD_BIT = 1 << 24
/** The initial content of an LL buffer: zero, whose flag (0) matches no epoch (epochs start at 1). */
export const EMPTY_VALUE = 0

export function contributionBit(rank: number, call: number, ranks: number): number {
  return 1 << (call * ranks + rank)
}

/** A rank's input for one call (and one chunk in the two-shot): a data value with one contribution. */
export function inputValue(rank: number, call: number, ranks: number, chunk = 0): number {
  return DATA_BIT | (chunk << CHUNK_SHIFT) | contributionBit(rank, call, ranks)
}

/** The correct result of one call for one chunk: every rank's contribution of that call. */
export function fullReduction(call: number, ranks: number, chunk = 0): number {
  let mask = 0
  for (let r = 0; r < ranks; r++) mask |= contributionBit(r, call, ranks)
  return DATA_BIT | (chunk << CHUNK_SHIFT) | mask
}

export function withLlFlag(value: number, epoch: number): number {
  return (value & ~(FLAG_BITS << FLAG_SHIFT)) | (epoch << FLAG_SHIFT)
}

export const contributionsOf = (v: number): number => v & MASK_BITS
export const chunkOf = (v: number): number => (v >> CHUNK_SHIFT) & 3
export const llFlagOf = (v: number): number => (v >> FLAG_SHIFT) & FLAG_BITS
export const isData = (v: number): boolean => (v & DATA_BIT) !== 0
export const isSentinel = (v: number): boolean => (v & SENTINEL_VALUE) !== 0
export const isUnread = (cell: number): boolean => (cell & UNREAD_BIT) !== 0
/** The value a load returns: the cell without its ghost bit. */
export const loadedValue = (cell: number): number => cell & ~UNREAD_BIT
/** The value without its LL flag: what a reduction adds. */
export const payloadOf = (v: number): number => v & ~(FLAG_BITS << FLAG_SHIFT)

/** Bit set of the calls whose contributions a value contains (bit c = call c). */
export function callsOf(v: number, ranks: number): number {
  const mask = contributionsOf(v)
  let calls = 0
  const perCall = (1 << ranks) - 1
  for (let c = 0; c * ranks < CONTRIBUTION_BITS; c++) if ((mask >> (c * ranks)) & perCall) calls |= 1 << c
  return calls
}

export function countBits(x: number): number {
  let n = 0
  for (let y = x; y !== 0; y &= y - 1) n++
  return n
}

export function lowestBitIndex(x: number): number {
  return x === 0 ? -1 : 31 - Math.clz32(x & -x)
}

/** Human-readable form for traces, e.g. `{r0c1+r2c1} chunk 1 flag 2`, `sentinel`, `empty`. */
export function describeValue(v: number, ranks: number, showChunk = false): string {
  const value = loadedValue(v)
  if (isSentinel(value)) return 'sentinel'
  if (!isData(value)) return llFlagOf(value) === 0 ? 'empty' : `flag ${llFlagOf(value)} without data`
  const parts: string[] = []
  const mask = contributionsOf(value)
  for (let bit = 0; bit < CONTRIBUTION_BITS; bit++) {
    if ((mask >> bit) & 1) parts.push(`r${bit % ranks}c${Math.floor(bit / ranks)}`)
  }
  let text = `{${parts.join('+')}}`
  if (showChunk || chunkOf(value) !== 0) text += ` chunk ${chunkOf(value)}`
  if (llFlagOf(value) !== 0) text += ` flag ${llFlagOf(value)}`
  return text
}
