/**
 * A Communicator whose benchmark() returns scripted timings, for testing the bench driver without a backend.
 * Each algorithm's time is `latencyUs[algorithm] + bytes / bytesPerUs` with a fixed spread over iterations, so
 * medians and p99s are known in advance.
 */
import type { AlgorithmChoice, AlgorithmName, BenchmarkRequest, BenchmarkResult, Communicator } from 'llcomm/internal'
import { DTYPE_BYTES, LlcommError } from 'llcomm/internal'

export interface FakeScript {
  size?: number
  backend?: 'cpu' | 'cuda'
  latencyUs: Partial<Record<AlgorithmName, number>>
  bytesPerUs?: number
  /** Requested algorithm → the one that "ran" instead (a fallback). */
  fallbacks?: Partial<Record<AlgorithmName, AlgorithmName>>
  /** What auto picks. */
  autoPick?: AlgorithmName
  wrong?: Partial<Record<AlgorithmName, number>>
  /** Algorithms that refuse every call with UNSUPPORTED_ALGORITHM. */
  refuse?: AlgorithmName[]
}

export function fakeCommunicator(script: FakeScript): Communicator & { requests: BenchmarkRequest[]; closed: boolean } {
  const names = Object.keys(script.latencyUs) as AlgorithmName[]
  const requests: BenchmarkRequest[] = []
  const comm = {
    backend: script.backend ?? 'cpu',
    size: script.size ?? 4,
    algorithms: [...names, 'auto'] as AlgorithmChoice[],
    requests,
    closed: false,
    async allReduce(): Promise<never> {
      throw new Error('fake communicator: allReduce is not scripted')
    },
    async allReduceMany(): Promise<never> {
      throw new Error('fake communicator: allReduceMany is not scripted')
    },
    async benchmark(request: BenchmarkRequest): Promise<BenchmarkResult> {
      requests.push(request)
      const asked = request.algorithm === 'auto' ? (script.autoPick ?? names[0]) : request.algorithm
      if (script.refuse?.includes(asked)) throw new LlcommError('UNSUPPORTED_ALGORITHM', `${asked} refuses`)
      const ran = script.fallbacks?.[asked] ?? asked
      const bytes = request.count * DTYPE_BYTES[request.dtype]
      const base = (script.latencyUs[ran] ?? 1) + bytes / (script.bytesPerUs ?? 1000)
      // Iteration i takes base + i·0.01 µs: median and p99 follow from the iteration count.
      const timesUs = Array.from({ length: request.iters }, (_, i) => base + i * 0.01)
      const skewWaitUs = Array.from(
        { length: request.iters },
        () => (request.skewUs ?? 0) / 2 + (request.computeUs ?? 0),
      )
      return { algorithm: ran, timesUs, skewWaitUs, wrong: script.wrong?.[ran] ?? 0 }
    },
    async close() {
      comm.closed = true
    },
    async destroy() {
      comm.closed = true
    },
    async recover() {},
    async [Symbol.asyncDispose]() {
      comm.closed = true
    },
  }
  return comm
}
