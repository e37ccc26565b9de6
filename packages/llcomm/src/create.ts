import type {
  Communicator,
  CommunicatorOptions,
  CpuCommunicatorOptions,
  CudaCommunicatorOptions,
  ProcessCommunicator,
  ProcessCommunicatorOptions,
} from './api/types.js'
import type { CpuCommunicator } from './backends/cpu/communicator.js'
import type { CudaCommunicator } from './backends/cuda/communicator.js'
import { validateCommunicatorOptions } from './communicator/options.js'
import { LlcommError, toLlcommError } from './errors.js'

/**
 * The one entry point, typed by backend: `{ backend: 'cpu' }` gives a CpuCommunicator, `{ backend: 'cuda' }` a
 * CudaCommunicator (the device path: deviceAllReduce, canServe, allocate, …), with `rendezvous` one rank of a group
 * of processes. Backends are imported lazily so that the cpu backend never loads koffi and the cuda backend's
 * libraries are looked up only when asked for. (One process per rank on cpu loads koffi for libc's
 * shm_open / mmap / futex: src/ffi/shared-memory.ts.)
 */
export async function createCommunicator(options: ProcessCommunicatorOptions): Promise<ProcessCommunicator>
export async function createCommunicator(options: CpuCommunicatorOptions): Promise<CpuCommunicator>
export async function createCommunicator(options: CudaCommunicatorOptions): Promise<CudaCommunicator>
export async function createCommunicator(options: CommunicatorOptions): Promise<Communicator>
export async function createCommunicator(
  options: CommunicatorOptions | ProcessCommunicatorOptions,
): Promise<Communicator | ProcessCommunicator> {
  if (options === null || typeof options !== 'object') {
    throw new LlcommError('INVALID_ARGUMENT', 'createCommunicator needs an options object')
  }
  if ('rendezvous' in options) return createProcessCommunicator(options)
  try {
    switch (options.backend) {
      case 'cpu': {
        // The public keys only: a backend's test options are refused here.
        validateCommunicatorOptions('cpu', options)
        const { createCpuCommunicator } = await import('./backends/cpu/communicator.js')
        return await createCpuCommunicator(options)
      }
      case 'cuda': {
        validateCommunicatorOptions('cuda', options)
        const { createCudaCommunicator } = await import('./backends/cuda/communicator.js')
        return await createCudaCommunicator(options)
      }
    }
  } catch (e) {
    throw toLlcommError(e, 'createCommunicator')
  }
  throw new LlcommError(
    'INVALID_ARGUMENT',
    `unknown backend ${JSON.stringify((options as { backend: unknown }).backend)}`,
  )
}

/** One process per rank (issue 20): `rendezvous` given, this process is `rank` of `worldSize`. */
async function createProcessCommunicator(options: ProcessCommunicatorOptions): Promise<ProcessCommunicator> {
  switch (options.backend) {
    case 'cpu': {
      const { createCpuProcessCommunicator } = await import('./backends/cpu/process-communicator.js')
      return createCpuProcessCommunicator(options)
    }
    case 'cuda': {
      const { createCudaProcessCommunicator } = await import('./backends/cuda/process-communicator.js')
      return createCudaProcessCommunicator(options)
    }
    default:
      throw new LlcommError(
        'INVALID_ARGUMENT',
        `unknown backend ${JSON.stringify((options as { backend: unknown }).backend)}`,
      )
  }
}
