/**
 * A CPU channel in memory shared between the ranks' processes: rank 0 creates a /dev/shm segment of the channel
 * layout, writes its initial contents and names it through the rendezvous; every other rank maps it; once every
 * rank reports it mapped, rank 0 unlinks the name (so nothing is left in /dev/shm while the ranks run, nor after
 * any of them dies). A segment whose creator was killed between create and unlink is removed by the next rank 0
 * on this host (removeStaleSegments: the creator's pid is in the name).
 *
 * Waits block on a futex over the doorbell word (src/ffi/shared-memory.ts says why Atomics.wait cannot), and
 * check the awaited peer's pid, so that a dead peer is PEER_FAILED rather than a TIMEOUT at the deadline.
 */
import { randomBytes } from 'node:crypto'
import { hostname } from 'node:os'
import { LlcommError } from '../../errors.js'
import {
  futexWait,
  futexWake,
  removeStaleSegments,
  SEGMENT_PREFIX,
  SharedMemorySegment,
} from '../../ffi/shared-memory.js'
import { type ChannelLayout, initializeChannelMemory } from '../../protocol/cpu/layout.js'
import type { DoorbellWaiter } from '../../protocol/cpu/wait.js'
import { processAlive } from '../../rendezvous/process-liveness.js'
import type { Rendezvous } from '../../rendezvous/tcp-store.js'

export interface ProcessChannel {
  readonly segment: SharedMemorySegment
  readonly doorbell: DoorbellWaiter
  /** Liveness of each rank's process (by pid; every rank runs on this host). */
  readonly peerAlive: (peer: number) => boolean
}

interface SegmentOffer {
  host: string
  name?: string
  bytes?: number
}

export async function openProcessChannel(
  rv: Rendezvous,
  layout: ChannelLayout,
  timeoutMs: number,
): Promise<ProcessChannel> {
  let segment: SharedMemorySegment | undefined
  let failure: LlcommError | undefined
  try {
    if (rv.rank === 0) {
      removeStaleSegments(processAlive)
      const name = `/${SEGMENT_PREFIX}${process.pid}-${randomBytes(6).toString('hex')}`
      try {
        segment = SharedMemorySegment.create(name, layout.totalBytes)
        initializeChannelMemory(layout, segment.buffer)
      } catch (e) {
        failure = asLlcommError(e)
      }
    }
    const offers = await rv.allGather<SegmentOffer>(
      'llcomm/cpu/segment',
      rv.rank === 0 && segment ? { host: hostname(), name: segment.name, bytes: segment.bytes } : { host: hostname() },
      timeoutMs,
    )
    const offer = offers[0]
    if (!failure && offers.some((o) => o.host !== offer.host)) {
      failure = new LlcommError('INVALID_ARGUMENT', 'the cpu backend needs every rank on one host (shared memory)', {
        hosts: offers.map((o) => o.host),
      })
    }
    if (!failure && rv.rank !== 0) {
      if (offer.name === undefined || offer.bytes === undefined) {
        failure = new LlcommError('SYSTEM_ERROR', 'rank 0 could not create the shared memory', { rank: rv.rank })
      } else {
        try {
          segment = SharedMemorySegment.open(offer.name, offer.bytes)
        } catch (e) {
          failure = asLlcommError(e)
        }
      }
    }
    const reports = await rv.allGather(
      'llcomm/cpu/mapped',
      failure ? { ok: false, message: failure.message, code: failure.code } : { ok: true },
      timeoutMs,
    )
    segment?.unlink()
    if (failure) throw failure
    const bad = reports.findIndex((r) => !(r as { ok: boolean }).ok)
    if (bad >= 0) {
      const r = reports[bad] as { message: string }
      throw new LlcommError('SYSTEM_ERROR', `rank ${bad} could not map the shared channel: ${r.message}`, {
        rank: rv.rank,
        peer: bad,
      })
    }
  } catch (e) {
    segment?.unlink()
    segment?.unmap()
    throw e
  }
  const seg = segment as SharedMemorySegment
  const pids = rv.pids
  // A peer whose pid this process cannot see (another pid namespace sharing /dev/shm) is never declared dead on
  // liveness grounds: its waits end in TIMEOUT at the deadline instead of a false PEER_FAILED.
  const visible = pids.map((pid, r) => r === rv.rank || processAlive(pid))
  return {
    segment: seg,
    doorbell: {
      // Word `index` of the channel is at segment.address + 4 * index in this process (the mapping starts the
      // channel). futexWait compares the word with `expected` in the kernel after queueing us: no lost wake-up
      // (see RankControl.waitUntil for the SLEEPING / doorbell protocol around it).
      wait: (index, expected, ms) => {
        futexWait(seg.address + 4 * index, expected, ms)
      },
      wake: (index) => {
        futexWake(seg.address + 4 * index)
      },
    },
    peerAlive: (peer) => !visible[peer] || processAlive(pids[peer]),
  }
}

function asLlcommError(e: unknown): LlcommError {
  return e instanceof LlcommError
    ? e
    : new LlcommError('SYSTEM_ERROR', e instanceof Error ? e.message : String(e), {}, { cause: e })
}
