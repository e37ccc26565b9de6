/**
 * Program model of the double-buffered one-shot AllReduce (oneshot-ll and oneshot-sentinel), one lane:
 * each rank's receive buffer has one slot per (half, sender); call k uses half k % 2 (epoch k + 1).
 *
 * Per call, rank r: bcast its input to every peer's slot [half][r] (peers in rotated order r+1, r+2, …),
 * then recvReduce the peers' slots of its own buffer in rank order (a fixed order, so every rank adds the
 * same terms in the same order), re-arming each sentinel slot right after reading it, then check the
 * result and advance the epoch.
 *
 * Why double buffering is safe here: peer p writes epoch k+2 into half k % 2 of my buffer only after it
 * received my epoch k+1 data, which I send only after my call k finished, including the reads and
 * re-arms of half k % 2. Receiving my epoch-(k+1) data is p's acknowledgement.
 */
import { LlcommError } from 'llcomm/internal'
import type { Instruction, ProtocolMutation, ProtocolProgram } from '../protocol-model.js'
import { EMPTY_VALUE, fullReduction, inputValue, SENTINEL_VALUE } from '../symbolic-values.js'

export interface OneshotProgramOptions {
  ranks: number
  calls: number
  sync: 'll' | 'sentinel'
  mutation: ProtocolMutation
}

export function buildOneshotProgram(o: OneshotProgramOptions): ProtocolProgram {
  const { ranks, calls, sync, mutation } = o
  const model = sync === 'll' ? 'oneshot-ll' : 'oneshot-sentinel'
  const halves = mutation === 'single-buffer' ? 1 : 2
  const cellOf = (owner: number, half: number, sender: number): number => (owner * halves + half) * ranks + sender
  const memoryCells = ranks * halves * ranks
  const cellNames: string[] = []
  const cellOwners: number[] = []
  for (let owner = 0; owner < ranks; owner++) {
    for (let half = 0; half < halves; half++) {
      for (let sender = 0; sender < ranks; sender++) {
        cellNames.push(`r${owner}.buf[h${half}][from r${sender}]`)
        cellOwners.push(owner)
      }
    }
  }
  const initialMemory = new Array<number>(memoryCells).fill(sync === 'll' ? EMPTY_VALUE : SENTINEL_VALUE)
  const ACC = 0
  const programs: Instruction[][] = []
  for (let r = 0; r < ranks; r++) {
    const program: Instruction[] = []
    // rearm-after-ack: re-arms waiting for "my send to peer p in call k" (key `${k}:${p}`).
    const deferredRearms = new Map<string, Instruction[]>()
    const rearmsAtEnd: Instruction[] = []
    for (let k = 0; k < calls; k++) {
      const half = k % halves
      const epoch = k + 1
      const input = inputValue(r, k, ranks)
      for (let i = 1; i < ranks; i++) {
        const peer = (r + i) % ranks
        program.push({
          op: 'store',
          cell: cellOf(peer, half, r),
          source: { kind: 'constant', value: input },
          llEpoch: sync === 'll' ? epoch : 0,
          sendsSentinelBits: mutation === 'uncanonicalized-sentinel-input' && r === 0 && k === 1,
          label: `call ${k}: send to r${peer}`,
        })
        program.push(...(deferredRearms.get(`${k}:${peer}`) ?? []))
      }
      program.push({
        op: 'set-register',
        register: ACC,
        source: { kind: 'constant', value: input },
        label: `call ${k}: acc = own input`,
      })
      for (let peer = 0; peer < ranks; peer++) {
        if (peer === r) continue
        const cell = cellOf(r, half, peer)
        program.push({
          op: 'poll-read',
          cell,
          until:
            sync === 'sentinel'
              ? 'not-sentinel'
              : mutation === 'll-ignore-epoch'
                ? 'll-flag-nonzero'
                : 'll-flag-equals-epoch',
          epoch,
          call: k,
          update: { register: ACC, mode: 'accumulate' },
          label: `call ${k}: recvReduce from r${peer}`,
        })
        if (sync !== 'sentinel' || mutation === 'no-rearm') continue
        // Re-arm right after the read: it must be ordered before my call k+1 send to this peer, whose
        // receipt is what lets the peer write this half again (call k+2). rearm-after-ack moves it past that send.
        const rearm: Instruction = { op: 'rearm', cell, label: `call ${k}: re-arm slot from r${peer}` }
        if (mutation === 'rearm-after-ack') {
          // Peer writes this half again in call k+2, after receiving my call k+1 data: that send is the ack.
          const rearm2: Instruction = { ...rearm, label: `${rearm.label} (deferred past the ack)` }
          if (k + 1 < calls)
            deferredRearms.set(`${k + 1}:${peer}`, [...(deferredRearms.get(`${k + 1}:${peer}`) ?? []), rearm2])
          else rearmsAtEnd.push(rearm2)
        } else {
          program.push(rearm)
        }
      }
      program.push({
        op: 'finish-call',
        call: k,
        expected: [{ register: ACC, value: fullReduction(k, ranks) }],
        label: `call ${k}: check result, advance epoch to ${epoch + 1}`,
      })
    }
    program.push(...rearmsAtEnd)
    programs.push(program)
  }
  if (mutation === 'rearm-after-ack' && halves !== 2) {
    throw new LlcommError('INVALID_ARGUMENT', 'rearm-after-ack is defined for the double-buffered protocol')
  }
  return {
    model,
    mutation,
    ranks,
    calls,
    chunks: 1,
    memoryCells,
    initialMemory,
    cellNames,
    cellOwners,
    registersPerRank: 1,
    registerNames: ['acc'],
    programs,
  }
}
