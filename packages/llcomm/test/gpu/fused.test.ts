// The fused AllReduce + residual add + RMSNorm and allReduceMany on the cuda backend (issue 21), virtual ranks on
// device 0. For every dtype, 2 and 8 ranks, rows 1..64, hidden 4096, 8192 and odd sizes, one-shot and two-shot:
//  - the new residual is bitwise the model of the kernels' arithmetic (rank-order f32 sum, rounded to the dtype, plus
//    the residual), the output within the dtype's rounding of the float64 RMSNorm of that residual;
//  - residual and output bitwise equal on every rank;
//  - bitwise equal to the unfused composition (deviceAllReduce with oneshot-sentinel / twoshot-sentinel, then the
//    reference deviceRmsNorm);
// graph capture with replays on fresh data; allReduceMany against one AllReduce per buffer, device and host view.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { AlgorithmName, Dtype, TensorArray } from '../../src/api/types.js'
import { DTYPE_BYTES, DTYPES } from '../../src/api/types.js'
import {
  type CudaCommunicator,
  createCudaCommunicator,
  type DeviceAllReduceManyArgs,
  type DeviceAllReduceRmsNormArgs,
} from '../../src/backends/cuda/communicator.js'
import {
  FUSED_CLUSTER_SIZES,
  type FusedNormAlgorithm,
  fusedRowsPerBlock,
  fusedSplitRowsPerCluster,
} from '../../src/backends/cuda/fused-launcher.js'
import { DTYPE_CODECS } from '../../src/dtype/index.js'
import { type CuStream, cudaDriver, type DevicePtr } from '../../src/ffi/index.js'
import { ON_GPU, REDUCED, recordCase, rng } from './gpu-harness.js'

const POISON = 0x7fbfdead
const EPS = 1e-5
const RANKS = [2, 8]
// 4: the one row count of 4-7, where 'auto' takes the split two-shot at hidden 8192 (fusedSplitTwoshotFirst)
const ROWS = REDUCED ? [1, 16] : [1, 3, 4, 16, 37, 64]
const HIDDEN = REDUCED ? [4096] : [4096, 8192, 1000, 264]
const TOLERANCE: Readonly<Record<Dtype, number>> = { f32: 2e-5, f16: 2e-3, bf16: 1.6e-2 }

const d = () => cudaDriver()
const elemBytes = (dtype: Dtype, f32: boolean) => (f32 ? 4 : DTYPE_BYTES[dtype])
const newArray = (dtype: Dtype, n: number, f32 = false): TensorArray =>
  f32 || dtype === 'f32' ? new Float32Array(n) : new Uint16Array(n)
const value = (a: TensorArray, dtype: Dtype, i: number, f32 = false) =>
  f32 || dtype === 'f32' ? (a as Float32Array)[i] : DTYPE_CODECS[dtype].decodeLane((a as Uint16Array)[i])
const round = (dtype: Dtype, x: number) =>
  dtype === 'f32' ? Math.fround(x) : DTYPE_CODECS[dtype].decodeLane(DTYPE_CODECS[dtype].encodeLane(Math.fround(x)))
function fill(a: TensorArray, dtype: Dtype, f32: boolean, f: (i: number) => number): void {
  for (let i = 0; i < a.length; i++) {
    const x = Math.fround(f(i))
    if (f32 || dtype === 'f32') (a as Float32Array)[i] = x
    else (a as Uint16Array)[i] = DTYPE_CODECS[dtype].encodeLane(x)
  }
}
function bitsEqual(a: ArrayBufferView, b: ArrayBufferView): number {
  const x = new Uint8Array(a.buffer, a.byteOffset, a.byteLength)
  const y = new Uint8Array(b.buffer, b.byteOffset, b.byteLength)
  for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return i
  return -1
}

interface NormSet {
  x: DevicePtr[]
  residual: DevicePtr[]
  out: DevicePtr[]
  weight: DevicePtr[]
  sum: DevicePtr[] // the unfused AllReduce's output
  hostX: TensorArray[]
  hostResidual: TensorArray
  hostWeight: TensorArray
}

function alloc(bytes: number, free: DevicePtr[]): DevicePtr {
  const p = d().memAlloc(Math.max(256, Math.ceil(bytes / 256) * 256))
  free.push(p)
  return p
}

/** Fresh data: x per rank in [-1, 1), the same residual on every rank (the tensor-parallel invariant), weights. */
function makeNormSet(
  comm: CudaCommunicator,
  dtype: Dtype,
  rows: number,
  hidden: number,
  residualF32: boolean,
  seed: number,
  free: DevicePtr[],
): NormSet {
  const random = rng(seed)
  const n = rows * hidden
  const eb = DTYPE_BYTES[dtype]
  const reb = elemBytes(dtype, residualF32)
  const hostX = Array.from({ length: comm.size }, () => {
    const a = newArray(dtype, n)
    fill(a, dtype, false, () => random() * 2 - 1)
    return a
  })
  const hostResidual = newArray(dtype, n, residualF32)
  fill(hostResidual, dtype, residualF32, () => random() * 4 - 2)
  const hostWeight = newArray(dtype, hidden)
  fill(hostWeight, dtype, false, () => 0.5 + random())
  const set: NormSet = { x: [], residual: [], out: [], weight: [], sum: [], hostX, hostResidual, hostWeight }
  for (let r = 0; r < comm.size; r++) {
    set.x.push(alloc(n * eb, free))
    set.residual.push(alloc(n * reb, free))
    set.out.push(alloc(n * eb, free))
    set.weight.push(alloc(hidden * eb, free))
    set.sum.push(alloc(n * eb, free))
    d().copyHtoD(set.x[r], hostX[r], n * eb)
    d().copyHtoD(set.weight[r], hostWeight, hidden * eb)
  }
  resetNormSet(set, n, dtype, residualF32)
  return set
}
function resetNormSet(set: NormSet, n: number, dtype: Dtype, residualF32: boolean): void {
  for (let r = 0; r < set.x.length; r++) {
    d().copyHtoD(set.residual[r], set.hostResidual, n * elemBytes(dtype, residualF32))
    d().memsetD32(set.out[r], POISON, Math.ceil((n * DTYPE_BYTES[dtype]) / 4))
  }
}
function readBack(ptrs: readonly DevicePtr[], dtype: Dtype, n: number, f32 = false): TensorArray[] {
  return ptrs.map((p) => {
    const a = newArray(dtype, n, f32)
    d().copyDtoH(a, p, a.byteLength)
    return a
  })
}

/**
 * The model of the kernels' arithmetic for the residual (bitwise) and the float64 RMSNorm (within tolerance):
 * returns [wrong residual elements, output elements off, worst relative error].
 */
function checkAgainstModel(
  set: Pick<NormSet, 'hostX' | 'hostResidual' | 'hostWeight'>,
  res: TensorArray,
  out: TensorArray,
  dtype: Dtype,
  rows: number,
  hidden: number,
  residualF32: boolean,
  eps = EPS,
): [number, number, number] {
  let wrongRes = 0
  let off = 0
  let worst = 0
  const r64 = new Float64Array(hidden)
  for (let row = 0; row < rows; row++) {
    let sq = 0
    for (let i = 0; i < hidden; i++) {
      const k = row * hidden + i
      let s = value(set.hostX[0], dtype, k)
      for (let q = 1; q < set.hostX.length; q++) s = Math.fround(s + value(set.hostX[q], dtype, k))
      const sumT = round(dtype, s)
      let r = Math.fround(value(set.hostResidual, dtype, k, residualF32) + sumT)
      if (!residualF32) r = round(dtype, r)
      if (value(res, dtype, k, residualF32) !== r) wrongRes++
      r64[i] = r
      sq += r * r
    }
    const inv = 1 / Math.sqrt(sq / hidden + eps)
    for (let i = 0; i < hidden; i++) {
      const want = r64[i] * inv * value(set.hostWeight, dtype, i)
      const got = value(out, dtype, row * hidden + i)
      const rel = Math.abs(got - want) / Math.max(Math.abs(want), 1e-2)
      worst = Math.max(worst, rel)
      if (!(rel <= TOLERANCE[dtype])) off++
    }
  }
  return [wrongRes, off, worst]
}

/** The fused kernels whose lanes hold at least one row of this shape (more rows go to further launches). */
function algorithmsFor(comm: CudaCommunicator, dtype: Dtype, hidden: number): FusedNormAlgorithm[] {
  const whole = (['oneshot', 'twoshot'] as const).filter(
    (a) => fusedRowsPerBlock(a, comm.size, hidden, dtype, comm.bufferBytes) > 0,
  )
  // The split kernels (a row over the blocks of a thread-block cluster): wherever some cluster size fits a row.
  const split = (['split', 'split-ll', 'split-twoshot'] as const).filter((a) =>
    FUSED_CLUSTER_SIZES.some((c) => fusedSplitRowsPerCluster(a, comm.size, hidden, dtype, c, comm.bufferBytes) > 0),
  )
  return [...whole, ...split]
}

/**
 * One recorded GPU case: `body` runs with a list its device allocations go to (freed after) and returns whether it
 * passed, the fields recorded with it and, on failure, why; a thrown error is recorded as a failure.
 */
type CaseOutcome = { passed: boolean; fields: Record<string, unknown>; why: string }
async function gpuCase(
  name: string,
  failures: string[],
  body: (free: DevicePtr[]) => CaseOutcome | Promise<CaseOutcome>,
): Promise<void> {
  const free: DevicePtr[] = []
  try {
    const { passed, fields, why } = await body(free)
    recordCase({ name, passed, ...fields })
    if (!passed) failures.push(`${name}: ${why}`)
  } catch (e) {
    const err = e as Error & { code?: string }
    recordCase({ name, passed: false, error: `${err.code ?? ''} ${err.message}` })
    failures.push(`${name}: ${err.message}`)
  } finally {
    for (const p of free) d().memFree(p)
  }
}

/** `body` on a communicator of `ranks` virtual ranks on device 0, for each of RANKS, with a stream; both closed after. */
async function forEachRankCount(
  body: (comm: CudaCommunicator, stream: CuStream, ranks: number) => void | Promise<void>,
): Promise<void> {
  for (const ranks of RANKS) {
    const comm = await createCudaCommunicator({ backend: 'cuda', devices: new Array(ranks).fill(0), timeoutMs: 5000 })
    const stream: CuStream = d().streamCreate()
    try {
      await body(comm, stream, ranks)
    } finally {
      d().streamDestroy(stream)
      await comm.close()
    }
  }
}

/** The fused call's arguments on `set`. */
const normArgs = (
  set: NormSet,
  shape: { rows: number; hidden: number; dtype: Dtype; residualF32?: boolean },
  algorithm: FusedNormAlgorithm,
  stream: CuStream,
) => ({
  inputs: set.x,
  residuals: set.residual,
  outputs: set.out,
  weights: set.weight,
  eps: EPS,
  ...shape,
  algorithm,
  stream,
})

/**
 * One fused call on `set` (args), then the unfused composition on fresh copies of the same inputs (deviceAllReduce
 * with `unfused`, then deviceRmsNorm); both read back and compared bit for bit: ranks whose residual or output differs
 * from rank 0's, and from the unfused composition's.
 */
function fusedAgainstUnfused(
  comm: CudaCommunicator,
  set: NormSet,
  args: DeviceAllReduceRmsNormArgs & { stream: CuStream },
  unfused: AlgorithmName,
): {
  info: ReturnType<CudaCommunicator['deviceAllReduceRmsNorm']>
  res: TensorArray[]
  out: TensorArray[]
  crossRank: number
  vsUnfused: number
} {
  const n = args.rows * args.hidden
  const f32 = args.residualF32 ?? false
  const info = comm.deviceAllReduceRmsNorm(args)
  d().streamSynchronize(args.stream)
  comm.checkDeviceError()
  const res = readBack(set.residual, args.dtype, n, f32)
  const out = readBack(set.out, args.dtype, n)
  resetNormSet(set, n, args.dtype, f32)
  comm.deviceAllReduce({
    inputs: set.x,
    outputs: set.sum,
    count: n,
    dtype: args.dtype,
    algorithm: unfused,
    fallback: false,
    stream: args.stream,
  })
  comm.deviceRmsNorm({ ...args, inputs: set.sum })
  d().streamSynchronize(args.stream)
  comm.checkDeviceError()
  const resU = readBack(set.residual, args.dtype, n, f32)
  const outU = readBack(set.out, args.dtype, n)
  let crossRank = 0
  let vsUnfused = 0
  for (let r = 0; r < res.length; r++) {
    if (bitsEqual(res[r], res[0]) >= 0 || bitsEqual(out[r], out[0]) >= 0) crossRank++
    if (bitsEqual(res[r], resU[r]) >= 0 || bitsEqual(out[r], outU[r]) >= 0) vsUnfused++
  }
  return { info, res, out, crossRank, vsUnfused }
}

/** The unfused AllReduce a fused algorithm is compared with (every llcomm AllReduce gives the same bits). */
const unfusedOf = (a: FusedNormAlgorithm) => (a === 'twoshot' ? 'twoshot-sentinel' : 'oneshot-sentinel')

test('fused AllReduce + residual + RMSNorm: model-exact residual, RMSNorm within rounding, equal on every rank and to the unfused composition', {
  skip: !ON_GPU,
}, async () => {
  const failures: string[] = []
  await forEachRankCount(async (comm, stream, ranks) => {
    let seed = 100 * ranks
    for (const dtype of DTYPES as Dtype[])
      for (const hidden of HIDDEN)
        for (const rows of ROWS)
          for (const residualF32 of dtype === 'bf16' ? [false, true] : [false])
            for (const algorithm of algorithmsFor(comm, dtype, hidden)) {
              const name = `fused/rmsnorm/${algorithm}/${dtype}${residualF32 ? '+f32res' : ''}/ranks=${ranks}/rows=${rows}/hidden=${hidden}`
              await gpuCase(name, failures, (free) => {
                const set = makeNormSet(comm, dtype, rows, hidden, residualF32, seed++, free)
                const args = normArgs(set, { rows, hidden, dtype, residualF32 }, algorithm, stream)
                const { info, res, out, crossRank, vsUnfused } = fusedAgainstUnfused(
                  comm,
                  set,
                  args,
                  unfusedOf(algorithm),
                )
                const [wrongRes, off, worst] = checkAgainstModel(set, res[0], out[0], dtype, rows, hidden, residualF32)
                return {
                  passed:
                    wrongRes === 0 && off === 0 && crossRank === 0 && vsUnfused === 0 && info.algorithm === algorithm,
                  fields: {
                    wrongResidual: wrongRes,
                    outOff: off,
                    worstRelError: worst,
                    crossRank,
                    vsUnfused,
                    launches: info.launches,
                  },
                  why: `residual wrong ${wrongRes}, out off ${off} (worst ${worst}), ranks differ ${crossRank}, vs unfused ${vsUnfused}`,
                }
              })
            }
  })
  assert.deepEqual(failures, [])
})

/**
 * Row 0 of every rank's x gets the values the protocols must carry untouched, element i by i % 53 (as
 * test/kernels/emulator/fused_emulator.cpp LLCOMM_EMU_ADVERSARIAL): the sentinel's bits (last rank), +Inf (rank 0),
 * +Inf and -Inf (ranks 0 and 1: NaN), -0 everywhere, the smallest subnormal everywhere, a NaN with a payload (rank
 * n / 2), the largest finite value everywhere (overflow). Returns the count of elements set.
 */
function makeAdversarial(set: NormSet, dtype: Dtype, hidden: number): number {
  const f32 = dtype === 'f32'
  const bits = {
    sentinel: f32 ? 0xffffffff : 0xffff,
    nan: f32 ? 0x7fc00001 : dtype === 'f16' ? 0x7e01 : 0x7fc1,
    posInf: f32 ? 0x7f800000 : dtype === 'f16' ? 0x7c00 : 0x7f80,
    sign: f32 ? 0x80000000 : 0x8000,
    maxFinite: f32 ? 0x7f7fffff : dtype === 'f16' ? 0x7bff : 0x7f7f,
  }
  const n = set.hostX.length
  let count = 0
  set.hostX.forEach((a, r) => {
    const view = f32 ? new Uint32Array(a.buffer, a.byteOffset, a.length) : (a as Uint16Array)
    for (let i = 0; i < hidden; i++) {
      const m = i % 53
      const v =
        m === 7 && r === n - 1
          ? bits.sentinel
          : m === 11 && r === 0
            ? bits.posInf
            : m === 13 && r <= 1
              ? (bits.posInf | (r === 1 ? bits.sign : 0)) >>> 0
              : m === 17
                ? bits.sign
                : m === 19
                  ? 1
                  : m === 23 && r === n >> 1
                    ? bits.nan
                    : m === 29
                      ? bits.maxFinite
                      : undefined
      if (v === undefined) continue
      view[i] = v
      count++
    }
    d().copyHtoD(set.x[r], a, a.byteLength)
  })
  return count
}

test("fused RMSNorm with adversarial values (NaN, +-Inf, -0, subnormals, overflow, the sentinel's bits): bit for bit equal on every rank and to the unfused composition", {
  skip: !ON_GPU,
}, async () => {
  const failures: string[] = []
  await forEachRankCount(async (comm, stream, ranks) => {
    for (const dtype of DTYPES as Dtype[])
      for (const [rows, hidden] of [
        [1, 4096],
        [4, 8192],
        [3, 264],
      ] as const)
        for (const algorithm of algorithmsFor(comm, dtype, hidden)) {
          const name = `fused/adversarial/${algorithm}/${dtype}/ranks=${ranks}/rows=${rows}/hidden=${hidden}`
          await gpuCase(name, failures, (free) => {
            const set = makeNormSet(comm, dtype, rows, hidden, false, 9000 + rows + hidden, free)
            const specials = makeAdversarial(set, dtype, hidden)
            const args = normArgs(set, { rows, hidden, dtype }, algorithm, stream)
            const { res, crossRank, vsUnfused } = fusedAgainstUnfused(comm, set, args, 'oneshot-sentinel')
            // the special values reached the output: row 0 is not finite
            let nonFinite = 0
            for (let i = 0; i < hidden; i++) if (!Number.isFinite(value(res[0], dtype, i))) nonFinite++
            return {
              passed: crossRank === 0 && vsUnfused === 0 && nonFinite > 0,
              fields: { crossRank, vsUnfused, nonFinite, specials },
              why: `ranks differ ${crossRank}, vs unfused ${vsUnfused}, non-finite ${nonFinite}`,
            }
          })
        }
  })
  assert.deepEqual(failures, [])
})

test('fused RMSNorm in a captured graph: replays on fresh data give the eager results', { skip: !ON_GPU }, async () => {
  const ranks = 8
  const replays = REDUCED ? 40 : 400
  const comm = await createCudaCommunicator({ backend: 'cuda', devices: new Array(ranks).fill(0), timeoutMs: 5000 })
  const { CapturedGraph } = await import('../../src/backends/cuda/graph.js')
  const stream: CuStream = d().streamCreate()
  const failures: string[] = []
  const free: DevicePtr[] = []
  try {
    for (const [dtype, rows, hidden, algorithm] of [
      ['bf16', 4, 4096, 'oneshot'],
      ['bf16', 16, 8192, 'twoshot'],
      ['f32', 2, 4096, 'twoshot'],
      ['bf16', 1, 4096, 'split-ll'],
      ['bf16', 4, 8192, 'split'],
      ['bf16', 8, 8192, 'split-twoshot'],
    ] as const) {
      const name = `fused/graph/${algorithm}/${dtype}/rows=${rows}/hidden=${hidden}`
      const n = rows * hidden
      const eb = DTYPE_BYTES[dtype]
      const pool = Array.from({ length: 4 }, (_, k) => makeNormSet(comm, dtype, rows, hidden, false, 7000 + k, free))
      // Expected: each pool set once, eagerly.
      const expected = pool.map((s) => {
        comm.deviceAllReduceRmsNorm({
          inputs: s.x,
          residuals: s.residual,
          outputs: s.out,
          weights: s.weight,
          rows,
          hidden,
          eps: EPS,
          dtype,
          algorithm,
          stream,
        })
        d().streamSynchronize(stream)
        const e = { res: readBack(s.residual, dtype, n), out: readBack(s.out, dtype, n) }
        resetNormSet(s, n, dtype, false)
        return e
      })
      const work = makeNormSet(comm, dtype, rows, hidden, false, 1, free)
      const call = comm.prepareDeviceAllReduceRmsNorm({
        inputs: work.x,
        residuals: work.residual,
        outputs: work.out,
        weights: work.weight,
        rows,
        hidden,
        eps: EPS,
        dtype,
        algorithm,
        stream,
      })
      const resultRes = pool.map(() => Array.from({ length: ranks }, () => alloc(n * eb, free)))
      const resultOut = pool.map(() => Array.from({ length: ranks }, () => alloc(n * eb, free)))
      // G_k: pool set k's x and initial residual into the work buffers, the fused call, the results out.
      const graphs = pool.map((s, k) =>
        CapturedGraph.capture(
          d(),
          [stream],
          () => {},
          () => {
            // The whole of pool set k's inputs: x, the initial residual and the weights (the eager results used
            // set k's weights too).
            for (let r = 0; r < ranks; r++) {
              d().copyDtoDAsync(work.x[r], s.x[r], n * eb, stream)
              d().copyDtoDAsync(work.residual[r], s.residual[r], n * eb, stream)
              d().copyDtoDAsync(work.weight[r], s.weight[r], hidden * eb, stream)
            }
            call.issue([stream])
            for (let r = 0; r < ranks; r++) {
              d().copyDtoDAsync(resultRes[k][r], work.residual[r], n * eb, stream)
              d().copyDtoDAsync(resultOut[k][r], work.out[r], n * eb, stream)
            }
          },
        ),
      )
      let bad = 0
      let checked = 0
      for (let i = 0; i < replays; i++) {
        graphs[i % pool.length].replay(stream)
        if ((i + 1) % (replays / 4) === 0) {
          d().streamSynchronize(stream)
          comm.checkDeviceError()
          for (let k = 0; k < pool.length; k++) {
            const res = readBack(resultRes[k], dtype, n)
            const out = readBack(resultOut[k], dtype, n)
            checked++
            for (let r = 0; r < ranks; r++)
              if (bitsEqual(res[r], expected[k].res[r]) >= 0 || bitsEqual(out[r], expected[k].out[r]) >= 0) {
                bad++
                break
              }
            for (const p of resultOut[k]) d().memsetD32Async(p, POISON, Math.ceil((n * eb) / 4), stream)
          }
        }
      }
      d().streamSynchronize(stream)
      for (const g of graphs) g.destroy()
      const passed = bad === 0 && checked > 0
      recordCase({ name, passed, replays, checked, bad })
      if (!passed) failures.push(`${name}: ${bad}/${checked} checks differ from the eager results`)
    }
  } finally {
    for (const p of free) d().memFree(p)
    d().streamDestroy(stream)
    await comm.close()
  }
  assert.deepEqual(failures, [])
})

test('allReduceMany: one launch, bitwise equal to one oneshot-sentinel AllReduce per buffer (device and host view)', {
  skip: !ON_GPU,
}, async () => {
  const failures: string[] = []
  await forEachRankCount(async (comm, stream, ranks) => {
    for (const dtype of DTYPES as Dtype[])
      for (const counts of [
        [4096, 1, 37, 8192, 300],
        [1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
        [100_000, 17],
      ]) {
        const name = `fused/many/${dtype}/ranks=${ranks}/counts=${counts.join(',')}`
        await gpuCase(name, failures, async (free) => {
          const random = rng(ranks * 31 + counts.length)
          const eb = DTYPE_BYTES[dtype]
          const host = counts.map((c) =>
            Array.from({ length: ranks }, () => {
              const a = newArray(dtype, c)
              fill(a, dtype, false, () => random() * 2 - 1)
              return a
            }),
          )
          const ins = counts.map((c, b) =>
            host[b].map((a) => {
              const p = alloc(c * eb, free)
              d().copyHtoD(p, a, c * eb)
              return p
            }),
          )
          const outs = counts.map((c) => host[0].map(() => alloc(c * eb, free)))
          const one = counts.map((c) => host[0].map(() => alloc(c * eb, free)))
          const info = comm.deviceAllReduceMany({ inputs: ins, outputs: outs, counts, dtype, stream })
          for (const [b, c] of counts.entries())
            comm.deviceAllReduce({
              inputs: ins[b],
              outputs: one[b],
              count: c,
              dtype,
              algorithm: 'oneshot-sentinel',
              fallback: false,
              stream,
            })
          d().streamSynchronize(stream)
          comm.checkDeviceError()
          let diffs = 0
          for (const [b, c] of counts.entries()) {
            const got = readBack(outs[b], dtype, c)
            const want = readBack(one[b], dtype, c)
            for (let r = 0; r < ranks; r++)
              if (bitsEqual(got[r], want[r]) >= 0 || bitsEqual(got[r], got[0]) >= 0) diffs++
          }
          const hostView = await comm.allReduceMany(host, { dtype })
          let hostDiffs = 0
          for (const [b, c] of counts.entries()) {
            const want = readBack(one[b], dtype, c)
            for (let r = 0; r < ranks; r++) if (bitsEqual(hostView[b][r], want[r]) >= 0) hostDiffs++
          }
          const oneLaunch = counts.length <= 8 && counts.reduce((a, c) => a + c, 0) * eb <= 64 * 1024
          return {
            passed: diffs === 0 && hostDiffs === 0 && (!oneLaunch || info.launches === 1),
            fields: { diffs, hostDiffs, launches: info.launches },
            why: `${diffs} device / ${hostDiffs} host buffers differ; launches ${info.launches}`,
          }
        })
      }
  })
  assert.deepEqual(failures, [])
})

/** FP8 e4m3 bits to a number (no infinities; 0x7F / 0xFF are NaN). */
function e4m3ToNumber(b: number): number {
  const s = b & 0x80 ? -1 : 1
  const e = (b >> 3) & 15
  const m = b & 7
  if (e === 15 && m === 7) return Number.NaN
  return e === 0 ? s * m * 2 ** -9 : s * (1 + m / 8) * 2 ** (e - 7)
}

test('fused RMSNorm with an FP8 e4m3 output: within half a step of float64 × scale, equal on every rank and to the unfused composition', {
  skip: !ON_GPU,
}, async () => {
  const failures: string[] = []
  const outScale = 4
  await forEachRankCount(async (comm, stream, ranks) => {
    for (const dtype of ['bf16', 'f32'] as Dtype[])
      for (const rows of [1, 16])
        for (const algorithm of algorithmsFor(comm, dtype, 4096)) {
          const hidden = 4096
          const name = `fused/rmsnorm-e4m3/${algorithm}/${dtype}/ranks=${ranks}/rows=${rows}`
          await gpuCase(name, failures, (free) => {
            const n = rows * hidden
            const set = makeNormSet(comm, dtype, rows, hidden, false, 4000 + rows, free)
            const q = Array.from({ length: ranks }, () => alloc(n, free))
            const args = {
              inputs: set.x,
              residuals: set.residual,
              outputs: q,
              weights: set.weight,
              rows,
              hidden,
              eps: EPS,
              dtype,
              algorithm,
              outDtype: 'e4m3' as const,
              outScale,
              stream,
            }
            comm.deviceAllReduceRmsNorm(args)
            d().streamSynchronize(stream)
            comm.checkDeviceError()
            const res = readBack(set.residual, dtype, n)
            const got = q.map((p) => {
              const a = new Uint8Array(n)
              d().copyDtoH(a, p, n)
              return a
            })
            resetNormSet(set, n, dtype, false)
            comm.deviceAllReduce({
              inputs: set.x,
              outputs: set.sum,
              count: n,
              dtype,
              algorithm: unfusedOf(algorithm),
              fallback: false,
              stream,
            })
            comm.deviceRmsNorm({ ...args, inputs: set.sum })
            d().streamSynchronize(stream)
            comm.checkDeviceError()
            let crossRank = 0
            let vsUnfused = 0
            for (let r = 0; r < ranks; r++) {
              const u = new Uint8Array(n)
              d().copyDtoH(u, q[r], n)
              if (bitsEqual(got[r], got[0]) >= 0) crossRank++
              if (bitsEqual(got[r], u) >= 0) vsUnfused++
            }
            // The float64 RMSNorm of the (model-exact, checked in the test above) residual, times the scale.
            let off = 0
            let worst = 0
            for (let row = 0; row < rows; row++) {
              let sq = 0
              for (let i = 0; i < hidden; i++) sq += value(res[0], dtype, row * hidden + i) ** 2
              const inv = 1 / Math.sqrt(sq / hidden + EPS)
              for (let i = 0; i < hidden; i++) {
                const k = row * hidden + i
                const want = Math.max(
                  -448,
                  Math.min(448, value(res[0], dtype, k) * inv * value(set.hostWeight, dtype, i) * outScale),
                )
                const rel = Math.abs(e4m3ToNumber(got[0][k]) - want) / Math.max(Math.abs(want), 1 / 64)
                worst = Math.max(worst, rel)
                if (!(rel <= 0.07)) off++
              }
            }
            return {
              passed: off === 0 && crossRank === 0 && vsUnfused === 0,
              fields: { outOff: off, worstRelError: worst, crossRank, vsUnfused },
              why: `${off} off (worst ${worst}), ranks differ ${crossRank}, vs unfused ${vsUnfused}`,
            }
          })
        }
  })
  assert.deepEqual(failures, [])
})

/** Which pool set each argument of one eager call comes from (the weights per rank), and its eps. */
interface EagerSources {
  x: number
  residual: number
  out: number
  weight: readonly number[]
  eps: number
}

test('eager fused RMSNorm reused across calls: each call follows its own pointers, weights, eps and arrays changed in place; nothing else is written', {
  skip: !ON_GPU,
}, async () => {
  const failures: string[] = []
  const rows = 4
  const hidden = 4096
  const n = rows * hidden
  for (const ranks of RANKS) {
    const comm = await createCudaCommunicator({ backend: 'cuda', devices: new Array(ranks).fill(0), timeoutMs: 5000 })
    const stream: CuStream = d().streamCreate()
    try {
      for (const dtype of ['bf16', 'f32'] as Dtype[])
        for (const algorithm of ['auto', 'twoshot'] as const) {
          const free: DevicePtr[] = []
          try {
            const pool = [0, 1, 2].map((k) =>
              makeNormSet(comm, dtype, rows, hidden, false, 9100 + 10 * ranks + k, free),
            )
            const all = (k: number) => new Array<number>(ranks).fill(k)
            const argsOf = (k: number): DeviceAllReduceRmsNormArgs => ({
              // copies: the steps below change some of these arrays in place
              inputs: [...pool[k].x],
              residuals: [...pool[k].residual],
              outputs: [...pool[k].out],
              weights: [...pool[k].weight],
              rows,
              hidden,
              eps: EPS,
              dtype,
              algorithm,
              stream,
            })
            const a = argsOf(0)
            const s0: EagerSources = { x: 0, residual: 0, out: 0, weight: all(0), eps: EPS }
            // Each step: the arguments of the call (`a` changed in place, or another object) and where they point.
            const steps: [string, () => [DeviceAllReduceRmsNormArgs, EagerSources]][] = [
              ['first call', () => [a, s0]],
              ['the same object again', () => [a, s0]],
              ['an equal fresh object', () => [{ ...a }, s0]],
              ['set 1 pointers', () => [argsOf(1), { x: 1, residual: 1, out: 1, weight: all(1), eps: EPS }]],
              ['set 0 again', () => [a, s0]],
              [
                'weights of set 2 (new array)',
                () => [
                  { ...a, weights: [...pool[2].weight] },
                  { ...s0, weight: all(2) },
                ],
              ],
              [
                'eps 1',
                () => [
                  { ...a, eps: 1 },
                  { ...s0, eps: 1 },
                ],
              ],
              [
                'weights changed in place (set 1)',
                () => {
                  for (let r = 0; r < ranks; r++) (a.weights as DevicePtr[])[r] = pool[1].weight[r]
                  return [a, { ...s0, weight: all(1) }]
                },
              ],
              [
                'one rank weight changed in place (set 2)',
                () => {
                  ;(a.weights as DevicePtr[])[ranks - 1] = pool[2].weight[ranks - 1]
                  return [a, { ...s0, weight: [...all(1).slice(0, ranks - 1), 2] }]
                },
              ],
              [
                'residuals changed in place (set 2)',
                () => {
                  for (let r = 0; r < ranks; r++) (a.residuals as DevicePtr[])[r] = pool[2].residual[r]
                  return [a, { ...s0, residual: 2, weight: [...all(1).slice(0, ranks - 1), 2] }]
                },
              ],
              [
                'outputs changed in place (set 1)',
                () => {
                  for (let r = 0; r < ranks; r++) (a.outputs as DevicePtr[])[r] = pool[1].out[r]
                  return [a, { ...s0, residual: 2, out: 1, weight: [...all(1).slice(0, ranks - 1), 2] }]
                },
              ],
              [
                'inputs changed in place (set 2)',
                () => {
                  for (let r = 0; r < ranks; r++) (a.inputs as DevicePtr[])[r] = pool[2].x[r]
                  return [a, { x: 2, residual: 2, out: 1, weight: [...all(1).slice(0, ranks - 1), 2], eps: EPS }]
                },
              ],
              [
                'eps of the object changed',
                () => {
                  a.eps = 1
                  return [a, { x: 2, residual: 2, out: 1, weight: [...all(1).slice(0, ranks - 1), 2], eps: 1 }]
                },
              ],
              ['set 0 once more (a fresh object, after more calls than the cache keeps)', () => [argsOf(0), s0]],
            ]
            for (const [what, step] of steps) {
              const name = `fused/eager-reuse/${algorithm}/${dtype}/ranks=${ranks}/${what}`
              for (const s of pool) resetNormSet(s, n, dtype, false)
              d().contextSynchronize() // the resets (null stream) are done before the call on `stream`
              const [args, src] = step()
              comm.deviceAllReduceRmsNorm(args)
              d().streamSynchronize(stream)
              comm.checkDeviceError()
              const res = readBack(pool[src.residual].residual, dtype, n)
              const out = readBack(pool[src.out].out, dtype, n)
              let wrongRes = 0
              let off = 0
              let worst = 0
              let crossRank = 0
              for (let r = 0; r < ranks; r++) {
                if (bitsEqual(res[r], res[0]) >= 0) crossRank++
                const model = {
                  hostX: pool[src.x].hostX,
                  hostResidual: pool[src.residual].hostResidual,
                  hostWeight: pool[src.weight[r]].hostWeight,
                }
                const [w, o, worstR] = checkAgainstModel(model, res[r], out[r], dtype, rows, hidden, false, src.eps)
                wrongRes += w
                off += o
                worst = Math.max(worst, worstR)
              }
              // Nothing but the targets written: the other sets' outputs still poison, their residuals as set.
              let strayWrites = 0
              for (const [k, s] of pool.entries()) {
                if (k !== src.out)
                  for (const o of readBack(s.out, dtype, n))
                    if (new Uint32Array(o.buffer, o.byteOffset, o.byteLength / 4).some((w) => w !== POISON))
                      strayWrites++
                if (k !== src.residual)
                  for (const r of readBack(s.residual, dtype, n)) if (bitsEqual(r, s.hostResidual) >= 0) strayWrites++
              }
              const passed = wrongRes === 0 && off === 0 && crossRank === 0 && strayWrites === 0
              recordCase({
                name,
                passed,
                wrongResidual: wrongRes,
                outOff: off,
                worstRelError: worst,
                crossRank,
                strayWrites,
              })
              if (!passed)
                failures.push(
                  `${name}: residual wrong ${wrongRes}, out off ${off} (worst ${worst}), ranks differ ${crossRank}, stray writes ${strayWrites}`,
                )
            }
          } catch (e) {
            const err = e as Error & { code?: string }
            const name = `fused/eager-reuse/${algorithm}/${dtype}/ranks=${ranks}`
            recordCase({ name, passed: false, error: `${err.code ?? ''} ${err.message}` })
            failures.push(`${name}: ${err.message}`)
          } finally {
            d().streamSynchronize(stream)
            for (const p of free) d().memFree(p)
          }
        }
    } finally {
      d().streamDestroy(stream)
      await comm.close()
    }
  }
  assert.deepEqual(failures, [])
})

test('eager allReduceMany reused across calls: pointer lists and counts changed in place are followed; nothing else is written', {
  skip: !ON_GPU,
}, async () => {
  const failures: string[] = []
  const counts = [4096, 300]
  for (const ranks of RANKS) {
    const comm = await createCudaCommunicator({ backend: 'cuda', devices: new Array(ranks).fill(0), timeoutMs: 5000 })
    const stream: CuStream = d().streamCreate()
    try {
      for (const dtype of ['bf16', 'f32'] as Dtype[]) {
        const free: DevicePtr[] = []
        try {
          const eb = DTYPE_BYTES[dtype]
          const random = rng(9300 + ranks)
          // two input sets and two output sets per buffer: ins[set][b][rank], outs[set][b][rank]
          const ins = [0, 1].map(() =>
            counts.map((c) =>
              Array.from({ length: ranks }, () => {
                const a = newArray(dtype, c)
                fill(a, dtype, false, () => random() * 2 - 1)
                const p = alloc(c * eb, free)
                d().copyHtoD(p, a, c * eb)
                return p
              }),
            ),
          )
          const outs = [0, 1].map(() => counts.map((c) => Array.from({ length: ranks }, () => alloc(c * eb, free))))
          /** One oneshot-sentinel AllReduce of `count` elements of input set `set`, buffer b (the reference bits). */
          const reference = (set: number, b: number, count: number) => {
            const o = Array.from({ length: ranks }, () => alloc(counts[b] * eb, free))
            comm.deviceAllReduce({
              inputs: ins[set][b],
              outputs: o,
              count,
              dtype,
              algorithm: 'oneshot-sentinel',
              fallback: false,
              stream,
            })
            d().streamSynchronize(stream)
            return readBack(o, dtype, count)
          }
          const a: DeviceAllReduceManyArgs = {
            inputs: ins[0].map((l) => [...l]),
            outputs: outs[0].map((l) => [...l]),
            counts: [...counts],
            dtype,
            stream,
          }
          // Each step: the change, then per buffer [input set, output set, count].
          const steps: [string, () => void, [number, number, number][]][] = [
            ['first call', () => {}, counts.map((c) => [0, 0, c])],
            ['again', () => {}, counts.map((c) => [0, 0, c])],
            [
              'outputs[1] changed in place',
              () => {
                for (let r = 0; r < ranks; r++) (a.outputs[1] as DevicePtr[])[r] = outs[1][1][r]
              },
              [
                [0, 0, counts[0]],
                [0, 1, counts[1]],
              ],
            ],
            [
              'inputs[0] replaced in place',
              () => {
                ;(a.inputs as DevicePtr[][])[0] = [...ins[1][0]]
              },
              [
                [1, 0, counts[0]],
                [0, 1, counts[1]],
              ],
            ],
            [
              'counts[0] changed in place',
              () => {
                ;(a.counts as number[])[0] = 1000
              },
              [
                [1, 0, 1000],
                [0, 1, counts[1]],
              ],
            ],
          ]
          for (const [what, change, expect] of steps) {
            const name = `fused/many-eager-reuse/${dtype}/ranks=${ranks}/${what}`
            for (const set of outs)
              for (const [b, c] of counts.entries())
                for (const p of set[b]) d().memsetD32(p, POISON, Math.ceil((c * eb) / 4))
            d().contextSynchronize() // the poison (null stream) is in place before the call on `stream`
            change()
            comm.deviceAllReduceMany(a)
            d().streamSynchronize(stream)
            comm.checkDeviceError()
            let diffs = 0
            let strayWrites = 0
            for (const [b, [inSet, outSet, count]] of expect.entries()) {
              const want = reference(inSet, b, count)
              const got = readBack(outs[outSet][b], dtype, counts[b])
              for (let r = 0; r < ranks; r++) {
                const g = got[r]
                if (bitsEqual(g.subarray(0, count), want[r]) >= 0) diffs++
                // past `count` (from the next 16-byte slot: the kernels move whole slots) and the other output
                // set: still poison
                const tail = new Uint8Array(
                  g.buffer,
                  g.byteOffset + Math.min(g.byteLength, Math.ceil((count * eb) / 16) * 16),
                )
                const poison = new Uint8Array(new Uint32Array([POISON]).buffer)
                if (tail.some((x, i) => x !== poison[i % 4])) strayWrites++
              }
              for (const o of readBack(outs[1 - outSet][b], dtype, counts[b]))
                if (new Uint32Array(o.buffer, o.byteOffset, Math.floor(o.byteLength / 4)).some((w) => w !== POISON))
                  strayWrites++
            }
            const passed = diffs === 0 && strayWrites === 0
            recordCase({ name, passed, diffs, strayWrites })
            if (!passed)
              failures.push(`${name}: ${diffs} buffers differ from the reference, ${strayWrites} stray writes`)
          }
        } catch (e) {
          const err = e as Error & { code?: string }
          const name = `fused/many-eager-reuse/${dtype}/ranks=${ranks}`
          recordCase({ name, passed: false, error: `${err.code ?? ''} ${err.message}` })
          failures.push(`${name}: ${err.message}`)
        } finally {
          d().streamSynchronize(stream)
          for (const p of free) d().memFree(p)
        }
      }
    } finally {
      d().streamDestroy(stream)
      await comm.close()
    }
  }
  assert.deepEqual(failures, [])
})
