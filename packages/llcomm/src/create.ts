import type { Communicator, CommunicatorOptions } from './api/types.js'
import { LlcommError } from './errors.js'

/**
 * The one entry point. Backends are imported lazily so that the cpu backend never loads koffi and the cuda
 * backend's libraries are looked up only when asked for.
 */
export async function createCommunicator(options: CommunicatorOptions): Promise<Communicator> {
  if (options === null || typeof options !== 'object') {
    throw new LlcommError('INVALID_ARGUMENT', 'createCommunicator needs an options object')
  }
  switch (options.backend) {
    case 'cpu': {
      const { createCpuCommunicator } = await import('./backends/cpu/communicator.js')
      return createCpuCommunicator(options)
    }
    case 'cuda': {
      const { createCudaCommunicator } = await import('./backends/cuda/communicator.js')
      return createCudaCommunicator(options)
    }
    default:
      throw new LlcommError(
        'INVALID_ARGUMENT',
        `unknown backend ${JSON.stringify((options as { backend: unknown }).backend)}`,
      )
  }
}
