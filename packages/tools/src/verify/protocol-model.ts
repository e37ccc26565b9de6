/**
 * The program model the interleaving checker explores: each rank is a straight-line program of atomic
 * steps over shared memory (store a slot, poll a slot until a condition holds and read it, re-arm a slot)
 * plus rank-local steps (initialise a register, check a call's result and advance the epoch).
 * Every step advances its rank's program counter by exactly one; a poll whose condition does not hold
 * is simply not enabled, so a state where no rank can step and some rank has not finished is a deadlock.
 */

/** mixed-sentinel: consecutive calls alternate (or follow a given sequence) between the two sentinel algorithms. */
export type ProtocolModelName = 'oneshot-ll' | 'oneshot-sentinel' | 'twoshot-sentinel' | 'mixed-sentinel'

/**
 * Planted bugs (and one finding to confirm): each switches one detail of a correct protocol.
 * - single-buffer: one buffer instead of two halves alternating by epoch parity.
 * - rearm-after-ack: the sentinel re-arm of a slot is placed after the rank's send that lets the writer
 *   write that slot again (the acknowledgement) instead of right after the read.
 * - no-rearm: the sentinel slot is never re-armed.
 * - ll-ignore-epoch: the LL reader accepts any written flag instead of flag == current epoch.
 * - uncanonicalized-sentinel-input: a user value whose bits equal the sentinel is sent as is (rank 0's
 *   input of call 1) instead of being canonicalized to the standard quiet NaN.
 */
export type ProtocolMutation =
  | 'none'
  | 'single-buffer'
  | 'rearm-after-ack'
  | 'no-rearm'
  | 'll-ignore-epoch'
  | 'uncanonicalized-sentinel-input'

export const PROTOCOL_MODELS: readonly ProtocolModelName[] = [
  'oneshot-ll',
  'oneshot-sentinel',
  'twoshot-sentinel',
  'mixed-sentinel',
]

/** Which mutations make sense for which model (an LL buffer has no re-arm, a sentinel slot no flag). */
export const MUTATIONS_BY_MODEL: Readonly<Record<ProtocolModelName, readonly ProtocolMutation[]>> = {
  'oneshot-ll': ['none', 'single-buffer', 'll-ignore-epoch'],
  'oneshot-sentinel': ['none', 'single-buffer', 'rearm-after-ack', 'no-rearm', 'uncanonicalized-sentinel-input'],
  'twoshot-sentinel': ['none', 'single-buffer', 'rearm-after-ack', 'no-rearm', 'uncanonicalized-sentinel-input'],
  'mixed-sentinel': ['none', 'single-buffer', 'no-rearm'],
}

export type ViolationKind = 'stale-read' | 'lost-write' | 'mixed-epoch' | 'wrong-result' | 'deadlock'

/** When a poll is satisfied. */
export type PollCondition =
  | 'll-flag-equals-epoch' // LL: the flag stored with the data equals the reader's epoch
  | 'll-flag-nonzero' // mutated LL reader: any written packet
  | 'not-sentinel' // sentinel: the bits differ from the sentinel pattern

export type Instruction =
  | {
      op: 'store'
      /** Index of the memory cell (a slot in some rank's receive buffer). */
      cell: number
      /** Constant value (an input) or the content of one of the rank's registers. */
      source: { kind: 'constant'; value: number } | { kind: 'register'; register: number }
      /** LL: the epoch written in the same store as the data; 0 for sentinel slots. */
      llEpoch: number
      /** Mutation only: the user's bits equal the sentinel and the sender did not canonicalize them. */
      sendsSentinelBits?: boolean
      label: string
    }
  | { op: 'rearm'; cell: number; label: string }
  | {
      op: 'poll-read'
      cell: number
      until: PollCondition
      /** The reader's current epoch (call + 1), what an LL flag must equal. */
      epoch: number
      /** The reader's current call: reading a value of an older call is a stale read. */
      call: number
      /** accumulate: register += value (a reduction); assign: register = value (all-gather). */
      update: { register: number; mode: 'accumulate' | 'assign' }
      label: string
    }
  | {
      op: 'set-register'
      register: number
      source: { kind: 'constant'; value: number } | { kind: 'register'; register: number }
      label: string
    }
  | {
      op: 'finish-call'
      call: number
      /** The registers that make up the call's output, and the value each must hold. */
      expected: readonly { register: number; value: number }[]
      label: string
    }

/** One instance of a protocol, ready for the explorer. */
export interface ProtocolProgram {
  model: ProtocolModelName
  mutation: ProtocolMutation
  ranks: number
  calls: number
  /** Chunks the message is split into (two-shot: one per owner; one-shot: 1). */
  chunks: number
  /** Number of shared memory cells (all ranks' receive buffers, flattened). */
  memoryCells: number
  initialMemory: readonly number[]
  cellNames: readonly string[]
  /** The owner (reader) of each cell. */
  cellOwners: readonly number[]
  registersPerRank: number
  registerNames: readonly string[]
  programs: readonly (readonly Instruction[])[]
}

export function isLocalInstruction(instruction: Instruction): boolean {
  return instruction.op === 'set-register' || instruction.op === 'finish-call'
}
