// Issue 21 item 1 on the GPU: the per-process fused AllReduce + residual add + RMSNorm
// (CudaProcessCommunicator.deviceAllReduceRmsNorm), 2 and 4 processes on one GPU (virtual ranks through CUDA IPC).
// Every call of fusedShapes() (bf16/f16/f32; 'auto' and each fused kernel forced, on shapes where 'auto' takes the
// split cluster kernels and the one-shot / two-shot) on every rank, each rank's residual and output bitwise equal to
// the in-process call's (the same data, virtual ranks of one CudaCommunicator, made here after the ranks finished), a
// call refused per process refused in process with the same code; then a call where the last rank passes 3 rows
// against the others' 4: MISMATCH on every rank (the fused signature cluster, kernels/llcomm/fused_signature.cuh),
// naming both signatures, well before the deadline. Skips without LLCOMM_TEST_BACKEND=cuda.
// The many section (issue 21 item 2; its own runs, as a mismatched call leaves the communicator failed):
// CudaProcessCommunicator.deviceAllReduceMany on every group of manyGroups() (1 to 8 buffers of odd sizes,
// bf16/f16/f32), each rank's outputs bitwise equal to the in-process deviceAllReduceMany's on the same data; then the
// last rank passing 20 elements for one buffer against the others' 37: MISMATCH on every rank naming both
// allreduce-many signatures (the signature block, kernels/llcomm/fused_signature.cuh).
import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { DTYPE_BYTES, type TensorArray } from '../../src/api/types.js'
import { createCudaCommunicator } from '../../src/backends/cuda/communicator.js'
import { LlcommError } from '../../src/errors.js'
import { type CuStream, cudaDriver, type DevicePtr } from '../../src/ffi/index.js'
import { runRanks } from '../process/spawn-ranks.js'
import { ON_GPU, recordCase } from './gpu-harness.js'
import {
  allocBytes,
  EPS,
  type FusedShape,
  fusedInputs,
  fusedShapes,
  MANY_MISMATCH_COUNT,
  MANY_MISMATCH_GROUP,
  manyGroups,
  manyInputs,
} from './multiprocess-fused-data.js'

const SCRIPT = fileURLToPath(new URL('./multiprocess-fused-rank.js', import.meta.url))
const hash = (a: TensorArray) =>
  createHash('sha256')
    .update(new Uint8Array(a.buffer, a.byteOffset, a.byteLength))
    .digest('hex')

type CallResult = { algorithm: string; launches: number; residual: string; out: string } | { refused: string }

type RankReport<R> = {
  results?: R[]
  failure?: Record<string, unknown>
  error?: unknown
  /** The many section's host view (comm.allReduceMany) per group: 'auto', a forced algorithm, and allReduce alone. */
  hostView?: { auto: string[]; forced: string[]; alone: string[] }[]
}

/** One run of the rank script on `worldSize` processes: each rank's report, and the ranks that failed outright. */
async function runSection<R>(worldSize: number, scenario: string, env: Record<string, string>) {
  const runs = await runRanks({ worldSize, scenario, script: SCRIPT, env, deadlineMs: 400_000 })
  const ranks = runs.map((r) => r.result as RankReport<R>)
  const problems: string[] = []
  for (const [r, run] of runs.entries())
    if (run.code !== 0 || ranks[r]?.error)
      problems.push(`rank ${r}: exit ${run.code} ${JSON.stringify(ranks[r]?.error)} ${run.stderr.slice(-1500)}`)
  return { ranks, problems }
}

/**
 * The mismatched call: MISMATCH on every rank within 4 s, its own signature and the peer's matching `expect(rank)`
 * ([mine, theirs]).
 */
function checkMismatch<R>(ranks: RankReport<R>[], problems: string[], expect: (rank: number) => [RegExp, RegExp]) {
  for (const [r, res] of ranks.entries()) {
    const f = res?.failure ?? {}
    const d = (f.details ?? {}) as Record<string, unknown>
    if (f.code !== 'MISMATCH') {
      problems.push(`mismatch rank ${r}: ${String(f.code)} ${String(f.message)}`)
      continue
    }
    const [mine, theirs] = expect(r)
    if (!mine.test(String(d.mine))) problems.push(`mismatch rank ${r}: its own signature reads ${String(d.mine)}`)
    if (!theirs.test(String(d.theirs)))
      problems.push(`mismatch rank ${r}: the peer's signature reads ${String(d.theirs)}`)
    if (!((f.ms as number) < 4000)) problems.push(`mismatch rank ${r}: failed after ${String(f.ms)} ms`)
  }
}

/** The in-process call of every shape on `n` virtual ranks of device 0: per shape, per rank, as the ranks report. */
async function inProcess(n: number): Promise<CallResult[][]> {
  const d = cudaDriver()
  const comm = await createCudaCommunicator({ backend: 'cuda', devices: new Array(n).fill(0), timeoutMs: 4000 })
  const stream: CuStream = d.streamCreate()
  try {
    return fusedShapes().map((s: FusedShape, index) => {
      const eb = DTYPE_BYTES[s.dtype]
      const bytes = s.rows * s.hidden * eb
      const inputs = Array.from({ length: n }, (_, r) => fusedInputs(s, index, r))
      const alloc = (b: number) => Array.from({ length: n }, () => d.memAlloc(b) as DevicePtr)
      const [x, res, out, w] = [alloc(bytes), alloc(bytes), alloc(bytes), alloc(s.hidden * eb)]
      try {
        for (let r = 0; r < n; r++) {
          d.copyHtoD(x[r], inputs[r].x, bytes)
          d.copyHtoD(res[r], inputs[r].residual, bytes)
          d.copyHtoD(w[r], inputs[r].weight, s.hidden * eb)
        }
        d.contextSynchronize()
        const info = comm.deviceAllReduceRmsNorm({
          inputs: x,
          residuals: res,
          outputs: out,
          weights: w,
          rows: s.rows,
          hidden: s.hidden,
          eps: EPS,
          dtype: s.dtype,
          algorithm: s.algorithm,
          stream,
        })
        d.streamSynchronize(stream)
        comm.checkDeviceError()
        return inputs.map((inp, r) => {
          const a = inp.x.slice() as TensorArray
          const b = inp.x.slice() as TensorArray
          d.copyDtoH(a, res[r], bytes)
          d.copyDtoH(b, out[r], bytes)
          return { algorithm: info.algorithm, launches: info.launches, residual: hash(a), out: hash(b) }
        })
      } catch (e) {
        if (e instanceof LlcommError && (e.code === 'INVALID_ARGUMENT' || e.code === 'UNSUPPORTED_ALGORITHM'))
          return inputs.map(() => ({ refused: e.code }))
        throw e
      } finally {
        for (const p of [...x, ...res, ...out, ...w]) d.memFree(p)
      }
    })
  } finally {
    d.streamDestroy(stream)
    await comm.close()
  }
}

for (const worldSize of [2, 4]) {
  test(`per process, ${worldSize} processes on one GPU: deviceAllReduceRmsNorm bitwise equal to the in-process call; rows differing on one rank: MISMATCH on every rank`, {
    skip: !ON_GPU,
  }, async () => {
    const started = performance.now()
    const { ranks, problems } = await runSection<CallResult>(worldSize, 'gpu-fused', {
      LLCOMM_TEST_MISMATCH_ROWS: '3',
    })
    const shapes = fusedShapes()
    const reference = problems.length === 0 ? await inProcess(worldSize) : []
    let compared = 0
    let refused = 0
    if (problems.length === 0)
      shapes.forEach((s, i) => {
        for (let r = 0; r < worldSize; r++) {
          const got = ranks[r].results?.[i]
          const want = reference[i][r]
          const name = `${s.dtype} ${s.rows}x${s.hidden} ${s.algorithm} rank ${r}`
          if (!got) problems.push(`${name}: no result`)
          else if ('refused' in want || 'refused' in got) {
            if (JSON.stringify(got) !== JSON.stringify(want))
              problems.push(`${name}: per process ${JSON.stringify(got)}, in process ${JSON.stringify(want)}`)
            refused++
          } else {
            if (got.residual !== want.residual)
              problems.push(`${name} (${got.algorithm}): residual differs from in process`)
            if (got.out !== want.out) problems.push(`${name} (${got.algorithm}): output differs from in process`)
            compared++
          }
        }
      })
    // The mismatched call: MISMATCH on every rank, naming both ranks' fused signatures, before the deadline.
    checkMismatch(ranks, problems, (r) => [
      /fused-rmsnorm .* × (16384|12288) /,
      r === worldSize - 1 ? /× 16384 / : /× 12288 /,
    ])
    recordCase({
      name: `multiprocess/fused/${worldSize}r`,
      passed: problems.length === 0,
      compared,
      refused,
      mismatch: ranks.map((res) => res?.failure?.message),
      problems: problems.slice(0, 20),
      wallMs: performance.now() - started,
    })
    assert.deepEqual(problems, [])
    assert.ok(compared > 0)
  })
}

type ManyResult = { algorithm: string; launches: number; outputs: string[] }

/** The in-process deviceAllReduceMany of every many group on `n` virtual ranks of device 0: per group, per rank. */
async function inProcessMany(n: number): Promise<ManyResult[][]> {
  const d = cudaDriver()
  const comm = await createCudaCommunicator({ backend: 'cuda', devices: new Array(n).fill(0), timeoutMs: 4000 })
  const stream: CuStream = d.streamCreate()
  try {
    return manyGroups().map((g, index) => {
      const eb = DTYPE_BYTES[g.dtype]
      const inputs = Array.from({ length: n }, (_, r) => manyInputs(g, index, r))
      const alloc = () =>
        g.counts.map((c) => Array.from({ length: n }, () => d.memAlloc(allocBytes(c * eb)) as DevicePtr))
      const [ins, outs] = [alloc(), alloc()]
      try {
        for (const [b, c] of g.counts.entries())
          for (let r = 0; r < n; r++) if (c > 0) d.copyHtoD(ins[b][r], inputs[r][b], c * eb)
        d.contextSynchronize()
        const info = comm.deviceAllReduceMany({ inputs: ins, outputs: outs, counts: g.counts, dtype: g.dtype, stream })
        d.streamSynchronize(stream)
        comm.checkDeviceError()
        return inputs.map((inp, r) => ({
          algorithm: info.algorithm,
          launches: info.launches,
          outputs: g.counts.map((c, b) => {
            const a = inp[b].slice() as TensorArray
            if (c > 0) d.copyDtoH(a, outs[b][r], c * eb)
            return hash(a)
          }),
        }))
      } finally {
        for (const p of [...ins.flat(), ...outs.flat()]) d.memFree(p)
      }
    })
  } finally {
    d.streamDestroy(stream)
    await comm.close()
  }
}

for (const worldSize of [2, 4]) {
  test(`per process, ${worldSize} processes on one GPU: deviceAllReduceMany bitwise equal to the in-process call; a count differing on one rank: MISMATCH on every rank`, {
    skip: !ON_GPU,
  }, async () => {
    const started = performance.now()
    const { ranks, problems } = await runSection<ManyResult>(worldSize, 'gpu-fused-many', {
      LLCOMM_TEST_SECTION: 'many',
      LLCOMM_TEST_MISMATCH_COUNT: String(MANY_MISMATCH_COUNT),
    })
    const groups = manyGroups()
    const reference = problems.length === 0 ? await inProcessMany(worldSize) : []
    let compared = 0
    if (problems.length === 0)
      groups.forEach((g, i) => {
        for (let r = 0; r < worldSize; r++) {
          const got = ranks[r].results?.[i]
          const want = reference[i][r]
          const name = `many ${g.dtype} ${g.counts.join(',')} rank ${r}`
          if (!got) problems.push(`${name}: no result`)
          else {
            // an empty call: per process the signature block alone (one launch), in process nothing
            const wantLaunches = g.counts.every((c) => c === 0) ? 1 : want.launches
            if (got.launches !== wantLaunches)
              problems.push(`${name}: ${got.launches} launches per process, ${wantLaunches} expected`)
            got.outputs.forEach((h, b) => {
              if (h !== want.outputs[b]) problems.push(`${name}: buffer ${b} differs from in process`)
            })
            const host = ranks[r].hostView?.[i]
            if (!host) problems.push(`${name}: no host-view result`)
            else {
              // the host view's 'auto' is the device call; its forced form is one allReduce per buffer
              if (host.auto.join() !== got.outputs.join()) problems.push(`${name}: host view (auto) differs`)
              if (host.forced.join() !== host.alone.join())
                problems.push(`${name}: host view (oneshot-ll) differs from allReduce of each buffer alone`)
            }
            compared++
          }
        }
      })
    // The mismatched call: MISMATCH on every rank, naming both ranks' allreduce-many signatures, before the deadline.
    const total = (counts: number[]) => counts.reduce((a, c) => a + c, 0)
    const even = total(MANY_MISMATCH_GROUP.counts)
    const odd = even - MANY_MISMATCH_GROUP.counts[1] + MANY_MISMATCH_COUNT
    const many = (n: number) => new RegExp(`^allreduce-many bf16 × ${n} `)
    checkMismatch(ranks, problems, (r) => (r === worldSize - 1 ? [many(odd), many(even)] : [many(even), many(odd)]))
    recordCase({
      name: `multiprocess/fused-many/${worldSize}r`,
      passed: problems.length === 0,
      compared,
      mismatch: ranks.map((res) => res?.failure?.message),
      problems: problems.slice(0, 20),
      wallMs: performance.now() - started,
    })
    assert.deepEqual(problems, [])
    assert.ok(compared > 0)
  })
}
