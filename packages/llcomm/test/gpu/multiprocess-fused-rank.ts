// One rank of test/gpu/multiprocess-fused.test.ts (not a test file): a per-process cuda communicator on device
// $LLCOMM_TEST_DEVICE (default 0) making every call of fusedShapes() with deviceAllReduceRmsNorm on this rank's
// buffers (multiprocess-fused-data.ts), then, when $LLCOMM_TEST_MISMATCH_ROWS is set, one more call where the last
// rank passes that many rows instead of the others' (bf16, 4 rows of 4096, 'auto'). Prints one `RESULT {...}` line:
// per call the residual's and output's sha256 (or the error code of a refused call), and the mismatched call's error.
import { createHash } from 'node:crypto'
import { DTYPE_BYTES, type TensorArray } from '../../src/api/types.js'
import type { CudaProcessCommunicator } from '../../src/backends/cuda/process-communicator.js'
import { createCommunicator } from '../../src/create.js'
import { LlcommError } from '../../src/errors.js'
import { cudaDriver, type DevicePtr } from '../../src/ffi/index.js'
import { EPS, type FusedShape, fusedInputs, fusedShapes } from './multiprocess-fused-data.js'

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
  const results = fusedShapes().map((s, i) => call(s, i))
  let failure: Record<string, unknown> | undefined
  const mismatchRows = process.env.LLCOMM_TEST_MISMATCH_ROWS
  if (mismatchRows) {
    const s: FusedShape = { dtype: 'bf16', rows: 4, hidden: 4096, algorithm: 'auto' }
    const started = performance.now()
    try {
      call(s, 9999, rank === comm.size - 1 ? Number(mismatchRows) : s.rows)
      failure = { code: 'NONE', message: 'the mismatched call returned data' }
    } catch (e) {
      failure =
        e instanceof LlcommError
          ? { code: e.code, message: e.message, details: e.details }
          : { code: 'UNEXPECTED', message: String(e) }
    }
    failure.ms = performance.now() - started
    // No rank frees what its peers map while their kernels may still run to their deadline.
    await new Promise((resolve) => setTimeout(resolve, 2 * TIMEOUT_MS + 2000))
  }
  d.streamDestroy(stream)
  await comm.close()
  process.stdout.write(`RESULT ${JSON.stringify({ rank, results, failure })}\n`)
}

main().catch((e: unknown) => {
  const error =
    e instanceof LlcommError ? { code: e.code, message: e.message, details: e.details } : { message: String(e) }
  process.stdout.write(`RESULT ${JSON.stringify({ rank, error })}\n`)
  process.exitCode = 1
})
