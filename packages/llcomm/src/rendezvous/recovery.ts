/**
 * recover() of a per-process communicator (both backends: src/backends/cpu/process-communicator.ts,
 * src/backends/cuda/process-communicator.ts; docs/protocols.md, "Per process: recover()"). A collective: every rank
 * calls it after a failed call whose ranks are all alive.
 *
 * Order, and why: (1) `drain`: this rank's own work of the failed call ends (on CUDA its launches, whose waits end at
 * their deadline or at the error word; on the CPU nothing is left, the call ran on this thread). (2) A rendezvous
 * barrier: every rank has drained, so no rank's late store can land in a buffer that a peer re-arms next. (3)
 * `rearm`: this rank's own state back to its initial contents (buffers, epochs, error word or poison); no rank
 * touches a peer's. (4) A second barrier: every rank has re-armed before any rank's next call can write into a
 * peer. The barriers carry the recovery's number, which every rank counts alike, so a recovery never meets an
 * earlier one's barrier. A rank whose process is gone cannot take part: PEER_FAILED.
 */
import { LlcommError } from '../errors.js'
import type { Rendezvous } from './tcp-store.js'

export interface ProcessRecovery {
  rv: Rendezvous
  rank: number
  /** Names the barriers (llcomm/BACKEND/recover/N/...). */
  backend: 'cpu' | 'cuda'
  /** This recovery's number on this rank (1, 2, ...): the same on every rank. */
  generation: number
  /** Each barrier's deadline (a peer may still be in its failed call's wait: twice timeoutMs and a margin). */
  limitMs: number
  drain: () => Promise<void>
  rearm: () => void
}

export async function recoverProcessRank(o: ProcessRecovery): Promise<void> {
  const dead = o.rv.deadPeer
  if (dead !== undefined)
    throw new LlcommError('PEER_FAILED', `rank ${o.rank}: peer ${dead} died; recovery needs every rank`, {
      rank: o.rank,
      peer: dead,
    })
  await o.drain()
  await o.rv.barrier(`llcomm/${o.backend}/recover/${o.generation}/ended`, o.limitMs)
  o.rearm()
  await o.rv.barrier(`llcomm/${o.backend}/recover/${o.generation}/re-armed`, o.limitMs)
}
