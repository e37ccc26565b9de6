/**
 * checkProtocol: build the program model of one protocol (optionally with a planted bug) for a number of
 * ranks and consecutive AllReduce calls, and explore every interleaving of it.
 */
import { LlcommError } from 'llcomm/internal'
import {
  assertProgramFits,
  type Counterexample,
  type ExploreOptions,
  exploreInterleavings,
} from './interleaving-explorer.js'
import {
  MUTATIONS_BY_MODEL,
  type ProtocolModelName,
  type ProtocolMutation,
  type ProtocolProgram,
} from './protocol-model.js'
import {
  alternatingSequence,
  buildMixedSentinelProgram,
  type CallAlgorithm,
} from './protocols/mixed-sentinel-program.js'
import { buildOneshotProgram } from './protocols/oneshot-program.js'
import { buildTwoshotSentinelProgram } from './protocols/twoshot-sentinel-program.js'
import { MAX_CHUNKS, MAX_LL_EPOCH } from './symbolic-values.js'

export interface CheckProtocolOptions extends ExploreOptions {
  ranks: number
  calls: number
  mutation?: ProtocolMutation
  /** mixed-sentinel only: the algorithm of each call (length = calls); default oneshot, twoshot, oneshot, … */
  sequence?: readonly CallAlgorithm[]
  /** twoshot-sentinel only: per call, how many owners (0..m-1) have a non-empty segment; default all. */
  activeOwners?: readonly number[]
}

export interface ProtocolCheckResult {
  model: ProtocolModelName
  ranks: number
  calls: number
  mutation: ProtocolMutation
  /** Every reachable state explored and no violation found. */
  ok: boolean
  complete: boolean
  statesExplored: number
  transitionsExplored: number
  schedulesCovered: bigint
  schedulesOrTransitions: { transitions: number; schedules: bigint }
  terminalStates: number
  deadlockStates: number
  /** The shortest counterexample found (the first found by the breadth-first search). */
  counterexample?: Counterexample
  /** The shortest counterexample of each kind found. */
  violations: Counterexample[]
  elapsedMs: number
}

export function buildProtocolProgram(
  model: ProtocolModelName,
  ranks: number,
  calls: number,
  mutation: ProtocolMutation,
  shape: { sequence?: readonly CallAlgorithm[]; activeOwners?: readonly number[] } = {},
): ProtocolProgram {
  const sequence = shape.sequence ?? alternatingSequence(calls)
  if (!Number.isInteger(ranks) || ranks < 2)
    throw new LlcommError('INVALID_ARGUMENT', `ranks must be an integer >= 2, got ${ranks}`)
  if (!Number.isInteger(calls) || calls < 1 || calls >= MAX_LL_EPOCH) {
    throw new LlcommError('INVALID_ARGUMENT', `calls must be an integer in 1..${MAX_LL_EPOCH - 1}, got ${calls}`)
  }
  const allowed = MUTATIONS_BY_MODEL[model]
  if (allowed === undefined) throw new LlcommError('INVALID_ARGUMENT', `unknown protocol model '${model}'`)
  if (!allowed.includes(mutation)) {
    throw new LlcommError(
      'INVALID_ARGUMENT',
      `mutation '${mutation}' does not apply to ${model} (allowed: ${allowed.join(', ')})`,
    )
  }
  let program: ProtocolProgram
  switch (model) {
    case 'oneshot-ll':
      program = buildOneshotProgram({ ranks, calls, sync: 'll', mutation })
      break
    case 'oneshot-sentinel':
      program = buildOneshotProgram({ ranks, calls, sync: 'sentinel', mutation })
      break
    case 'twoshot-sentinel':
      if (ranks > MAX_CHUNKS)
        throw new LlcommError('INVALID_ARGUMENT', `twoshot-sentinel model supports at most ${MAX_CHUNKS} ranks`)
      if (shape.activeOwners !== undefined) {
        const owners = shape.activeOwners
        if (owners.length !== calls || !owners.every((m) => Number.isInteger(m) && m >= 1 && m <= ranks)) {
          throw new LlcommError('INVALID_ARGUMENT', `activeOwners needs ${calls} integers in 1..${ranks}`)
        }
      }
      program = buildTwoshotSentinelProgram({ ranks, calls, mutation, activeOwnersPerCall: shape.activeOwners })
      break
    case 'mixed-sentinel':
      if (ranks > MAX_CHUNKS)
        throw new LlcommError('INVALID_ARGUMENT', `mixed-sentinel model supports at most ${MAX_CHUNKS} ranks`)
      if (sequence.length !== calls)
        throw new LlcommError('INVALID_ARGUMENT', `sequence has ${sequence.length} entries for ${calls} calls`)
      program = buildMixedSentinelProgram({ ranks, sequence, mutation })
      break
  }
  assertProgramFits(program)
  return program
}

export function checkProtocol(model: ProtocolModelName, options: CheckProtocolOptions): ProtocolCheckResult {
  const mutation = options.mutation ?? 'none'
  const program = buildProtocolProgram(model, options.ranks, options.calls, mutation, {
    sequence: options.sequence,
    activeOwners: options.activeOwners,
  })
  const r = exploreInterleavings(program, options)
  return {
    model,
    ranks: options.ranks,
    calls: options.calls,
    mutation,
    ok: r.ok,
    complete: r.complete,
    statesExplored: r.statesExplored,
    transitionsExplored: r.transitionsExplored,
    schedulesCovered: r.schedulesCovered,
    schedulesOrTransitions: { transitions: r.transitionsExplored, schedules: r.schedulesCovered },
    terminalStates: r.terminalStates,
    deadlockStates: r.deadlockStates,
    counterexample: r.violations[0],
    violations: r.violations,
    elapsedMs: r.elapsedMs,
  }
}
