/**
 * Explores every interleaving of a ProtocolProgram's ranks over sequentially consistent shared memory and
 * reports stale reads, lost writes, mixed-epoch reductions, wrong results and deadlocks.
 *
 * Search: breadth-first over global states (program counters + registers + memory), memoized. Every step
 * advances exactly one program counter by one, so the state graph is acyclic and layered by the sum of the
 * program counters: a state can only be found again within the same layer, so only two layers of keys are
 * kept. Breadth-first order makes every counterexample a shortest one. Schedules (maximal paths from the
 * initial state) are counted exactly, layer by layer.
 *
 * Partial-order reduction (optional, on by default): a rank-local step (set a register, check a result)
 * commutes with every other step and cannot be disabled, so when one is enabled it is the only step
 * explored from that state (an ample set of size one; the cycle proviso holds because the graph is acyclic).
 * This preserves every reachable combination of shared memory and ranks' shared-memory progress, hence
 * every violation and deadlock.
 */
import { LlcommError } from 'llcomm/internal'
import type { Instruction, ProtocolProgram, ViolationKind } from './protocol-model.js'
import { isLocalInstruction } from './protocol-model.js'
import {
  callsOf,
  chunkOf,
  contributionsOf,
  countBits,
  describeValue,
  isData,
  isSentinel,
  isUnread,
  llFlagOf,
  loadedValue,
  lowestBitIndex,
  payloadOf,
  SENTINEL_VALUE,
  UNREAD_BIT,
  withLlFlag,
} from './symbolic-values.js'

export interface ExploreOptions {
  /** Explore only one rank-local step where one is enabled (sound; see the file comment). Default true. */
  partialOrder?: boolean
  /** Stop after this many states and report complete: false. Default 20 million. */
  maxStates?: number
  /** Stop at the first violation instead of exploring on to find the other kinds (complete is then false). Default false. */
  stopOnFirstViolation?: boolean
}

export interface Counterexample {
  kind: ViolationKind
  message: string
  /** One line per step, from the initial state to the violation: `#n rK <step> <what it saw>`. */
  trace: string[]
}

export interface ExploreResult {
  /** True when every reachable state was explored. */
  complete: boolean
  /** complete and no violation of any kind. */
  ok: boolean
  statesExplored: number
  transitionsExplored: number
  /** Number of distinct maximal schedules of the explored (reduced) state graph. */
  schedulesCovered: bigint
  terminalStates: number
  deadlockStates: number
  /** The first (shortest) counterexample of each kind found, in the order found. */
  violations: Counterexample[]
  elapsedMs: number
}

interface Violation {
  kind: ViolationKind
  message: string
}

interface StepOutcome {
  next: Int32Array
  violations: Violation[]
  detail: string
}

interface LayerEntry {
  state: Int32Array
  id: number
  schedules: bigint
}

/** Layout helpers over one global state: [pc per rank | registers per rank | memory cells]. */
class StateLayout {
  readonly registersOffset: number
  readonly memoryOffset: number
  readonly width: number
  constructor(readonly program: ProtocolProgram) {
    this.registersOffset = program.ranks
    this.memoryOffset = program.ranks + program.ranks * program.registersPerRank
    this.width = this.memoryOffset + program.memoryCells
  }
  initial(): Int32Array {
    const s = new Int32Array(this.width)
    for (let c = 0; c < this.program.memoryCells; c++) s[this.memoryOffset + c] = this.program.initialMemory[c]
    return s
  }
  register(rank: number, register: number): number {
    return this.registersOffset + rank * this.program.registersPerRank + register
  }
  cell(cell: number): number {
    return this.memoryOffset + cell
  }
}

function stateKey(s: Int32Array): string {
  return Buffer.from(s.buffer, s.byteOffset, s.byteLength).toString('latin1')
}

function pollSatisfied(instruction: Instruction & { op: 'poll-read' }, cell: number): boolean {
  const value = loadedValue(cell)
  switch (instruction.until) {
    case 'll-flag-equals-epoch':
      return llFlagOf(value) === instruction.epoch
    case 'll-flag-nonzero':
      return llFlagOf(value) !== 0
    case 'not-sentinel':
      // Bitwise compare against the sentinel pattern (a float compare could equate FTZ-flushed values).
      return value !== SENTINEL_VALUE
  }
}

function isEnabled(layout: StateLayout, s: Int32Array, rank: number): boolean {
  const program = layout.program.programs[rank]
  const pc = s[rank]
  if (pc >= program.length) return false
  const instruction = program[pc]
  if (instruction.op !== 'poll-read') return true
  return pollSatisfied(instruction, s[layout.cell(instruction.cell)])
}

function describeCalls(calls: number): string {
  const list: number[] = []
  for (let c = 0; c < 31; c++) if ((calls >> c) & 1) list.push(c)
  return list.join(', ')
}

function applyStep(layout: StateLayout, s: Int32Array, rank: number): StepOutcome {
  const p = layout.program
  const ranks = p.ranks
  const showChunks = p.chunks > 1
  const instruction = p.programs[rank][s[rank]]
  const next = s.slice()
  next[rank] = s[rank] + 1
  const violations: Violation[] = []
  let detail = ''
  const sourceValue = (source: { kind: 'constant'; value: number } | { kind: 'register'; register: number }): number =>
    source.kind === 'constant' ? source.value : s[layout.register(rank, source.register)]
  switch (instruction.op) {
    case 'store': {
      const at = layout.cell(instruction.cell)
      const old = s[at]
      let value = sourceValue(instruction.source)
      if (instruction.llEpoch !== 0) value = withLlFlag(value, instruction.llEpoch)
      // The ghost UNREAD bit travels with the real bits: with the mutation the reader cannot see them.
      next[at] = (instruction.sendsSentinelBits ? SENTINEL_VALUE : value) | UNREAD_BIT
      detail = `${p.cellNames[instruction.cell]} := ${instruction.sendsSentinelBits ? 'sentinel bits (uncanonicalized user value)' : describeValue(value, ranks, showChunks)}`
      if (isUnread(old)) {
        violations.push({
          kind: 'lost-write',
          message: `r${rank} overwrote ${p.cellNames[instruction.cell]} holding ${describeValue(old, ranks, showChunks)} before r${p.cellOwners[instruction.cell]} read it`,
        })
      }
      break
    }
    case 'rearm': {
      const at = layout.cell(instruction.cell)
      const old = s[at]
      next[at] = SENTINEL_VALUE
      detail = `${p.cellNames[instruction.cell]} := sentinel (was ${describeValue(old, ranks, showChunks)})`
      if (isUnread(old)) {
        violations.push({
          kind: 'lost-write',
          message: `r${rank}'s re-arm of ${p.cellNames[instruction.cell]} wiped ${describeValue(old, ranks, showChunks)} before it was read`,
        })
      }
      break
    }
    case 'poll-read': {
      const at = layout.cell(instruction.cell)
      const cell = s[at]
      const value = loadedValue(cell)
      next[at] = value // consumed: clear the ghost UNREAD bit
      detail = `${p.cellNames[instruction.cell]} -> ${describeValue(value, ranks, showChunks)}`
      const where = `r${rank} call ${instruction.call} read ${p.cellNames[instruction.cell]}`
      const valueCalls = callsOf(value, ranks)
      if (!isUnread(cell) || !isData(value)) {
        violations.push({
          kind: 'stale-read',
          message: `${where}: ${describeValue(value, ranks, showChunks)} was already consumed or never written`,
        })
      } else if (valueCalls !== 0 && lowestBitIndex(valueCalls) < instruction.call) {
        violations.push({ kind: 'stale-read', message: `${where}: got data of call ${describeCalls(valueCalls)}` })
      }
      const reg = layout.register(rank, instruction.update.register)
      const payload = isData(value) && !isSentinel(value) ? payloadOf(value) : 0
      if (instruction.update.mode === 'assign') {
        next[reg] = payload
      } else {
        const acc = s[reg]
        if (payload !== 0 && chunkOf(acc) !== chunkOf(payload)) {
          violations.push({
            kind: 'wrong-result',
            message: `${where}: reduced chunk ${chunkOf(payload)} into chunk ${chunkOf(acc)}`,
          })
        }
        if ((contributionsOf(acc) & contributionsOf(payload)) !== 0) {
          violations.push({ kind: 'wrong-result', message: `${where}: a contribution was added twice` })
        }
        const sum = acc | payload
        next[reg] = sum
        const sumCalls = callsOf(sum, ranks)
        if (countBits(sumCalls) > 1) {
          violations.push({
            kind: 'mixed-epoch',
            message: `${where}: the reduction now combines data of calls ${describeCalls(sumCalls)}: ${describeValue(sum, ranks, showChunks)}`,
          })
        }
      }
      break
    }
    case 'set-register': {
      const value = sourceValue(instruction.source)
      next[layout.register(rank, instruction.register)] = value
      detail = `${p.registerNames[instruction.register]} = ${describeValue(value, ranks, showChunks)}`
      break
    }
    case 'finish-call': {
      let calls = 0
      const wrong: string[] = []
      for (const { register, value } of instruction.expected) {
        const got = s[layout.register(rank, register)]
        calls |= callsOf(got, ranks)
        if (got !== value)
          wrong.push(
            `${p.registerNames[register]} = ${describeValue(got, ranks, showChunks)}, expected ${describeValue(value, ranks, showChunks)}`,
          )
      }
      detail = wrong.length === 0 ? 'result correct' : wrong.join('; ')
      if (countBits(calls) > 1) {
        violations.push({
          kind: 'mixed-epoch',
          message: `r${rank} call ${instruction.call} result combines data of calls ${describeCalls(calls)}`,
        })
      }
      if (wrong.length > 0)
        violations.push({ kind: 'wrong-result', message: `r${rank} call ${instruction.call}: ${wrong.join('; ')}` })
      // Registers are dead after the check: clearing them merges states that differ only in dead values.
      for (let r = 0; r < p.registersPerRank; r++) next[layout.register(rank, r)] = 0
      break
    }
  }
  return { next, violations, detail }
}

/** One-step semantics of a program, for reference searches in tests and for replaying traces. */
export interface ProgramInterpreter {
  initial(): Int32Array
  isEnabled(state: Int32Array, rank: number): boolean
  isFinished(state: Int32Array, rank: number): boolean
  step(state: Int32Array, rank: number): { next: Int32Array; violations: { kind: ViolationKind; message: string }[] }
  /** True when a cell still holds data its reader has not consumed. */
  hasUnreadData(state: Int32Array): boolean
}

export function createInterpreter(program: ProtocolProgram): ProgramInterpreter {
  const layout = new StateLayout(program)
  return {
    initial: () => layout.initial(),
    isEnabled: (s, rank) => isEnabled(layout, s, rank),
    isFinished: (s, rank) => s[rank] >= program.programs[rank].length,
    step: (s, rank) => applyStep(layout, s, rank),
    hasUnreadData: (s) => {
      for (let c = 0; c < program.memoryCells; c++) if (isUnread(s[layout.cell(c)])) return true
      return false
    },
  }
}

function describeDeadlock(layout: StateLayout, s: Int32Array): string {
  const p = layout.program
  const showChunks = p.chunks > 1
  const waits: string[] = []
  for (let rank = 0; rank < p.ranks; rank++) {
    const program = p.programs[rank]
    const pc = s[rank]
    if (pc >= program.length) {
      waits.push(`r${rank} finished`)
      continue
    }
    const instruction = program[pc]
    if (instruction.op === 'poll-read') {
      const cell = s[layout.cell(instruction.cell)]
      waits.push(
        `r${rank} (${instruction.label}) polls ${p.cellNames[instruction.cell]} = ${describeValue(cell, p.ranks, showChunks)}`,
      )
    }
  }
  return `no rank can step: ${waits.join('; ')}`
}

/** Explores every schedule of `program`; see the file comment. */
export function exploreInterleavings(program: ProtocolProgram, options: ExploreOptions = {}): ExploreResult {
  const partialOrder = options.partialOrder ?? true
  const maxStates = options.maxStates ?? 20_000_000
  const stopOnFirstViolation = options.stopOnFirstViolation ?? false
  const started = performance.now()
  const layout = new StateLayout(program)
  const ranks = program.ranks
  const showChunks = program.chunks > 1
  // Parent links for rebuilding traces: state id -> (parent id, rank that stepped).
  const parentOf: number[] = [-1]
  const rankOf: number[] = [-1]
  const found = new Map<ViolationKind, Counterexample>()
  let statesExplored = 1
  let transitions = 0
  let schedules = 0n
  let terminalStates = 0
  let deadlockStates = 0
  let complete = true

  const traceTo = (id: number, extraRank: number): string[] => {
    const ranksPath: number[] = []
    if (extraRank >= 0) ranksPath.push(extraRank)
    for (let at = id; parentOf[at] >= 0; at = parentOf[at]) ranksPath.push(rankOf[at])
    ranksPath.reverse()
    let s = layout.initial()
    return ranksPath.map((rank, i) => {
      const instruction = program.programs[rank][s[rank]]
      const outcome = applyStep(layout, s, rank)
      s = outcome.next
      const flagged = outcome.violations.map((v) => `  <-- ${v.kind}: ${v.message}`).join('')
      return `#${i + 1} r${rank} ${instruction.label}: ${outcome.detail}${flagged}`
    })
  }
  const record = (kind: ViolationKind, message: string, id: number, extraRank: number): void => {
    if (found.has(kind)) return
    found.set(kind, { kind, message, trace: traceTo(id, extraRank) })
  }

  let layer: LayerEntry[] = [{ state: layout.initial(), id: 0, schedules: 1n }]
  search: while (layer.length > 0) {
    const nextLayer = new Map<string, LayerEntry>()
    for (const entry of layer) {
      const s = entry.state
      let steppers: number[] = []
      let allDone = true
      for (let rank = 0; rank < ranks; rank++) {
        const rankProgram = program.programs[rank]
        if (s[rank] < rankProgram.length) allDone = false
        if (!isEnabled(layout, s, rank)) continue
        if (partialOrder && isLocalInstruction(rankProgram[s[rank]])) {
          steppers = [rank]
          break
        }
        steppers.push(rank)
      }
      if (steppers.length === 0) {
        schedules += entry.schedules
        if (allDone) {
          terminalStates++
          for (let c = 0; c < program.memoryCells; c++) {
            if (isUnread(s[layout.cell(c)])) {
              record(
                'lost-write',
                `${program.cellNames[c]} still holds unread ${describeValue(s[layout.cell(c)], ranks, showChunks)} after every rank finished`,
                entry.id,
                -1,
              )
              break
            }
          }
        } else {
          deadlockStates++
          record('deadlock', describeDeadlock(layout, s), entry.id, -1)
        }
        if (stopOnFirstViolation && found.size > 0) break search
        continue
      }
      for (const rank of steppers) {
        const outcome = applyStep(layout, s, rank)
        transitions++
        for (const v of outcome.violations) record(v.kind, v.message, entry.id, rank)
        if (stopOnFirstViolation && found.size > 0) break search
        const key = stateKey(outcome.next)
        const known = nextLayer.get(key)
        if (known !== undefined) {
          known.schedules += entry.schedules
          continue
        }
        if (statesExplored >= maxStates) {
          complete = false
          break search
        }
        const id = statesExplored++
        parentOf.push(entry.id)
        rankOf.push(rank)
        nextLayer.set(key, { state: outcome.next, id, schedules: entry.schedules })
      }
    }
    layer = [...nextLayer.values()]
  }
  if (stopOnFirstViolation && found.size > 0) complete = false
  const violations = [...found.values()]
  return {
    complete,
    ok: complete && violations.length === 0,
    statesExplored,
    transitionsExplored: transitions,
    schedulesCovered: schedules,
    terminalStates,
    deadlockStates,
    violations,
    elapsedMs: performance.now() - started,
  }
}

export function assertProgramFits(program: ProtocolProgram): void {
  if (program.ranks * program.calls > 16) {
    throw new LlcommError(
      'INVALID_ARGUMENT',
      `ranks × calls must be at most 16 (contribution bits), got ${program.ranks}×${program.calls}`,
    )
  }
}
