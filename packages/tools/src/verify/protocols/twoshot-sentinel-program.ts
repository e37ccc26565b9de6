/**
 * Program model of the double-buffered two-shot sentinel AllReduce, one lane per chunk: the message is
 * split into `ranks` chunks and rank c owns chunk c. Each rank's receive buffer has a reduce-scatter
 * region RS[half][sender] and an all-gather region AG[half][owner]; call k uses half k % 2.
 *
 * Per call, rank r:
 *   1. reduce-scatter: send its input's chunk p to owner p's RS[half][r] (peers in rotated order);
 *   2. reduce its own chunk: acc = own chunk r, then recv RS[half][p] for p in rank order, acc += it,
 *      re-arming each slot right after reading it;
 *   3. all-gather: send acc (the reduced chunk r) to every peer's AG[half][r];
 *   4. recv AG[half][p] for p in rank order into out[p] (out[r] = acc), re-arming each slot;
 *   5. check out[0..ranks-1] and advance the epoch.
 *
 * Acknowledgements: owner p writes AG half h again (call k+2) only after it received my RS data of call
 * k+2, sent after my call k+1, hence after my call k reads and re-arms; sender p writes RS half h again
 * (call k+2) only after it received my AG data of call k+1, sent after my RS reads of call k+1.
 */
import type { Instruction, ProtocolMutation, ProtocolProgram } from '../protocol-model.js'
import { fullReduction, inputValue, SENTINEL_VALUE } from '../symbolic-values.js'

export interface TwoshotProgramOptions {
  ranks: number
  calls: number
  mutation: ProtocolMutation
  /**
   * Per call, how many owners (0..m-1) have a non-empty segment; default all. The CPU two-shot splits a chunk of
   * n words into ceil(n/ranks)-word segments, so with n < ranks the last owners get none and exchange nothing.
   */
  activeOwnersPerCall?: readonly number[]
}

export function buildTwoshotSentinelProgram(o: TwoshotProgramOptions): ProtocolProgram {
  const { ranks, calls, mutation } = o
  const activeOwners = (k: number): number => o.activeOwnersPerCall?.[k] ?? ranks
  const halves = mutation === 'single-buffer' ? 1 : 2
  const regionCells = halves * ranks
  const rsCell = (owner: number, half: number, sender: number): number =>
    owner * 2 * regionCells + half * ranks + sender
  const agCell = (reader: number, half: number, owner: number): number =>
    reader * 2 * regionCells + regionCells + half * ranks + owner
  const memoryCells = ranks * 2 * regionCells
  const cellNames: string[] = []
  const cellOwners: number[] = []
  for (let owner = 0; owner < ranks; owner++) {
    for (const region of ['RS', 'AG']) {
      for (let half = 0; half < halves; half++) {
        for (let peer = 0; peer < ranks; peer++) {
          cellNames.push(`r${owner}.${region}[h${half}][${region === 'RS' ? 'from' : 'chunk of'} r${peer}]`)
          cellOwners.push(owner)
        }
      }
    }
  }
  const initialMemory = new Array<number>(memoryCells).fill(SENTINEL_VALUE)
  const ACC = 0
  const OUT = (chunk: number): number => 1 + chunk
  const registerNames = ['acc', ...Array.from({ length: ranks }, (_, c) => `out[${c}]`)]
  const programs: Instruction[][] = []
  for (let r = 0; r < ranks; r++) {
    const program: Instruction[] = []
    // rearm-after-ack: re-arms placed after "my send to peer p in call k, phase RS|AG" (key `${k}:${phase}:${p}`).
    const deferredRearms = new Map<string, Instruction[]>()
    const rearmsAtEnd: Instruction[] = []
    const defer = (key: string, call: number, rearm: Instruction): void => {
      const late: Instruction = { ...rearm, label: `${rearm.label} (deferred past the ack)` }
      if (call < calls) deferredRearms.set(key, [...(deferredRearms.get(key) ?? []), late])
      else rearmsAtEnd.push(late)
    }
    const afterRead = (rearm: Instruction, ackCall: number, ackPhase: 'RS' | 'AG', peer: number): void => {
      if (mutation === 'no-rearm') return
      if (mutation === 'rearm-after-ack') defer(`${ackCall}:${ackPhase}:${peer}`, ackCall, rearm)
      else program.push(rearm)
    }
    const takeDeferred = (key: string): Instruction[] => {
      const list = deferredRearms.get(key) ?? []
      deferredRearms.delete(key)
      return list
    }
    for (let k = 0; k < calls; k++) {
      const half = k % halves
      const epoch = k + 1
      const owners = activeOwners(k)
      const owning = r < owners
      for (let i = 1; i < ranks; i++) {
        const peer = (r + i) % ranks
        if (peer >= owners) continue
        program.push({
          op: 'store',
          cell: rsCell(peer, half, r),
          source: { kind: 'constant', value: inputValue(r, k, ranks, peer) },
          llEpoch: 0,
          sendsSentinelBits: mutation === 'uncanonicalized-sentinel-input' && r === 0 && k === 1,
          label: `call ${k}: reduce-scatter send chunk ${peer} to r${peer}`,
        })
        program.push(...takeDeferred(`${k}:RS:${peer}`))
      }
      if (owning) {
        program.push({
          op: 'set-register',
          register: ACC,
          source: { kind: 'constant', value: inputValue(r, k, ranks, r) },
          label: `call ${k}: acc = own chunk ${r}`,
        })
      }
      for (let peer = 0; peer < ranks; peer++) {
        if (peer === r || !owning) continue
        const cell = rsCell(r, half, peer)
        program.push({
          op: 'poll-read',
          cell,
          until: 'not-sentinel',
          epoch,
          call: k,
          update: { register: ACC, mode: 'accumulate' },
          label: `call ${k}: reduce chunk ${r}: recv from r${peer}`,
        })
        // The sender writes this RS half again in call k+2, after reading my AG data of call k+1.
        afterRead({ op: 'rearm', cell, label: `call ${k}: re-arm RS slot from r${peer}` }, k + 1, 'AG', peer)
      }
      if (owning) {
        program.push({
          op: 'set-register',
          register: OUT(r),
          source: { kind: 'register', register: ACC },
          label: `call ${k}: out[${r}] = acc`,
        })
      }
      for (let i = 1; i < ranks; i++) {
        const peer = (r + i) % ranks
        if (!owning) continue
        program.push({
          op: 'store',
          cell: agCell(peer, half, r),
          source: { kind: 'register', register: ACC },
          llEpoch: 0,
          label: `call ${k}: all-gather send reduced chunk ${r} to r${peer}`,
        })
        program.push(...takeDeferred(`${k}:AG:${peer}`))
      }
      for (let peer = 0; peer < ranks; peer++) {
        if (peer === r || peer >= owners) continue
        const cell = agCell(r, half, peer)
        program.push({
          op: 'poll-read',
          cell,
          until: 'not-sentinel',
          epoch,
          call: k,
          update: { register: OUT(peer), mode: 'assign' },
          label: `call ${k}: all-gather recv chunk ${peer} from r${peer}`,
        })
        // The owner writes this AG half again in call k+2, after reading my RS data of call k+2.
        afterRead({ op: 'rearm', cell, label: `call ${k}: re-arm AG slot of r${peer}` }, k + 2, 'RS', peer)
      }
      program.push({
        op: 'finish-call',
        call: k,
        expected: Array.from({ length: owners }, (_, c) => ({ register: OUT(c), value: fullReduction(k, ranks, c) })),
        label: `call ${k}: check result, advance epoch to ${epoch + 1}`,
      })
    }
    // Deferred re-arms whose acknowledging send never happened (an owner without a segment) go last.
    for (const list of deferredRearms.values()) rearmsAtEnd.push(...list)
    program.push(...rearmsAtEnd)
    programs.push(program)
  }
  return {
    model: 'twoshot-sentinel',
    mutation,
    ranks,
    calls,
    chunks: ranks,
    memoryCells,
    initialMemory,
    cellNames,
    cellOwners,
    registersPerRank: 1 + ranks,
    registerNames,
    programs,
  }
}
