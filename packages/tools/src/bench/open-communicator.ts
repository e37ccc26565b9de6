/**
 * Opens the communicator a sweep runs on. Without --backend: cuda when a GPU is found (the cuda backend loads
 * libcuda and finds a device), cpu otherwise, and the tool says which on stderr.
 */
import type { Backend, Communicator } from 'llcomm/internal'
import { createCommunicator, LlcommError } from 'llcomm/internal'

export interface OpenRequest {
  backend?: Backend
  /** cpu: worker ranks; cuda: virtual ranks on GPU 0 or the first N GPUs, when --devices is not given. */
  ranks?: number
  devices?: number[]
  timeoutMs?: number
  tuningTable?: string
  /** Each rank's receive-buffer payload bytes (createCommunicator's bufferBytes); the backend's default when absent. */
  bufferBytes?: number
  /** Where to say which backend was picked (stderr). */
  note: (line: string) => void
}

export const DEFAULT_CPU_RANKS = 4

/** GPUs the driver (or nvidia-smi) sees; 0 when none: only used to pick default devices, never as proof of a GPU. */
export async function countVisibleGpus(): Promise<number> {
  const { probeGpus } = await import('./gpu-probe.js')
  return (await probeGpus()).names.length
}

/** --ranks N on cuda: the first N GPUs when there are that many, else N virtual ranks on GPU 0. */
export function defaultCudaDevices(ranks: number | undefined, visibleGpus: number): number[] {
  if (ranks === undefined) return visibleGpus >= 2 ? Array.from({ length: visibleGpus }, (_, i) => i) : [0, 0]
  return visibleGpus >= ranks ? Array.from({ length: ranks }, (_, i) => i) : new Array<number>(ranks).fill(0)
}

export interface OpenedCommunicator {
  comm: Communicator
  /** cuda: the device of each rank. */
  devices?: number[]
}

export async function openCommunicator(r: OpenRequest): Promise<OpenedCommunicator> {
  const common = {
    ...(r.timeoutMs !== undefined ? { timeoutMs: r.timeoutMs } : {}),
    ...(r.tuningTable ? { tuningTable: r.tuningTable } : {}),
    ...(r.bufferBytes !== undefined ? { bufferBytes: r.bufferBytes } : {}),
  }
  if (r.backend === 'cpu' && r.devices)
    throw new LlcommError('INVALID_ARGUMENT', '--devices is for the cuda backend; use --ranks N with --backend cpu')
  if (r.backend === 'cuda' && r.devices && r.ranks !== undefined && r.ranks !== r.devices.length) {
    throw new LlcommError(
      'INVALID_ARGUMENT',
      `--ranks ${r.ranks} disagrees with --devices (${r.devices.length} entries)`,
    )
  }
  const cpu = async (): Promise<OpenedCommunicator> => ({
    comm: await createCommunicator({ backend: 'cpu', ranks: r.ranks ?? DEFAULT_CPU_RANKS, ...common }),
  })
  const cuda = async (): Promise<OpenedCommunicator> => {
    const devices = r.devices ?? defaultCudaDevices(r.ranks, await countVisibleGpus())
    return { comm: await createCommunicator({ backend: 'cuda', devices, ...common }), devices }
  }
  if (r.backend === 'cpu') return cpu()
  if (r.backend === 'cuda' || r.devices) return cuda()
  try {
    const opened = await cuda()
    r.note(`llcomm: GPU found: using the cuda backend on devices ${opened.devices?.join(',')}`)
    return opened
  } catch (e) {
    const why = e instanceof LlcommError ? `${e.code}: ${e.message}` : e instanceof Error ? e.message : String(e)
    r.note(
      `llcomm: no usable GPU (${why.split('\n')[0]}); using the cpu backend with ${r.ranks ?? DEFAULT_CPU_RANKS} ranks`,
    )
    return cpu()
  }
}
