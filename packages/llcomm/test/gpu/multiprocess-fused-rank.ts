// One rank of test/gpu/multiprocess-fused.test.ts (not a test file): a per-process cuda communicator on device
// $LLCOMM_TEST_DEVICE (default 0) making every call of fusedShapes() with deviceAllReduceRmsNorm on this rank's
// buffers (multiprocess-fused-data.ts), then, when $LLCOMM_TEST_MISMATCH_ROWS is set, one more call where the last
// rank passes that many rows instead of the others' (bf16, 4 rows of 4096, 'auto'). Prints one `RESULT {...}` line:
// per call the residual's and output's sha256 (or the error code of a refused call), and the mismatched call's error.
// With $LLCOMM_TEST_SECTION=many instead: every group of manyGroups() with deviceAllReduceMany (each output's
// sha256), then, when $LLCOMM_TEST_MISMATCH_COUNT is set, MANY_MISMATCH_GROUP with the last rank passing that count
// for buffer 1.
import { createHash } from 'node:crypto'
import { DTYPE_BYTES, type TensorArray } from '../../src/api/types.js'
import type { CudaProcessCommunicator } from '../../src/backends/cuda/process-communicator.js'
import { createCommunicator } from '../../src/create.js'
import { LlcommError } from '../../src/errors.js'
import { cudaDriver, type DevicePtr } from '../../src/ffi/index.js'
import { errorInfo } from '../support/error-info.js'
import {
  allocBytes,
  EPS,
  type FusedShape,
  fusedInputs,
  fusedShapes,
  MANY_MISMATCH_GROUP,
  type ManyGroup,
  manyGroups,
  manyInputs,
} from './multiprocess-fused-data.js'

const rank = Number(process.env.LLCOMM_RANK)
const TIMEOUT_MS = 4000
const hash = (a: TensorArray) =>
  createHash('sha256')
    .update(new Uint8Array(a.buffer, a.byteOffset, a.byteLength))
    .digest('hex')

async function main(): Promise<void> {
  const comm = (await createCommunicator({
    backend: 'cuda',
    rendezvous: 'env',
    device: Number(process.env.LLCOMM_TEST_DEVICE ?? 0),
    timeoutMs: TIMEOUT_MS,
    rendezvousTimeoutMs: 120_000,
  })) as CudaProcessCommunicator
  const d = cudaDriver()
  const stream = d.streamCreate()
  /** One call of shape `s` on this rank's buffers: the residual and output read back, or the refusal's code. */
  const call = (s: FusedShape, index: number, rows = s.rows) => {
    const { x, residual, weight } = fusedInputs(s, index, rank)
    const eb = DTYPE_BYTES[s.dtype]
    const bytes = s.rows * s.hidden * eb
    const ptrs = [bytes, bytes, bytes, s.hidden * eb].map((b) => d.memAlloc(b) as DevicePtr)
    const [px, pr, po, pw] = ptrs
    try {
      d.copyHtoD(px, x, bytes)
      d.copyHtoD(pr, residual, bytes)
      d.copyHtoD(pw, weight, s.hidden * eb)
      d.contextSynchronize()
      const info = comm.deviceAllReduceRmsNorm({
        input: px,
        residual: pr,
        output: po,
        weight: pw,
        rows,
        hidden: s.hidden,
        eps: EPS,
        dtype: s.dtype,
        algorithm: s.algorithm,
        stream,
      })
      d.streamSynchronize(stream)
      comm.checkDeviceError()
      const res = x.slice() as TensorArray
      const out = x.slice() as TensorArray
      d.copyDtoH(res, pr, bytes)
      d.copyDtoH(out, po, bytes)
      return { algorithm: info.algorithm, launches: info.launches, residual: hash(res), out: hash(out) }
    } catch (e) {
      if (e instanceof LlcommError && (e.code === 'INVALID_ARGUMENT' || e.code === 'UNSUPPORTED_ALGORITHM'))
        return { refused: e.code }
      throw e
    } finally {
      for (const p of ptrs) d.memFree(p)
    }
  }
  /** One allReduceMany of group `g` on this rank's buffers (`counts`: this rank's, g.counts unless mismatched). */
  const callMany = (g: ManyGroup, index: number, counts = g.counts) => {
    const inputs = manyInputs(g, index, rank)
    const eb = DTYPE_BYTES[g.dtype]
    const ins = g.counts.map((n) => d.memAlloc(allocBytes(n * eb)) as DevicePtr)
    const outs = g.counts.map((n) => d.memAlloc(allocBytes(n * eb)) as DevicePtr)
    try {
      for (const [b, n] of g.counts.entries()) if (n > 0) d.copyHtoD(ins[b], inputs[b], n * eb)
      d.contextSynchronize()
      const info = comm.deviceAllReduceMany({ inputs: ins, outputs: outs, counts, dtype: g.dtype, stream })
      d.streamSynchronize(stream)
      comm.checkDeviceError()
      const outputs = g.counts.map((n, b) => {
        const a = inputs[b].slice() as TensorArray
        if (n > 0) d.copyDtoH(a, outs[b], n * eb)
        return hash(a)
      })
      return { algorithm: info.algorithm, launches: info.launches, outputs }
    } finally {
      for (const p of [...ins, ...outs]) d.memFree(p)
    }
  }
  const manySection = process.env.LLCOMM_TEST_SECTION === 'many'
  const results = manySection ? manyGroups().map((g, i) => callMany(g, i)) : fusedShapes().map((s, i) => call(s, i))
  // The host view (comm.allReduceMany) on every many group: 'auto' (one deviceAllReduceMany: the device call's
  // outputs, compared by the test) and a forced algorithm (the group signature launch, then one allReduce per
  // buffer: each output against allReduce of the buffer alone, here).
  const hostView: { auto: string[]; forced: string[]; alone: string[] }[] = []
  if (manySection)
    for (const [index, g] of manyGroups().entries()) {
      const inputs = manyInputs(g, index, rank)
      const auto = await comm.allReduceMany(inputs, { dtype: g.dtype })
      const forced = await comm.allReduceMany(inputs, { dtype: g.dtype, algorithm: 'oneshot-ll' })
      const alone: string[] = []
      for (const x of inputs) alone.push(hash(await comm.allReduce(x, { dtype: g.dtype, algorithm: 'oneshot-ll' })))
      hostView.push({ auto: auto.map(hash), forced: forced.map(hash), alone })
    }
  let failure: Record<string, unknown> | undefined
  const mismatchRows = process.env.LLCOMM_TEST_MISMATCH_ROWS
  const mismatchCount = process.env.LLCOMM_TEST_MISMATCH_COUNT
  /** A call that must fail on every rank: its error, and how long it took. */
  const mismatched = (f: () => unknown) => {
    const started = performance.now()
    let out: Record<string, unknown>
    try {
      f()
      out = { code: 'NONE', message: 'the mismatched call returned data' }
    } catch (e) {
      out = errorInfo(e)
    }
    out.ms = performance.now() - started
    return out
  }
  const last = rank === comm.size - 1
  if (manySection && mismatchCount) {
    const g = MANY_MISMATCH_GROUP
    failure = mismatched(() =>
      callMany(
        g,
        9999,
        g.counts.map((n, b) => (last && b === 1 ? Number(mismatchCount) : n)),
      ),
    )
  } else if (!manySection && mismatchRows) {
    const s: FusedShape = { dtype: 'bf16', rows: 4, hidden: 4096, algorithm: 'auto' }
    failure = mismatched(() => call(s, 9999, last ? Number(mismatchRows) : s.rows))
  }
  if (failure) {
    // No rank frees what its peers map while their kernels may still run to their deadline.
    await new Promise((resolve) => setTimeout(resolve, 2 * TIMEOUT_MS + 2000))
  }
  d.streamDestroy(stream)
  await comm.close()
  process.stdout.write(`RESULT ${JSON.stringify({ rank, results, failure, hostView })}\n`)
}

main().catch((e: unknown) => {
  const error =
    e instanceof LlcommError ? { code: e.code, message: e.message, details: e.details } : { message: String(e) }
  process.stdout.write(`RESULT ${JSON.stringify({ rank, error })}\n`)
  process.exitCode = 1
})
