/**
 * Algorithm metadata (docs/design.md §3), as data: the synchronization each one uses, the message range it is meant for,
 * and the backends that implement it. `auto` picks among these through the tuning table (auto.ts).
 */
import type { AlgorithmName, Backend } from '../api/types.js'

export interface AlgorithmMetadata {
  name: AlgorithmName
  /** Synchronization mechanism (docs/design.md §2). */
  sync: string
  /** Intended message range in bytes per rank (a hint for `auto` and for docs, not a limit). */
  messageBytes: { min: number; max: number }
  barrierFree: boolean
  backends: readonly Backend[]
  note: string
}

export const ALGORITHM_REGISTRY: readonly AlgorithmMetadata[] = [
  {
    name: 'oneshot-ll',
    sync: 'LL8/LL16 + double buffer',
    messageBytes: { min: 0, max: 16 * 1024 },
    barrierFree: true,
    backends: ['cpu', 'cuda'],
    note: 'each rank bcasts its input; each rank recvReduces all',
  },
  {
    name: 'oneshot-sentinel',
    sync: 'sentinel + double buffer',
    messageBytes: { min: 0, max: 64 * 1024 },
    barrierFree: true,
    backends: ['cpu', 'cuda'],
    note: 'full payload efficiency',
  },
  {
    name: 'twoshot-sentinel',
    sync: 'sentinel + double buffer',
    messageBytes: { min: 64 * 1024, max: 1024 * 1024 },
    barrierFree: true,
    backends: ['cpu', 'cuda'],
    note: 'reduce-scatter to owners, then all-gather',
  },
  {
    name: 'twoshot-atomic',
    sync: 'LL128 atomic lines',
    messageBytes: { min: 0, max: 1024 * 1024 },
    barrierFree: true,
    backends: ['cpu', 'cuda'],
    note: 'atomic reduce-scatter with counters, then all-gather',
  },
  {
    name: 'oneshot-barrier',
    sync: 'two global barriers per call',
    messageBytes: { min: 0, max: Number.MAX_SAFE_INTEGER },
    barrierFree: false,
    backends: ['cpu', 'cuda'],
    note: 'baseline: the classic custom all-reduce design',
  },
  {
    name: 'ring',
    sync: 'flags, 2(N-1) steps',
    messageBytes: { min: 0, max: Number.MAX_SAFE_INTEGER },
    barrierFree: false,
    backends: ['cpu', 'cuda'],
    note: 'baseline: NCCL-style ring; the cpu fallback',
  },
  {
    name: 'nccl',
    sync: 'NCCL',
    messageBytes: { min: 0, max: Number.MAX_SAFE_INTEGER },
    barrierFree: false,
    backends: ['cuda'],
    note: 'baseline and the cuda fallback',
  },
  {
    name: 'nccl-symmetric',
    sync: 'NCCL symmetric kernels',
    messageBytes: { min: 0, max: Number.MAX_SAFE_INTEGER },
    barrierFree: false,
    backends: ['cuda'],
    note: 'the strongest baseline (NCCL >= 2.27, registered windows)',
  },
]

/** Algorithm names a backend implements, in registry order. */
export function algorithmsForBackend(backend: Backend): AlgorithmName[] {
  return ALGORITHM_REGISTRY.filter((a) => a.backends.includes(backend)).map((a) => a.name)
}

export function algorithmMetadata(name: AlgorithmName): AlgorithmMetadata | undefined {
  return ALGORITHM_REGISTRY.find((a) => a.name === name)
}
