/**
 * The trace as diagnose sees it, whatever file it came from: GPU activities per stream (kernels, copies), the
 * collectives found on the CPU side (PyTorch's record_param_comms ops), and the link between the two.
 *
 * llcomm's own trace format (written by tools that are not the PyTorch profiler):
 *   { "llcommTrace": 1, "events": [ { "name": "gemm", "stream": "0", "startUs": 0, "durUs": 10,
 *       "collective": { "name": "allreduce", "bytes": 8192, "ranks": 4 } } ] }
 * An event with `collective` is communication; every other event is compute.
 */

export interface CollectiveInfo {
  /** Normalized name: allreduce, allgather, reducescatter, broadcast, alltoall, sendrecv, … */
  name: string
  /** Bytes per rank of the message (input), or null when the trace does not say. */
  bytes: number | null
  elements?: number
  dtype?: string
  /** Ranks in the process group, when the trace says. */
  groupSize?: number
  /** How the kernel was tied to its collective. */
  via: 'kernel-args' | 'correlation' | 'external-id' | 'kernel-name' | 'own-format' | 'cpu-only'
}

export interface GpuActivity {
  name: string
  /** Stream key: 'device:stream' for PyTorch traces, the given stream for our format. */
  stream: string
  startUs: number
  durUs: number
  kind: 'kernel' | 'memcpy' | 'memset'
  correlation?: number
  collective?: CollectiveInfo
}

export interface CpuCollectiveOp {
  startUs: number
  durUs: number
  thread: string
  externalId?: number
  info: CollectiveInfo
  /** GPU activities tied to this op. */
  kernels: number
}

export interface NormalizedTrace {
  format: 'pytorch' | 'chrome' | 'llcomm'
  activities: GpuActivity[]
  cpuCollectives: CpuCollectiveOp[]
  /** Named ranges (PyTorch user_annotation / gpu_user_annotation events), used to find steps. */
  annotations: { name: string; startUs: number; durUs: number; onGpu: boolean }[]
  /** Names of things the reader skipped, with counts (e.g. events without a duration). */
  notes: string[]
}
