// One rank of a multi-process test: started by test/process/spawn-ranks.ts (or `llcomm launch`) with LLCOMM_RANK,
// LLCOMM_WORLD_SIZE and LLCOMM_RENDEZVOUS set, it runs the scenario named by LLCOMM_TEST_SCENARIO on a per-rank
// cpu communicator and prints one JSON line `RESULT {...}` on stdout. Not a test file itself (no .test. in the name).
import { createHash } from 'node:crypto'
import { existsSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { type AlgorithmChoice, DTYPES, type Dtype, type TensorArray } from '../../src/api/types.js'
import type { CpuProcessCommunicator } from '../../src/backends/cpu/process-communicator.js'
import { createCommunicator } from '../../src/create.js'
import { DTYPE_CODECS } from '../../src/dtype/codec.js'
import { adversarialInput } from '../support/adversarial.js'
import { errorInfo } from '../support/error-info.js'
import { checkAllReduce } from '../support/reference.js'
import { integerInput, runChaos } from './chaos.js'

const scenario = process.env.LLCOMM_TEST_SCENARIO ?? 'matrix'
const timeoutMs = Number(process.env.LLCOMM_TEST_TIMEOUT_MS ?? 20_000)
const victim = Number(process.env.LLCOMM_TEST_VICTIM ?? -1)
const rank = Number(process.env.LLCOMM_RANK)

export const MATRIX_ALGORITHMS: readonly AlgorithmChoice[] = [
  'oneshot-ll',
  'oneshot-sentinel',
  'twoshot-sentinel',
  'twoshot-atomic',
  'oneshot-barrier',
  'ring',
  'auto',
]
const MATRIX_LENGTHS = (process.env.LLCOMM_TEST_LENGTHS ?? '1,7,1000,4097,65537').split(',').map(Number)
const MATRIX_DTYPES = (process.env.LLCOMM_TEST_DTYPES?.split(',') ?? DTYPES) as readonly Dtype[]

function report(result: Record<string, unknown>): void {
  process.stdout.write(`RESULT ${JSON.stringify({ rank, ...result })}\n`)
}

function digest(a: TensorArray): string {
  return createHash('sha256')
    .update(new Uint8Array(a.buffer, a.byteOffset, a.byteLength))
    .digest('hex')
    .slice(0, 16)
}

async function matrix(comm: CpuProcessCommunicator): Promise<Record<string, unknown>> {
  const problems: string[] = []
  const digests: Record<string, string> = {}
  let calls = 0
  for (const algorithm of MATRIX_ALGORITHMS) {
    for (const dtype of MATRIX_DTYPES) {
      for (const length of MATRIX_LENGTHS) {
        const seed = comm.size * 1000 + length
        const inputs = Array.from({ length: comm.size }, (_, r) => adversarialInput(dtype, length, seed, r))
        const out = await comm.allReduce(inputs[comm.rank], { algorithm, dtype })
        calls++
        if (algorithm !== 'auto' && out.info.algorithm !== algorithm)
          problems.push(`${algorithm} ran ${out.info.algorithm}`)
        for (const p of checkAllReduce(
          dtype,
          inputs,
          inputs.map(() => out),
        ))
          problems.push(`${algorithm} ${dtype} ${length}: ${p}`)
        digests[`${algorithm}/${dtype}/${length}`] = digest(out)
      }
    }
  }
  return { problems, digests, calls }
}

async function stress(comm: CpuProcessCommunicator, calls: number): Promise<Record<string, unknown>> {
  const algorithms = MATRIX_ALGORITHMS.filter((a) => a !== 'auto')
  let wrong = 0
  let empty = 0
  const started = performance.now()
  for (let call = 0; call < calls; call++) {
    // Every 5th call is empty on every rank: it takes an epoch (its signature, no data) and must not disturb the
    // calls around it.
    const count = call % 5 === 3 ? 0 : 96
    const expected = new Float32Array(count)
    for (let r = 0; r < comm.size; r++) {
      const x = integerInput(count, r, call)
      for (let i = 0; i < count; i++) expected[i] += x[i]
    }
    const out = await comm.allReduce(integerInput(count, comm.rank, call), {
      algorithm: algorithms[call % algorithms.length],
    })
    if (out.length !== count) wrong++
    if (count === 0) empty++
    for (let i = 0; i < count; i++) if (out[i] !== expected[i]) wrong++
  }
  return { calls, wrong, empty, perCallUs: ((performance.now() - started) * 1000) / calls }
}

/** The victim dies (SIGKILL, no cleanup at all) after a few calls; the others keep calling. */
async function killed(comm: CpuProcessCommunicator): Promise<Record<string, unknown>> {
  for (let call = 0; call < 5; call++)
    await comm.allReduce(integerInput(64, comm.rank, call), { algorithm: 'oneshot-ll' })
  if (comm.rank === victim) process.kill(process.pid, 'SIGKILL')
  const started = performance.now()
  try {
    for (let call = 5; call < 1_000_000; call++) {
      await comm.allReduce(integerInput(64, comm.rank, call), { algorithm: 'oneshot-sentinel' })
    }
    return { error: { code: 'NONE' } }
  } catch (e) {
    const afterMs = performance.now() - started
    // A second call must fail fast with the same code (the communicator stays broken).
    let second: Record<string, unknown> = {}
    try {
      await comm.allReduce(integerInput(64, comm.rank, 0))
    } catch (e2) {
      second = errorInfo(e2)
    }
    return { error: errorInfo(e), afterMs, second }
  }
}

/**
 * The communicator was created with deterministic: true (LLCOMM_TEST_DETERMINISTIC=1): every algorithm, asked for
 * by name with the default fallback, gives oneshot-barrier's bits; those that do not keep determinism report the
 * replacement.
 */
async function deterministic(comm: CpuProcessCommunicator): Promise<Record<string, unknown>> {
  const ran: Record<string, { algorithm: string; fallbackReason?: string }> = {}
  const digests: Record<string, string> = {}
  for (const dtype of ['f32', 'bf16'] as const) {
    const inputs = Array.from({ length: comm.size }, (_, r) => adversarialInput(dtype, 4097, 77, r))
    for (const algorithm of MATRIX_ALGORITHMS) {
      const out = await comm.allReduce(inputs[comm.rank], { algorithm, dtype })
      ran[`${algorithm}/${dtype}`] = { algorithm: out.info.algorithm, fallbackReason: out.info.fallbackReason }
      digests[`${algorithm}/${dtype}`] = digest(out)
    }
  }
  return { ran, digests }
}

/** The victim joins but never calls: the others get TIMEOUT naming it. */
async function absent(comm: CpuProcessCommunicator): Promise<Record<string, unknown>> {
  if (comm.rank === victim) {
    await new Promise((r) => setTimeout(r, timeoutMs * 2))
    return {}
  }
  const started = performance.now()
  try {
    await comm.allReduce(integerInput(64, comm.rank, 0), { algorithm: 'twoshot-sentinel' })
    return { error: { code: 'NONE' } }
  } catch (e) {
    return { error: errorInfo(e), afterMs: performance.now() - started }
  }
}

/**
 * A mismatched call: the victim's first call has LLCOMM_TEST_ODD_COUNT elements (0: an empty call), every other
 * rank's has 64; then every rank makes a second call of 64. Each call's outcome is reported: its error code, or
 * how many elements differ from the reference of that call (the ranks' inputs of the same call number). No rank may
 * return data from the mismatched call, nor pair its second call with a peer's first (an empty call that skipped
 * the signature exchange would leave this rank one call behind: its second call would meet the peers' first).
 */
async function mismatch(comm: CpuProcessCommunicator): Promise<Record<string, unknown>> {
  const oddCount = Number(process.env.LLCOMM_TEST_ODD_COUNT ?? 0)
  // LLCOMM_TEST_MAIN_COUNT (default 64) and LLCOMM_TEST_DTYPE (f32 or bf16: the inputs are small integers, exact in both)
  const mainCount = Number(process.env.LLCOMM_TEST_MAIN_COUNT ?? 64)
  const dtype = (process.env.LLCOMM_TEST_DTYPE ?? 'f32') as 'f32' | 'bf16'
  const typed = (x: Float32Array) => (dtype === 'f32' ? x : Uint16Array.from(x, (v) => DTYPE_CODECS.bf16.encodeLane(v)))
  const value = (b: number) => (dtype === 'f32' ? b : DTYPE_CODECS.bf16.decodeLane(b))
  const outcomes: Record<string, unknown>[] = []
  for (let call = 0; call < 2; call++) {
    const count = call === 0 && comm.rank === victim ? oddCount : mainCount
    const expected = new Float32Array(count)
    for (let r = 0; r < comm.size; r++) {
      const x = integerInput(count, r, call)
      for (let i = 0; i < count; i++) expected[i] += x[i]
    }
    // LLCOMM_TEST_ODD_INVALID=1: the victim's first call is refused on its rank (an unknown dtype), and the
    // victim carries on with its second call, as a program that catches the error would.
    // ('all': every rank's first call is refused alike; the communicator stays usable)
    const refusing = process.env.LLCOMM_TEST_ODD_INVALID
    const invalid = call === 0 && (refusing === 'all' || (refusing === '1' && comm.rank === victim))
    // LLCOMM_TEST_ODD_SKIP=1: the victim makes neither call (its peers time out; the ranks' epochs then differ)
    if (comm.rank === victim && process.env.LLCOMM_TEST_ODD_SKIP === '1') {
      outcomes.push({ code: 'SKIPPED' })
      continue
    }
    try {
      const out = await comm.allReduce(typed(integerInput(count, comm.rank, call)), {
        algorithm: 'oneshot-ll',
        dtype: invalid ? ('f64' as unknown as 'f32') : dtype,
      })
      let wrong = out.length === count ? 0 : 1
      for (let i = 0; i < count; i++) if (value(out[i]) !== expected[i]) wrong++
      outcomes.push({ code: 'NONE', count, wrong })
    } catch (e) {
      outcomes.push(errorInfo(e))
    }
  }
  // LLCOMM_TEST_RECOVER=1: every rank recovers, then two more calls (another algorithm for the second), checked.
  if (process.env.LLCOMM_TEST_RECOVER === '1') {
    // LLCOMM_TEST_NO_RECOVER=1: the victim never calls recover() (the others' must end in TIMEOUT naming it)
    // (alive meanwhile, past the others' deadline: a rank that left would be PEER_FAILED instead)
    if (comm.rank === victim && process.env.LLCOMM_TEST_NO_RECOVER === '1') {
      await new Promise((resolve) => setTimeout(resolve, 2 * timeoutMs + 7000))
      return { outcomes }
    }
    const started = performance.now()
    try {
      await comm.recover()
      outcomes.push({ code: 'RECOVERED' })
    } catch (e) {
      outcomes.push({ ...errorInfo(e), ms: performance.now() - started })
      return { outcomes }
    }
    for (const [call, algorithm] of [
      [2, 'oneshot-ll'],
      [3, 'twoshot-sentinel'],
    ] as const) {
      const expected = new Float32Array(64)
      for (let r = 0; r < comm.size; r++) {
        const x = integerInput(64, r, call)
        for (let i = 0; i < 64; i++) expected[i] += x[i]
      }
      try {
        const out = await comm.allReduce(integerInput(64, comm.rank, call), { algorithm })
        let wrong = 0
        for (let i = 0; i < 64; i++) if (out[i] !== expected[i]) wrong++
        outcomes.push({ code: 'NONE', count: 64, wrong })
      } catch (e) {
        outcomes.push(errorInfo(e))
      }
    }
  }
  return { outcomes }
}

/**
 * allReduceMany per process. Matched (LLCOMM_TEST_MANY_ODD unset): groups of buffers with adversarial values, an
 * empty buffer among them, 'auto' and a forced algorithm, each output against the float64 reference and bitwise
 * against one allReduce of the same buffer with the same options; digests for the cross-rank comparison. Mismatched
 * (LLCOMM_TEST_MANY_ODD = 'fewer': the victim passes one buffer less; 'count': one count differs): the call's
 * outcome on every rank (it must be MISMATCH: with each buffer's own check only, a rank with fewer buffers would
 * finish early and leave its peers' extra buffer to meet its next call).
 */
async function many(comm: CpuProcessCommunicator): Promise<Record<string, unknown>> {
  const odd = process.env.LLCOMM_TEST_MANY_ODD
  if (odd) {
    const lengths = comm.rank !== victim ? [64, 33] : odd === 'fewer' ? [64] : [64, 34]
    try {
      const outs = await comm.allReduceMany(
        lengths.map((n, b) => integerInput(n, comm.rank, b)),
        { algorithm: 'oneshot-sentinel' },
      )
      return { failure: { code: 'NONE', buffers: outs.length } }
    } catch (e) {
      return { failure: errorInfo(e) }
    }
  }
  const problems: string[] = []
  const digests: Record<string, string> = {}
  let calls = 0
  for (const dtype of ['f32', 'bf16'] as const) {
    for (const algorithm of ['auto', 'twoshot-sentinel'] as const) {
      const lengths = [1, 7, 1000, 0, 4097]
      const inputs = lengths.map((n, b) =>
        Array.from({ length: comm.size }, (_, r) => adversarialInput(dtype, n, 500 + 10 * b + n, r)),
      )
      const outs = await comm.allReduceMany(
        inputs.map((perRank) => perRank[comm.rank]),
        { algorithm, dtype },
      )
      calls++
      for (const [b, out] of outs.entries()) {
        const what = `${algorithm} ${dtype} buffer ${b} (${lengths[b]})`
        if (out.length !== lengths[b]) problems.push(`${what}: ${out.length} elements`)
        for (const p of checkAllReduce(
          dtype,
          inputs[b],
          inputs[b].map(() => out),
        ))
          problems.push(`${what}: ${p}`)
        const alone = await comm.allReduce(inputs[b][comm.rank], { algorithm, dtype })
        if (digest(alone) !== digest(out)) problems.push(`${what}: differs from allReduce of the buffer alone`)
        if (alone.info.algorithm !== out.info.algorithm)
          problems.push(`${what}: ran ${out.info.algorithm}, alone ${alone.info.algorithm}`)
        digests[what] = digest(out)
      }
    }
  }
  return { problems, digests, calls }
}

async function main(): Promise<void> {
  let comm: CpuProcessCommunicator
  const joinStarted = performance.now()
  try {
    comm = (await createCommunicator({
      backend: 'cpu',
      rendezvous: 'env',
      timeoutMs,
      bufferBytes: 16 * 1024,
      ...(process.env.LLCOMM_TEST_DETERMINISTIC === '1' ? { deterministic: true } : {}),
      ...(process.env.LLCOMM_TEST_SPIN ? { spinIterations: Number(process.env.LLCOMM_TEST_SPIN) } : {}),
    })) as CpuProcessCommunicator
  } catch (e) {
    report({ joinError: errorInfo(e), afterMs: performance.now() - joinStarted })
    process.exitCode = 3
    return
  }
  let result: Record<string, unknown>
  switch (scenario) {
    case 'matrix':
      result = await matrix(comm)
      break
    case 'stress':
      result = await stress(comm, Number(process.env.LLCOMM_TEST_CALLS ?? 10_000))
      break
    case 'deterministic':
      result = await deterministic(comm)
      break
    case 'killed':
      result = await killed(comm)
      break
    case 'absent':
      result = await absent(comm)
      break
    case 'mismatch':
      result = await mismatch(comm)
      break
    case 'many':
      result = await many(comm)
      break
    case 'chaos':
      result = {
        ...(await runChaos(comm, MATRIX_ALGORITHMS, {
          calls: Number(process.env.LLCOMM_TEST_CALLS ?? 300),
          seed: Number(process.env.LLCOMM_TEST_SEED ?? 7),
        })),
      }
      break
    case 'exit-code': {
      await comm.allReduce(integerInput(8, comm.rank, 0))
      await comm.close()
      report({})
      // The launcher ends the other ranks as soon as one exits non-zero, and rank 0's close() waits for every rank's
      // bye, so a victim that exits at once can cut another rank's report short (seen in CI: rank 0's RESULT
      // missing). With LLCOMM_TEST_DONE_DIR every other rank leaves a file after its report, and the victim exits
      // only once all of them are there (bounded by the scenario's timeout).
      const doneDir = process.env.LLCOMM_TEST_DONE_DIR
      if (doneDir) {
        if (comm.rank !== victim) writeFileSync(join(doneDir, `done-${comm.rank}`), '')
        else {
          const others = Array.from({ length: comm.size }, (_, r) => r).filter((r) => r !== victim)
          const deadline = Date.now() + timeoutMs
          while (!others.every((r) => existsSync(join(doneDir, `done-${r}`))) && Date.now() < deadline)
            await new Promise((resolve) => setTimeout(resolve, 20))
        }
      }
      process.exitCode = comm.rank === victim ? 7 : 0
      return
    }
    default:
      throw new Error(`unknown scenario ${scenario}`)
  }
  if (scenario === 'killed' || scenario === 'absent' || scenario === 'mismatch' || process.env.LLCOMM_TEST_MANY_ODD)
    await comm.destroy()
  else await comm.close()
  report(result)
}

await main()
