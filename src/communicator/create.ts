import type { Communicator, CommunicatorOptions } from '../api/types.js'
import { LlcommError, toLlcommError } from '../errors.js'
import { validateCommunicatorOptions } from './options.js'

/**
 * The one entry point. Backends are imported lazily so that the cpu backend never loads koffi and the cuda
 * backend's libraries are looked up only when asked for.
 */
export async function createCommunicator(options: CommunicatorOptions): Promise<Communicator> {
  if (options === null || typeof options !== 'object') {
    throw new LlcommError('INVALID_ARGUMENT', 'createCommunicator needs an options object')
  }
  try {
    switch (options.backend) {
      case 'cpu': {
        // The public keys only: a backend's test options are refused here.
        validateCommunicatorOptions('cpu', options)
        const { createCpuCommunicator } = await import('../backends/cpu/communicator.js')
        return await createCpuCommunicator(options)
      }
      case 'cuda': {
        validateCommunicatorOptions('cuda', options)
        const { createCudaCommunicator } = await import('../backends/cuda/communicator.js')
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
