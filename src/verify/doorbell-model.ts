/**
 * Exhaustive check of the CPU backend's sleep/notify hand-off (src/protocol/cpu/wait.ts: waitUntil and
 * ringDoorbells) for lost wake-ups: every interleaving of one waiter and two writers over sequentially consistent
 * memory, with Atomics.wait/notify's futex semantics (wait compares the word and blocks in one step; a notify
 * wakes a blocked waiter and is lost when nobody is blocked).
 *
 * The waiter (rank 0) waits for `ready` and names the peer that can make it true (AWAITED_PEER), or -1:
 *   store AWAITED_PEER; loop { store SLEEPING = 1; bell = load DOORBELL; if ready: done; wait(DOORBELL, bell) }
 * Writer p (ranks 1 and 2): store its data; add DOORBELL; if load SLEEPING: a = load AWAITED_PEER; if a is p or
 * -1: notify.
 * Scenarios: 'named' (ready = peer 1's data; AWAITED_PEER = 1), 'any' (ready = both writers' data, as a line
 * counter; AWAITED_PEER = -1), and 'sequence' (a wait for peer 2, SLEEPING back to 0, then a wait for peer 1, as
 * waitForAll does: a writer may load the AWAITED_PEER of the earlier wait).
 *
 * Violation: every writer finished while the waiter is blocked (a lost wake-up), or the waiter finished without
 * `ready`. Planted bugs show the check is load-bearing:
 * - check-before-bell: the waiter tests `ready` before it reads the doorbell value it will wait on;
 * - notify-named-only: a writer notifies only a sleeper that names it, not one that waits for any writer (-1);
 * - no-sleeping-store: the waiter never stores SLEEPING = 1 (writers then never notify);
 * - stale-awaited: the waiter stores AWAITED_PEER for its first wait only (in 'sequence' the second wait then
 *   keeps naming the first wait's peer).
 */

export type DoorbellScenario = 'named' | 'any' | 'sequence'
export type DoorbellMutation =
  | 'none'
  | 'check-before-bell'
  | 'notify-named-only'
  | 'no-sleeping-store'
  | 'stale-awaited'
export const DOORBELL_MUTATIONS: readonly DoorbellMutation[] = [
  'none',
  'check-before-bell',
  'notify-named-only',
  'no-sleeping-store',
  'stale-awaited',
]

interface State {
  data: [number, number] // writers 1 and 2
  bell: number
  sleeping: number
  awaited: number
  /** Waiter: which of its waits, program counter in it, the doorbell value it read, blocked in Atomics.wait, done. */
  wait: number
  wpc: number
  wbell: number
  blocked: boolean
  done: boolean
  /** Writers: program counter each (0..4), and the AWAITED_PEER value each loaded. */
  pc: [number, number]
  seen: [number, number]
}

export interface DoorbellCheckResult {
  scenario: DoorbellScenario
  mutation: DoorbellMutation
  statesExplored: number
  /** Empty when no interleaving loses a wake-up; else the shortest trace to one. */
  violation?: { message: string; trace: string[] }
}

/** The waiter's loop runs at most this many times: each re-run needs a doorbell change, and there are two writers. */
const MAX_WAITER_ROUNDS = 4

export function checkDoorbell(scenario: DoorbellScenario, mutation: DoorbellMutation = 'none'): DoorbellCheckResult {
  const waits: { awaited: number; ready: (s: State) => boolean }[] =
    scenario === 'named'
      ? [{ awaited: 1, ready: (s) => s.data[0] === 1 }]
      : scenario === 'any'
        ? [{ awaited: -1, ready: (s) => s.data[0] === 1 && s.data[1] === 1 }]
        : [
            { awaited: 2, ready: (s) => s.data[1] === 1 },
            { awaited: 1, ready: (s) => s.data[0] === 1 },
          ]
  const ready = (s: State) => waits.every((w) => w.ready(s))
  const initial: State = {
    data: [0, 0],
    bell: 0,
    sleeping: 0,
    awaited: -2, // a value no writer matches (the word before any wait)
    wait: 0,
    wpc: 0,
    wbell: 0,
    blocked: false,
    done: false,
    pc: [0, 0],
    seen: [0, 0],
  }
  const key = (s: State) => JSON.stringify(s)
  // Waiter steps: 0 store AWAITED; then per round r: 1+4r store SLEEPING, 2+4r load bell, 3+4r test ready,
  // 4+4r wait. (check-before-bell swaps the load and the test.)
  const waiterStep = (s: State): { next: State; label: string } | undefined => {
    if (s.done || s.blocked) return undefined
    const n: State = structuredClone(s)
    const current = waits[s.wait]
    if (s.wpc === 0) {
      const stores = s.wait === 0 || mutation !== 'stale-awaited'
      if (stores) n.awaited = current.awaited
      n.wpc = 1
      const label = stores ? `r0 store AWAITED_PEER = ${n.awaited}` : `r0 AWAITED_PEER not stored (still ${s.awaited})`
      return { next: n, label }
    }
    const round = Math.floor((s.wpc - 1) / 4)
    if (round >= MAX_WAITER_ROUNDS) return undefined
    const phase = (s.wpc - 1) % 4
    const loadBell = mutation === 'check-before-bell' ? 2 : 1
    const test = mutation === 'check-before-bell' ? 1 : 2
    if (phase === 0) {
      if (mutation !== 'no-sleeping-store') n.sleeping = 1
      n.wpc++
      return { next: n, label: `r0 store SLEEPING = 1${mutation === 'no-sleeping-store' ? ' (skipped)' : ''}` }
    }
    if (phase === loadBell) {
      n.wbell = s.bell
      n.wpc++
      return { next: n, label: `r0 load DOORBELL = ${s.bell}` }
    }
    if (phase === test) {
      if (current.ready(s)) {
        // The `finally` of waitUntil: SLEEPING back to 0; then the next wait, if any.
        n.sleeping = 0
        n.wait = s.wait + 1
        n.wpc = 0
        n.done = n.wait === waits.length
        return { next: n, label: `r0 ready (wait ${s.wait + 1} of ${waits.length})` }
      }
      n.wpc++
      return { next: n, label: 'r0 not ready' }
    }
    // Atomics.wait(DOORBELL, wbell): returns at once when the word changed, else blocks (one atomic step).
    n.wpc++
    if (s.bell !== s.wbell) return { next: n, label: `r0 wait: DOORBELL is ${s.bell}, not ${s.wbell}: returns` }
    n.blocked = true
    return { next: n, label: `r0 wait on DOORBELL = ${s.wbell}: blocks` }
  }
  const writerStep = (s: State, w: 0 | 1): { next: State; label: string } | undefined => {
    const peer = w + 1
    const pc = s.pc[w]
    if (pc >= 4) return undefined
    const n: State = structuredClone(s)
    n.pc[w] = pc + 1
    if (pc === 0) {
      n.data[w] = 1
      return { next: n, label: `r${peer} store data` }
    }
    if (pc === 1) {
      n.bell = s.bell + 1
      return { next: n, label: `r${peer} add DOORBELL -> ${n.bell}` }
    }
    if (pc === 2) {
      if (s.sleeping === 0) {
        n.pc[w] = 4
        return { next: n, label: `r${peer} load SLEEPING = 0: no notify` }
      }
      n.seen[w] = s.awaited
      return { next: n, label: `r${peer} load SLEEPING = 1, AWAITED_PEER = ${s.awaited}` }
    }
    // pc === 3: notify if the sleeper names us (or any writer, unless the mutation drops that case).
    const a = s.seen[w]
    const notify = a === peer || (a === -1 && mutation !== 'notify-named-only')
    if (notify && s.blocked) {
      n.blocked = false
      return { next: n, label: `r${peer} notify: wakes r0` }
    }
    return { next: n, label: notify ? `r${peer} notify: nobody blocked` : `r${peer} AWAITED_PEER ${a}: no notify` }
  }

  // Breadth-first over states: the first violation found has a shortest trace.
  const parents = new Map<string, { from: string | undefined; label: string; state: State }>()
  parents.set(key(initial), { from: undefined, label: 'start', state: initial })
  let frontier = [initial]
  const traceTo = (k: string): string[] => {
    const out: string[] = []
    for (let at: string | undefined = k; at !== undefined; ) {
      const entry = parents.get(at)
      if (!entry) break
      if (entry.from !== undefined) out.push(entry.label)
      at = entry.from
    }
    return out.reverse()
  }
  while (frontier.length > 0) {
    const next: State[] = []
    for (const s of frontier) {
      const sk = key(s)
      const steps = [waiterStep(s), writerStep(s, 0), writerStep(s, 1)].filter((x) => x !== undefined)
      const writersDone = s.pc[0] >= 4 && s.pc[1] >= 4
      if (steps.length === 0) {
        if (!s.done && !s.blocked)
          throw new Error(`doorbell model: the waiter ran out of its ${MAX_WAITER_ROUNDS} rounds (the bound is wrong)`)
        if (s.blocked && writersDone)
          return {
            scenario,
            mutation,
            statesExplored: parents.size,
            violation: {
              message: 'lost wake-up: every writer is done and the waiter stays blocked',
              trace: traceTo(sk),
            },
          }
        if (s.done && !ready(s))
          return {
            scenario,
            mutation,
            statesExplored: parents.size,
            violation: { message: 'the waiter finished before its data', trace: traceTo(sk) },
          }
        continue
      }
      for (const { next: n, label } of steps) {
        const nk = key(n)
        if (parents.has(nk)) continue
        parents.set(nk, { from: sk, label, state: n })
        next.push(n)
      }
    }
    frontier = next
  }
  return { scenario, mutation, statesExplored: parents.size }
}
