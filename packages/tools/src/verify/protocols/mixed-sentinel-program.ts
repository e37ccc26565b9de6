/**
 * Program model of consecutive calls that switch between oneshot-sentinel and twoshot-sentinel on the same
 * buffer (what `auto` does when message sizes change between calls). One lane: each rank's buffer has, per
 * (half, sender), slot A (one-shot data, or two-shot reduce-scatter data) and slot B (two-shot all-gather
 * data), as in the CPU layout where both algorithms index the same per-peer region. Call k uses half k % 2.
 *
 * Why switching is safe: whichever algorithm ran call k-1, every rank hears in it from every other rank
 * something sent after that rank finished call k-2 (one-shot: its data; two-shot: its reduce-scatter data to
 * me as owner, or, as owner, its all-gather data), so a write into half k % 2 in call k never overtakes the
 * reads and re-arms of call k-2, whatever algorithm used the slot then.
 */
import type { Instruction, ProtocolMutation, ProtocolProgram } from '../protocol-model.js'
import { fullReduction, inputValue, SENTINEL_VALUE } from '../symbolic-values.js'

export type CallAlgorithm = 'oneshot' | 'twoshot'

export interface MixedProgramOptions {
  ranks: number
  sequence: readonly CallAlgorithm[]
  mutation: ProtocolMutation
}

/** Default: alternate, starting with the one-shot. */
export function alternatingSequence(calls: number): CallAlgorithm[] {
  return Array.from({ length: calls }, (_, k) => (k % 2 === 0 ? 'oneshot' : 'twoshot'))
}

export function buildMixedSentinelProgram(o: MixedProgramOptions): ProtocolProgram {
  const { ranks, sequence, mutation } = o
  const calls = sequence.length
  const halves = mutation === 'single-buffer' ? 1 : 2
  const cellOf = (owner: number, half: number, sender: number, slot: 'A' | 'B'): number =>
    ((owner * halves + half) * ranks + sender) * 2 + (slot === 'A' ? 0 : 1)
  const memoryCells = ranks * halves * ranks * 2
  const cellNames: string[] = []
  const cellOwners: number[] = []
  for (let owner = 0; owner < ranks; owner++) {
    for (let half = 0; half < halves; half++) {
      for (let sender = 0; sender < ranks; sender++) {
        for (const slot of ['A', 'B']) {
          cellNames.push(`r${owner}.${slot}[h${half}][from r${sender}]`)
          cellOwners.push(owner)
        }
      }
    }
  }
  const ACC = 0
  const OUT = (chunk: number): number => 1 + chunk
  const programs: Instruction[][] = []
  for (let r = 0; r < ranks; r++) {
    const program: Instruction[] = []
    // Re-arm right after each read: it precedes, in program order, every later send of this rank, and the
    // writer writes the slot again only after receiving one of those sends (see the file comment).
    const readAndRearm = (
      cell: number,
      k: number,
      update: { register: number; mode: 'accumulate' | 'assign' },
      label: string,
    ): void => {
      program.push({ op: 'poll-read', cell, until: 'not-sentinel', epoch: k + 1, call: k, update, label })
      if (mutation !== 'no-rearm') program.push({ op: 'rearm', cell, label: `${label}: re-arm` })
    }
    for (let k = 0; k < calls; k++) {
      const half = k % halves
      if (sequence[k] === 'oneshot') {
        const input = inputValue(r, k, ranks)
        for (let i = 1; i < ranks; i++) {
          const peer = (r + i) % ranks
          program.push({
            op: 'store',
            cell: cellOf(peer, half, r, 'A'),
            source: { kind: 'constant', value: input },
            llEpoch: 0,
            label: `call ${k} (oneshot): send to r${peer}`,
          })
        }
        program.push({
          op: 'set-register',
          register: ACC,
          source: { kind: 'constant', value: input },
          label: `call ${k}: acc = own input`,
        })
        for (let peer = 0; peer < ranks; peer++) {
          if (peer !== r)
            readAndRearm(
              cellOf(r, half, peer, 'A'),
              k,
              { register: ACC, mode: 'accumulate' },
              `call ${k} (oneshot): recvReduce from r${peer}`,
            )
        }
        program.push({
          op: 'finish-call',
          call: k,
          expected: [{ register: ACC, value: fullReduction(k, ranks) }],
          label: `call ${k}: check result, advance epoch`,
        })
        continue
      }
      for (let i = 1; i < ranks; i++) {
        const peer = (r + i) % ranks
        program.push({
          op: 'store',
          cell: cellOf(peer, half, r, 'A'),
          source: { kind: 'constant', value: inputValue(r, k, ranks, peer) },
          llEpoch: 0,
          label: `call ${k} (twoshot): reduce-scatter send chunk ${peer} to r${peer}`,
        })
      }
      program.push({
        op: 'set-register',
        register: ACC,
        source: { kind: 'constant', value: inputValue(r, k, ranks, r) },
        label: `call ${k}: acc = own chunk ${r}`,
      })
      for (let peer = 0; peer < ranks; peer++) {
        if (peer !== r)
          readAndRearm(
            cellOf(r, half, peer, 'A'),
            k,
            { register: ACC, mode: 'accumulate' },
            `call ${k} (twoshot): reduce chunk ${r}: recv from r${peer}`,
          )
      }
      program.push({
        op: 'set-register',
        register: OUT(r),
        source: { kind: 'register', register: ACC },
        label: `call ${k}: out[${r}] = acc`,
      })
      for (let i = 1; i < ranks; i++) {
        const peer = (r + i) % ranks
        program.push({
          op: 'store',
          cell: cellOf(peer, half, r, 'B'),
          source: { kind: 'register', register: ACC },
          llEpoch: 0,
          label: `call ${k} (twoshot): all-gather send reduced chunk ${r} to r${peer}`,
        })
      }
      for (let peer = 0; peer < ranks; peer++) {
        if (peer !== r)
          readAndRearm(
            cellOf(r, half, peer, 'B'),
            k,
            { register: OUT(peer), mode: 'assign' },
            `call ${k} (twoshot): all-gather recv chunk ${peer}`,
          )
      }
      program.push({
        op: 'finish-call',
        call: k,
        expected: Array.from({ length: ranks }, (_, c) => ({ register: OUT(c), value: fullReduction(k, ranks, c) })),
        label: `call ${k}: check result, advance epoch`,
      })
    }
    programs.push(program)
  }
  return {
    model: 'mixed-sentinel',
    mutation,
    ranks,
    calls,
    chunks: ranks,
    memoryCells,
    initialMemory: new Array<number>(memoryCells).fill(SENTINEL_VALUE),
    cellNames,
    cellOwners,
    registersPerRank: 1 + ranks,
    registerNames: ['acc', ...Array.from({ length: ranks }, (_, c) => `out[${c}]`)],
    programs,
  }
}
