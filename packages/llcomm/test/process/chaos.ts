// A long run of per-rank calls with failures planted on purpose, for any per-process communicator (the CPU one in
// test/process/cpu-process.test.ts, the CUDA one in test/gpu/multiprocess.test.ts): every rank draws the same plan
// from a seed (SeededRandom, the workers' generator) and runs its part of it; checkChaos compares what every rank saw with what each event must give.
import type { AlgorithmChoice, ProcessCommunicator } from '../../src/api/types.js'
import { DTYPE_CODECS } from '../../src/dtype/codec.js'
import { LlcommError } from '../../src/errors.js'
import { SeededRandom } from '../support/prng.js'

/** One call of the plan: what every rank does, and which rank (if any) does something else. */
export type ChaosEvent =
  | 'data'
  | 'empty'
  | 'many'
  | 'all-refuse'
  | 'one-refuses'
  | 'one-count'
  | 'one-dtype'
  | 'one-many-fewer'
export const CHAOS_EVENTS: readonly ChaosEvent[] = [
  'data',
  'empty',
  'many',
  'all-refuse',
  'one-refuses',
  'one-count',
  'one-dtype',
  'one-many-fewer',
]
/** The events where one rank differs: MISMATCH (or its own refusal), then recover() on every rank. */
const ONE_DIFFERS: ReadonlySet<ChaosEvent> = new Set(['one-refuses', 'one-count', 'one-dtype', 'one-many-fewer'])

export interface ChaosResult {
  events: ChaosEvent[]
  /** Per call: NONE (the output exact), WRONG n, or the error's code (with " / recover: CODE" if recover() failed). */
  outcomes: string[]
  wrong: number
}

/** Small integers: every sum of a few ranks is exact in f32 and bf16 (and in every order). */
export function integerInput(count: number, r: number, call: number): Float32Array {
  const a = new Float32Array(count)
  for (let i = 0; i < count; i++) a[i] = ((r * 31 + i * 7 + call * 13) % 17) - 8
  return a
}

/**
 * The plan: data calls of random counts, algorithms and dtypes, matched empty calls, allReduceMany calls of 2-4
 * buffers, a call every rank refuses alike (no such dtype), and calls where one rank differs (refuses, another count,
 * another dtype, one allReduceMany buffer fewer), each followed by recover() on every rank.
 */
export async function runChaos(
  comm: ProcessCommunicator,
  algorithms: readonly AlgorithmChoice[],
  o: { calls: number; seed: number; maxCount?: number },
): Promise<ChaosResult> {
  const prng = new SeededRandom(o.seed)
  const random = () => prng.next()
  const events: ChaosEvent[] = []
  const outcomes: string[] = []
  let wrong = 0
  for (let call = 0; call < o.calls; call++) {
    const u = random()
    const event: ChaosEvent =
      u < 0.6
        ? 'data'
        : u < 0.68
          ? 'empty'
          : u < 0.78
            ? 'many'
            : u < 0.83
              ? 'all-refuse'
              : u < 0.87
                ? 'one-refuses'
                : u < 0.91
                  ? 'one-count'
                  : u < 0.95
                    ? 'one-dtype'
                    : 'one-many-fewer'
    const odd = Math.floor(random() * comm.size)
    const count = event === 'empty' ? 0 : 1 + Math.floor(random() * (o.maxCount ?? 300))
    const dtype = random() < 0.5 ? 'f32' : 'bf16'
    const algorithm = algorithms[Math.floor(random() * algorithms.length)]
    events.push(event)
    const mine = comm.rank === odd
    const myCount = event === 'one-count' && mine ? count + 1 : count
    const myDtype = event === 'one-dtype' && mine ? (dtype === 'f32' ? 'bf16' : 'f32') : dtype
    const refuse = event === 'all-refuse' || (event === 'one-refuses' && mine)
    const typed = (x: Float32Array) =>
      myDtype === 'f32' ? x : Uint16Array.from(x, (v) => DTYPE_CODECS.bf16.encodeLane(v))
    const value = (b: number) => (myDtype === 'f32' ? b : DTYPE_CODECS.bf16.decodeLane(b))
    const sum = (n: number, salt: number) => {
      const e: number[] = new Array(n).fill(0)
      for (let r = 0; r < comm.size; r++) for (const [i, v] of integerInput(n, r, salt).entries()) e[i] += v
      return e
    }
    if (event === 'many' || event === 'one-many-fewer') {
      // 2-4 buffers of their own counts (one may be empty); one rank with one buffer fewer: the group check
      const buffers = Array.from({ length: 2 + Math.floor(random() * 3) }, () => Math.floor(random() * 200))
      const mineBuffers = event === 'one-many-fewer' && mine ? buffers.slice(0, -1) : buffers
      try {
        const outs = await comm.allReduceMany(
          mineBuffers.map((n, b) => typed(integerInput(n, comm.rank, call * 8 + b))),
          { algorithm, dtype: myDtype },
        )
        let bad = event === 'many' ? 0 : 1
        for (const [b, out] of outs.entries()) {
          const e = sum(buffers[b], call * 8 + b)
          if (out.length !== e.length) bad++
          else bad += Array.from(out, value).filter((v, i) => v !== e[i]).length
        }
        wrong += bad
        outcomes.push(bad === 0 ? 'NONE' : `WRONG ${bad}`)
      } catch (e) {
        outcomes.push(e instanceof LlcommError ? e.code : `UNEXPECTED ${String(e)}`)
      }
    } else {
      const expected = event === 'data' || event === 'empty' ? sum(count, call) : []
      try {
        const out = await comm.allReduce(typed(integerInput(myCount, comm.rank, call)), {
          algorithm,
          dtype: refuse ? ('f64' as unknown as 'f32') : myDtype,
        })
        const got = Array.from(out, value)
        const bad = got.length !== expected.length ? 1 : got.filter((v, i) => v !== expected[i]).length
        wrong += bad
        outcomes.push(bad === 0 ? 'NONE' : `WRONG ${bad}`)
      } catch (e) {
        outcomes.push(e instanceof LlcommError ? e.code : `UNEXPECTED ${String(e)}`)
      }
    }
    if (ONE_DIFFERS.has(event)) {
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
      const poisonNext = ONE_DIFFERS.has(res.events[call + 1])
      const ok =
        event === 'data' || event === 'empty' || event === 'many'
          ? got === 'NONE' || (poisonNext && got === 'MISMATCH')
          : event === 'all-refuse'
            ? got === 'UNSUPPORTED_DTYPE'
            : got === 'MISMATCH' || got === 'UNSUPPORTED_DTYPE'
      if (!ok) problems.push(`rank ${r}, call ${call} (${event}): ${got}`)
    })
  }
  return { problems, drawn }
}
