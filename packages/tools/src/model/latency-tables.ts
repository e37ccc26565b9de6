/**
 * The latency model's data: per-platform constants (data/latency/platforms.json) and per-algorithm critical-path
 * structure (data/latency/algorithms.json). Constants live in tables, formulas in latency-model.ts (STYLE habit 8).
 */
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { LlcommError } from 'llcomm/internal'
import type { KernelShape } from './kernel-counts.js'
import type { SourcedValue } from './sourced-value.js'

export type { SourcedValue } from './sourced-value.js'

import { checkNcclConstantTable, type NcclConstantTable } from './nccl-model.js'

/** Names of the fitted / tabled constants. hopUs, when set, overrides 2 × l2RoundTripUs + remoteStoreUs. */
export const CONSTANT_NAMES = [
  'kernelFloorUs',
  'l2RoundTripUs',
  'remoteStoreUs',
  'hopUs',
  'barrierFixedUs',
  'barrierPerPeerUs',
  'barrierQuadUs',
  'linkGBs',
  'atomicGBs',
  'libraryOverheadUs',
  'nvlsSwitchReduceUs',
  'pollRoundUs',
  'storeRoundUs',
  'ringStepUs',
  'serialRecvUs',
  'rearmUs',
  'atomicLineUs',
  'rearmGBs',
  'spreadWindowUs',
  'stagedReduceUs',
  'halfWordSentinelUs',
  'blockAccessUs',
  'blockGBs',
  'memoryGBs',
  'overlapExponent',
] as const
export type ConstantName = (typeof CONSTANT_NAMES)[number]
/**
 * Constants added after tables were frozen (test/fixtures/model): a table without one reads it as absent (null),
 * so the term is left out of its predictions and they stay those of the form the table was written for.
 */
export const ADDED_CONSTANTS: readonly ConstantName[] = ['blockAccessUs']

export type PlatformTopology = 'nvswitch' | 'virtual' | 'threads'

export interface PlatformConstants {
  description: string
  /** virtual: every rank's traffic shares one GPU, so the bandwidth term uses all ranks' bytes. */
  topology: PlatformTopology
  /** GPUs in one NVLink domain; predictions beyond it are flagged as extrapolations. */
  nvlinkDomainGpus: number
  /**
   * 'kernel': hops, polls and launches counted from llcomm's launch shapes (kernel-counts.ts) for the algorithms
   * with a `kernel` entry; 'seed' (default): seed 000's hop form for every algorithm.
   */
  structure?: 'seed' | 'kernel'
  constants: Record<ConstantName, SourcedValue>
  /**
   * NCCL's cost form (nccl-model.ts): per (algorithm, protocol) candidate a base and a per-step latency, the bus
   * bandwidth, protocol efficiencies and the tree factor. Absent (or any value null): algorithms with
   * `tuner: 'nccl'` keep the seed form on this platform.
   */
  nccl?: NcclConstantTable
}

export type WireShape = 'N-1' | '(N-1)/N' | '1'

export interface AlgorithmStructure {
  /** The table key (set by loadAlgorithmTable). */
  name?: string
  /** The llcomm kernel family this algorithm runs as (absent: no llcomm kernel, seed form only). */
  kernel?: KernelShape
  hopsFixed: number
  hopsPerPeer: number
  barriers: number
  wireCoefficient: number
  wireShape: WireShape
  /** Bytes per GPU that go through remote atomics (red.add), as a multiple of M × shape(N); absent = 0. */
  atomicCoefficient?: number
  libraryOverhead: boolean
  switchReduce?: boolean
  modelOnly?: boolean
  /** 'nccl': priced in NCCL's cost form on platforms with an `nccl` block (the seed form elsewhere). */
  tuner?: 'nccl'
  note: string
}

export interface PlatformTable {
  about?: string
  platforms: Record<string, PlatformConstants>
}
export interface AlgorithmTable {
  about?: string
  algorithms: Record<string, AlgorithmStructure>
}

export const PLATFORMS_URL = new URL('../../../data/latency/platforms.json', import.meta.url)
export const ALGORITHMS_URL = new URL('../../../data/latency/algorithms.json', import.meta.url)

function readJson(url: URL | string): unknown {
  const path = typeof url === 'string' ? url : fileURLToPath(url)
  try {
    return JSON.parse(readFileSync(path, 'utf8'))
  } catch (e) {
    throw new LlcommError('INVALID_ARGUMENT', `cannot read ${path}: ${(e as Error).message}`, { path })
  }
}

export function loadPlatformTable(path?: string): PlatformTable {
  const t = readJson(path ?? PLATFORMS_URL) as PlatformTable
  if (typeof t !== 'object' || t === null || typeof t.platforms !== 'object') {
    throw new LlcommError('INVALID_ARGUMENT', 'platform table has no platforms object', { path })
  }
  for (const [name, p] of Object.entries(t.platforms)) {
    for (const c of ADDED_CONSTANTS)
      if (p.constants && p.constants[c] === undefined)
        p.constants[c] = { value: null, source: 'absent: not in this table (written before the constant existed)' }
    for (const c of CONSTANT_NAMES) {
      const v = p.constants?.[c]
      if (!v || (v.value !== null && !Number.isFinite(v.value)) || typeof v.source !== 'string') {
        throw new LlcommError(
          'INVALID_ARGUMENT',
          `platform ${name}: constant ${c} needs { value: number|null, source }`,
          { platform: name, constant: c },
        )
      }
    }
    if (p.nccl !== undefined) checkNcclConstantTable(name, p.nccl)
  }
  return t
}

export function loadAlgorithmTable(path?: string): AlgorithmTable {
  const t = readJson(path ?? ALGORITHMS_URL) as AlgorithmTable
  if (typeof t !== 'object' || t === null || typeof t.algorithms !== 'object') {
    throw new LlcommError('INVALID_ARGUMENT', 'algorithm table has no algorithms object', { path })
  }
  for (const [name, a] of Object.entries(t.algorithms)) a.name = name
  return t
}

export function getPlatform(table: PlatformTable, name: string): PlatformConstants {
  const p = table.platforms[name]
  if (!p) {
    throw new LlcommError(
      'INVALID_ARGUMENT',
      `unknown platform ${JSON.stringify(name)} (known: ${Object.keys(table.platforms).join(', ')})`,
    )
  }
  return p
}

export function getAlgorithm(table: AlgorithmTable, name: string): AlgorithmStructure {
  const a = table.algorithms[name]
  if (!a) {
    throw new LlcommError(
      'UNSUPPORTED_ALGORITHM',
      `the latency model has no algorithm ${JSON.stringify(name)} (known: ${Object.keys(table.algorithms).join(', ')})`,
    )
  }
  return a
}
