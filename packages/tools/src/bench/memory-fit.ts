/**
 * Whether a bench sweep fits in memory, checked before anything is allocated (issue 19: `--sizes 4G` on the CPU grew
 * to the machine's memory and was killed by the OS after 13 minutes). The CPU benchmark holds, per rank, its input
 * sets, the last verified output of each set and one output (RankBenchmarkData), and the driver nothing per call;
 * all of it is host memory, checked against os.freemem(). The cuda backend's buffers live on the device and are
 * checked by the device's own allocator (cuMemAlloc fails with a typed CUDA_ERROR).
 */
import { freemem } from 'node:os'
import type { Backend } from 'llcomm/internal'
import { BENCHMARK_INPUT_SETS, LlcommError } from 'llcomm/internal'

/** Host buffers of one message size per rank in a CPU benchmark: input sets, verified outputs, the output. */
export const CPU_BENCH_BUFFERS_PER_RANK = 2 * BENCHMARK_INPUT_SETS + 1

/** Host bytes a CPU sweep needs at its largest size. */
export function cpuSweepBytes(ranks: number, largestBytes: number): number {
  return ranks * largestBytes * CPU_BENCH_BUFFERS_PER_RANK
}

/** Throws OUT_OF_MEMORY (one clear line) when the sweep's largest size cannot fit; `freeBytes` for tests. */
export function checkSweepFits(
  backend: Backend,
  ranks: number,
  sizesBytes: readonly number[],
  freeBytes: number = freemem(),
): void {
  if (backend !== 'cpu' || sizesBytes.length === 0) return
  const largest = Math.max(...sizesBytes)
  const need = cpuSweepBytes(ranks, largest)
  if (need > freeBytes) {
    const gib = (b: number) => `${(b / 2 ** 30).toFixed(1)} GiB`
    throw new LlcommError(
      'OUT_OF_MEMORY',
      `the sweep does not fit: ${ranks} ranks x ${largest} bytes x ${CPU_BENCH_BUFFERS_PER_RANK} buffers = ${gib(need)}, ` +
        `${gib(freeBytes)} free; use smaller --sizes/--max or fewer --ranks`,
      { ranks, largestBytes: largest, buffers: CPU_BENCH_BUFFERS_PER_RANK, needBytes: need, freeBytes },
    )
  }
}
