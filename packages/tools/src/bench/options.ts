/**
 * Parsing of the sweep flags shared by `llcomm bench` and `llcomm tune` (lists of algorithms, dtypes, devices,
 * rank counts). Every bad value is an LlcommError('INVALID_ARGUMENT' | 'UNSUPPORTED_ALGORITHM') naming the flag.
 */
import type { AlgorithmChoice, Communicator, Dtype } from 'llcomm/internal'
import { ALL_ALGORITHMS, DTYPES, LlcommError } from 'llcomm/internal'
import { parseSizeBytes, parseSizeList, powersOfTwoBetween } from './sizes.js'

function listItems(text: string, flag: string): string[] {
  const items = text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
  if (items.length === 0) throw new LlcommError('INVALID_ARGUMENT', `${flag} needs at least one value`)
  return items
}

/** A whole number ≥ min from a flag's text. */
export function parseWholeNumber(text: string, flag: string, min: number): number {
  const value = /^\s*\d+\s*$/.test(text) ? Number(text) : Number.NaN
  if (!Number.isSafeInteger(value) || value < min)
    throw new LlcommError('INVALID_ARGUMENT', `${flag} must be a whole number ≥ ${min}, got ${JSON.stringify(text)}`)
  return value
}

export function parseNonNegativeNumber(text: string, flag: string): number {
  const value = Number(text)
  if (text.trim() === '' || !Number.isFinite(value) || value < 0)
    throw new LlcommError('INVALID_ARGUMENT', `${flag} must be a number ≥ 0, got ${JSON.stringify(text)}`)
  return value
}

export function parseRanks(text: string): number {
  const ranks = /^\s*-?\d+\s*$/.test(text) ? Number(text) : Number.NaN
  if (!Number.isSafeInteger(ranks) || ranks < 2)
    throw new LlcommError(
      'INVALID_ARGUMENT',
      `--ranks must be a whole number ≥ 2 (a collective needs two ranks), got ${JSON.stringify(text)}`,
    )
  return ranks
}

export function parseRankCounts(text: string): number[] {
  return [...new Set(listItems(text, '--ranks').map(parseRanks))].sort((a, b) => a - b)
}

/** '0,1,2,3' → [0,1,2,3]; '0,0,0,0' gives four virtual ranks on GPU 0. */
export function parseDevices(text: string): number[] {
  const devices = listItems(text, '--devices').map((d) => parseWholeNumber(d, '--devices', 0))
  if (devices.length < 2)
    throw new LlcommError(
      'INVALID_ARGUMENT',
      `--devices needs at least two entries (repeat an index for virtual ranks, e.g. 0,0), got ${JSON.stringify(text)}`,
    )
  return devices
}

export function parseDtypes(text: string): Dtype[] {
  return [
    ...new Set(
      listItems(text, '--dtype').map((d) => {
        if (!DTYPES.includes(d as Dtype))
          throw new LlcommError(
            'UNSUPPORTED_DTYPE',
            `unknown dtype ${JSON.stringify(d)}: expected one of ${DTYPES.join(', ')}`,
          )
        return d as Dtype
      }),
    ),
  ]
}

/**
 * '--algorithms a,b' checked against the names llcomm knows; 'all' keeps every name (auto included, to see what
 * it picks). `undefined` means the default: every algorithm of the communicator except auto.
 */
export function parseAlgorithms(text: string | undefined): AlgorithmChoice[] | 'all' | undefined {
  if (text === undefined) return undefined
  const items = listItems(text, '--algorithms')
  if (items.length === 1 && items[0] === 'all') return 'all'
  const known: readonly string[] = [...ALL_ALGORITHMS, 'auto']
  for (const a of items) {
    if (!known.includes(a))
      throw new LlcommError(
        'UNSUPPORTED_ALGORITHM',
        `unknown algorithm ${JSON.stringify(a)}: expected one of ${known.join(', ')} or all`,
      )
  }
  return [...new Set(items)] as AlgorithmChoice[]
}

/** The algorithms to run on this communicator; a requested name it cannot run is an error listing what it can. */
export function algorithmsFor(
  comm: Pick<Communicator, 'algorithms' | 'backend' | 'size'>,
  requested: AlgorithmChoice[] | 'all' | undefined,
): AlgorithmChoice[] {
  if (requested === 'all') return [...comm.algorithms]
  if (requested === undefined) return comm.algorithms.filter((a) => a !== 'auto')
  const missing = requested.filter((a) => !comm.algorithms.includes(a))
  if (missing.length > 0) {
    throw new LlcommError(
      'UNSUPPORTED_ALGORITHM',
      `${missing.join(', ')} not available on the ${comm.backend} backend with ${comm.size} ranks; available: ${comm.algorithms.join(', ')}`,
    )
  }
  return requested
}

export function parsePdl(text: string | undefined): (boolean | undefined)[] {
  switch (text) {
    case undefined:
      return [undefined]
    case 'on':
      return [true]
    case 'off':
      return [false]
    case 'both':
      return [false, true]
    default:
      throw new LlcommError('INVALID_ARGUMENT', `--pdl must be on, off or both, got ${JSON.stringify(text)}`)
  }
}

/** --sizes wins over --min/--max; otherwise powers of two from --min to --max (defaults given per backend). */
export function resolveSizes(
  sizes: string | undefined,
  min: string | undefined,
  max: string | undefined,
  defaults: { min: number; max: number },
): number[] {
  if (sizes !== undefined) {
    if (min !== undefined || max !== undefined)
      throw new LlcommError('INVALID_ARGUMENT', 'give either --sizes or --min/--max, not both')
    return parseSizeList(sizes)
  }
  return powersOfTwoBetween(
    min !== undefined ? parseSizeBytes(min) : defaults.min,
    max !== undefined ? parseSizeBytes(max) : defaults.max,
  )
}
