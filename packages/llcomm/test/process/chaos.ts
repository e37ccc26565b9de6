// A long run of per-rank calls with failures planted on purpose, for any per-process communicator (the CPU one in
// test/process/cpu-process.test.ts, the CUDA one in test/gpu/multiprocess.test.ts): every rank draws the same plan
// from a seed and runs its part of it; checkChaos compares what every rank saw with what each event must give.
import type { AlgorithmChoice, ProcessCommunicator } from '../../src/api/types.js'
import { DTYPE_CODECS } from '../../src/dtype/codec.js'
import { LlcommError } from '../../src/errors.js'

/** A small deterministic generator (every rank draws the same plan from the same seed). */
function seededRandom(seed: number): () => number {
  let x = seed >>> 0 || 1
  return () => {
    x ^= x << 13
    x >>>= 0
    x ^= x >>> 17
    x ^= x << 5
    x >>>= 0
    return x / 2 ** 32
  }
}

/** One call of the plan: what every rank does, and which rank (if any) does something else. */
export type ChaosEvent = 'data' | 'empty' | 'all-refuse' | 'one-refuses' | 'one-count' | 'one-dtype'
export const CHAOS_EVENTS: readonly ChaosEvent[] = [
  'data',
  'empty',
  'all-refuse',
  'one-refuses',
  'one-count',
  'one-dtype',
]

export interface ChaosResult {
  events: ChaosEvent[]
  /** Per call: NONE (the output exact), WRONG n, or the error's code (with " / recover: CODE" if recover() failed). */
  outcomes: string[]
  wrong: number
}

/** Small integers: every sum of a few ranks is exact in f32 and bf16. */
function integers(count: number, r: number, call: number): Float32Array {
  const a = new Float32Array(count)
  for (let i = 0; i < count; i++) a[i] = ((r * 31 + i * 7 + call * 13) % 17) - 8
  return a
}

/**
 * The plan: data calls of random counts, algorithms and dtypes, matched empty calls, a call every rank refuses
 * alike (no such dtype), and calls where one rank differs (refuses, another count, another dtype), each followed by
 * recover() on every rank.
 */
export async function runChaos(
  comm: ProcessCommunicator,
  algorithms: readonly AlgorithmChoice[],
  o: { calls: number; seed: number; maxCount?: number },
): Promise<ChaosResult> {
  const random = seededRandom(o.seed)
  const events: ChaosEvent[] = []
  const outcomes: string[] = []
  let wrong = 0
  for (let call = 0; call < o.calls; call++) {
    const u = random()
    const event: ChaosEvent =
      u < 0.7
        ? 'data'
        : u < 0.8
          ? 'empty'
          : u < 0.85
            ? 'all-refuse'
            : u < 0.9
              ? 'one-refuses'
              : u < 0.95
                ? 'one-count'
                : 'one-dtype'
    const odd = Math.floor(random() * comm.size)
    const count = event === 'empty' ? 0 : 1 + Math.floor(random() * (o.maxCount ?? 300))
    const dtype = random() < 0.5 ? 'f32' : 'bf16'
    const algorithm = algorithms[Math.floor(random() * algorithms.length)]
    events.push(event)
    const mine = comm.rank === odd
    const myCount = event === 'one-count' && mine ? count + 1 : count
    const myDtype = event === 'one-dtype' && mine ? (dtype === 'f32' ? 'bf16' : 'f32') : dtype
    const refuse = event === 'all-refuse' || (event === 'one-refuses' && mine)
    const x = integers(myCount, comm.rank, call)
    const input = myDtype === 'f32' ? x : Uint16Array.from(x, (v) => DTYPE_CODECS.bf16.encodeLane(v))
    const expected: number[] = new Array(event === 'data' || event === 'empty' ? count : 0).fill(0)
    for (let r = 0; r < comm.size && expected.length > 0; r++)
      for (const [i, v] of integers(count, r, call).entries()) expected[i] += v
    try {
      const out = await comm.allReduce(input, { algorithm, dtype: refuse ? ('f64' as unknown as 'f32') : myDtype })
      const got = Array.from(out, (b) => (myDtype === 'f32' ? b : DTYPE_CODECS.bf16.decodeLane(b)))
      const bad = got.length !== expected.length ? 1 : got.filter((v, i) => v !== expected[i]).length
      wrong += bad
      outcomes.push(bad === 0 ? 'NONE' : `WRONG ${bad}`)
    } catch (e) {
      outcomes.push(e instanceof LlcommError ? e.code : `UNEXPECTED ${String(e)}`)
    }
    if (event === 'one-refuses' || event === 'one-count' || event === 'one-dtype') {
      try {
        await comm.recover()
      } catch (e) {
        outcomes[outcomes.length - 1] += ` / recover: ${e instanceof LlcommError ? e.code : String(e)}`
      }
    }
  }
  return { events, outcomes, wrong }
}

/**
 * What every rank saw against what each event must give: data and empty calls exact (or, on a rank still in such a
 * call when the next call's planted mismatch fails the channel, MISMATCH: never data); a call refused alike:
 * UNSUPPORTED_DTYPE; a call where one rank differs: MISMATCH, or the refusal on the refusing rank, and recover()
 * succeeded. Returns the problems found (empty: all as planned) and the events drawn.
 */
export function checkChaos(results: readonly ChaosResult[]): { problems: string[]; drawn: Set<ChaosEvent> } {
  const problems: string[] = []
  const drawn = new Set<ChaosEvent>()
  for (const [r, res] of results.entries()) {
    if (res.wrong !== 0) problems.push(`rank ${r}: ${res.wrong} wrong elements`)
    if (res.events.join() !== results[0].events.join()) problems.push(`rank ${r} drew another plan`)
    res.events.forEach((event, call) => {
      drawn.add(event)
      const got = res.outcomes[call]
      const next = res.events[call + 1]
      const poisonNext = next === 'one-refuses' || next === 'one-count' || next === 'one-dtype'
      const ok =
        event === 'data' || event === 'empty'
          ? got === 'NONE' || (poisonNext && got === 'MISMATCH')
          : event === 'all-refuse'
            ? got === 'UNSUPPORTED_DTYPE'
            : got === 'MISMATCH' || got === 'UNSUPPORTED_DTYPE'
      if (!ok) problems.push(`rank ${r}, call ${call} (${event}): ${got}`)
    })
  }
  return { problems, drawn }
}
