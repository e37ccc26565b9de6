/**
 * One small descriptor per collective and one shared driver (nccl-tests' model: src/common.h + all_reduce.cu).
 * A descriptor says how many bytes a call moves per rank, its bus-bandwidth factor and how to time it; the driver
 * (sweep.ts) knows nothing about AllReduce in particular.
 */
import type { BenchmarkRequest, BenchmarkResult, Communicator, Dtype } from 'llcomm/internal'
import { DTYPE_BYTES } from 'llcomm/internal'
import { allReduceBusFactor } from './stats.js'

export interface CollectiveDescriptor {
  /** nccl-tests' name for the collective. */
  readonly name: string
  /** Bytes per rank that one call on `count` elements moves (the size column of the table). */
  bytesPerRank(count: number, dtype: Dtype): number
  /** busbw = algbw × busFactor(ranks). */
  busFactor(ranks: number): number
  /** Times `request.iters` calls inside the ranks (never the driver's message passing). */
  run(comm: Communicator, request: BenchmarkRequest): Promise<BenchmarkResult>
}

export const allReduceCollective: CollectiveDescriptor = {
  name: 'all_reduce',
  bytesPerRank: (count, dtype) => count * DTYPE_BYTES[dtype],
  busFactor: allReduceBusFactor,
  run: (comm, request) => comm.benchmark(request),
}
