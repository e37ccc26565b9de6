/**
 * Structural counts of one llcomm AllReduce call, from the same launch-shape rules the CUDA backend uses
 * (src/backends/cuda/kernel-table.ts: launchShape, selectKernel; no GPU needed), so the latency model follows the
 * kernels when their shapes change. Each count multiplies one fitted constant of the latency model (a per-event
 * cost in µs), which keeps the model linear for the NNLS fit.
 *
 * Per launch (the host chunks a call into launches of at most maxCountPerCall elements), on the critical path of
 * the largest channel piece, with 512 threads per block and one slot per thread per round:
 *   slots        = ceil(piece bytes / payload bytes per slot)      (LL8 4 B, LL16 8 B, sentinel and plain 16 B)
 *   rounds       = ceil(slots / T)                                (T = threads per block, B = RECV_BATCH)
 *   one-shot     pollRounds  = rounds × ceil((N−1) / RECV_BATCH)  (recvReduce polls peers RECV_BATCH at a time,
 *                                                                  batches one after another)
 *                storeRounds = rounds × (N−1)                    (each slot is stored to every peer)
 *                rearms      = rounds × (N−1) for the sentinel protocol (the reader re-arms every slot it read)
 *   two-shot     part = piece / N per owner (16 B aligned; K = owners with data, K' = min(N−1, K)),
 *                r = ceil(part slots / T): pollRounds = r·ceil((N−1)/B) (owner's recvReduce),
 *                storeRounds = r·K' (to owners) + r·(N−1) (reduced part to every peer),
 *                serialRecvs = r·K' (all-gather: one owner after another), rearms = r·(N−1) + r·K' (sentinel)
 *                twoshot-atomic: atomicLineRounds = ceil(part lines / warps per block) × K (red.add to each owner
 *                with data, one warp per 128-byte line); rearmBytes = bytes of sentinel slots re-armed (bandwidth side)
 *   ring         ringSteps   = 2(N−1) dependent steps × ceil(step slots / T)
 *   barrier      barriers    = 2 global barriers; pollRounds = ceil(slots / T) (one read of each peer's input)
 */
import type { Dtype } from '../api/types.js'
import { DTYPE_BYTES } from '../api/types.js'
import { LLCOMM_LINE_DATA_WORDS } from '../backends/cuda/abi.js'
import {
  DEFAULT_BUFFER_BYTES,
  type KernelProtocol,
  launchShape,
  pieceElems,
  selectKernel,
} from '../backends/cuda/kernel-table.js'
import { LlcommError } from '../errors.js'

/** The kernel family whose structure an algorithm follows (data/latency/algorithms.json `kernel`). */
export type KernelShape = 'oneshot' | 'twoshot' | 'ring' | 'barrier'

/** Peers recvReduce polls together (kernels/llcomm/ll_buffer.cuh LLCOMM_RECV_BATCH). */
export const RECV_BATCH = 8

/** Payload bytes one thread moves per slot, by protocol (docs/kernels.md packet layouts). */
export const SLOT_PAYLOAD_BYTES: Readonly<Record<KernelProtocol, number>> = {
  ll8: 4,
  ll16: 8,
  sentinel: 16,
  // twoshot-atomic: its all-gather runs LL8 packets, the longer of its two phases in slots
  ll128: 4,
  flags: 16,
  barrier: 16,
}

export interface KernelCounts {
  launches: number
  pollRounds: number
  storeRounds: number
  /** Single-peer receives done one after another by one thread (two-shot all-gather). */
  serialRecvs: number
  /** Sentinel re-arms: a local store of the sentinel after each slot read (sentinel protocol only). */
  rearms: number
  /** twoshot-atomic's reduce-scatter: per warp, rounds of LL128 lines × N red.add line sends (one per owner). */
  atomicLineRounds: number
  /** Bytes this rank re-arms (sentinel slots it read), for the bandwidth side of the re-arm. */
  rearmBytes: number
  ringSteps: number
  barriers: number
}

const ZERO: KernelCounts = {
  launches: 0,
  pollRounds: 0,
  storeRounds: 0,
  serialRecvs: 0,
  rearms: 0,
  atomicLineRounds: 0,
  rearmBytes: 0,
  ringSteps: 0,
  barriers: 0,
}

function add(a: KernelCounts, b: KernelCounts, times: number): KernelCounts {
  return {
    launches: a.launches + times * b.launches,
    pollRounds: a.pollRounds + times * b.pollRounds,
    storeRounds: a.storeRounds + times * b.storeRounds,
    serialRecvs: a.serialRecvs + times * b.serialRecvs,
    rearms: a.rearms + times * b.rearms,
    atomicLineRounds: a.atomicLineRounds + times * b.atomicLineRounds,
    rearmBytes: a.rearmBytes + times * b.rearmBytes,
    ringSteps: a.ringSteps + times * b.ringSteps,
    barriers: a.barriers + times * b.barriers,
  }
}

/** Counts of one launch of `count` elements per rank. */
function launchCounts(
  shape: KernelShape,
  variant: ReturnType<typeof selectKernel>,
  ranks: number,
  count: number,
  bufferBytes: number,
): KernelCounts {
  const eb = DTYPE_BYTES[variant.dtype]
  const ls = launchShape(variant, ranks, count, bufferBytes)
  const threads = ls.threadsPerBlock
  const pieceBytes = pieceElems(count, ls.blocksPerRank, 16 / eb) * eb
  const payload = SLOT_PAYLOAD_BYTES[variant.protocol]
  const slots = Math.ceil(pieceBytes / payload)
  const peers = ranks - 1
  const batches = Math.ceil(peers / RECV_BATCH)
  const rounds = (s: number) => Math.ceil(s / threads)
  const sentinel = variant.protocol === 'sentinel'
  const none = { ...ZERO, launches: 1 }
  const blockBytes = count * eb // this rank's bytes in this launch, all channels
  switch (shape) {
    case 'oneshot': {
      const r = rounds(slots)
      return {
        ...none,
        pollRounds: r * batches,
        storeRounds: r * peers,
        rearms: sentinel ? r * peers : 0,
        rearmBytes: sentinel ? peers * blockBytes : 0,
      }
    }
    case 'twoshot': {
      // parts of the piece per owner, 16-byte aligned: small messages leave some owners without data
      const partBytes = Math.ceil(pieceBytes / ranks / 16) * 16
      const ownersWithData = Math.min(ranks, Math.ceil(pieceBytes / partBytes))
      const r = rounds(Math.ceil(partBytes / payload))
      const otherOwners = Math.min(peers, ownersWithData)
      return {
        ...none,
        // reduce-scatter: send my slots of every other owner's part; the owner polls its part like a one-shot
        // then broadcasts the reduced part to every peer; all-gather: receive each other owner's part in turn
        pollRounds: r * batches,
        storeRounds: r * otherOwners + r * peers,
        serialRecvs: r * otherOwners,
        rearms: sentinel ? r * peers + r * otherOwners : 0,
        rearmBytes: sentinel ? (2 * peers * blockBytes) / ranks : 0,
        atomicLineRounds:
          variant.protocol === 'll128'
            ? Math.ceil(Math.ceil(partBytes / (LLCOMM_LINE_DATA_WORDS * 4)) / (threads / 32)) * ownersWithData
            : 0,
      }
    }
    case 'ring': {
      const stepSlots = Math.ceil((Math.ceil(pieceBytes / ranks / 16) * 16) / payload)
      return { ...none, ringSteps: 2 * peers * rounds(stepSlots) }
    }
    case 'barrier':
      return { ...none, pollRounds: rounds(slots), barriers: 2 }
  }
}

/**
 * Counts of one call of `bytes` per rank: full launches of maxCountPerCall elements, then the remainder.
 * A call of 0 bytes is counted as one launch of one element (the kernel still runs its handshake).
 */
export function kernelCounts(
  algorithm: string,
  shape: KernelShape,
  ranks: number,
  bytes: number,
  dtype: Dtype = 'bf16',
  bufferBytes: number = DEFAULT_BUFFER_BYTES,
): KernelCounts {
  if (!Number.isInteger(ranks) || ranks < 2)
    throw new LlcommError('INVALID_ARGUMENT', `ranks must be an integer ≥ 2, got ${ranks}`)
  // the name comes from the model's table; selectKernel rejects one without a kernel
  const variant = selectKernel(algorithm as Parameters<typeof selectKernel>[0], dtype, 'sum')
  const count = Math.max(1, Math.ceil(bytes / DTYPE_BYTES[dtype]))
  const maxCount = launchShape(variant, ranks, 1, bufferBytes).maxCountPerCall
  const full = Math.floor(count / maxCount)
  const rest = count - full * maxCount
  let total = ZERO
  if (full > 0) total = add(total, launchCounts(shape, variant, ranks, maxCount, bufferBytes), full)
  if (rest > 0) total = add(total, launchCounts(shape, variant, ranks, rest, bufferBytes), 1)
  return total
}
