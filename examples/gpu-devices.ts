// Shared by the GPU examples: which devices to use (LLCOMM_EXAMPLE_DEVICES, default two virtual ranks on GPU 0)
// and a clean skip where there is no GPU, so that the examples run as tests on any machine.
import { type CudaCommunicator, createCommunicator, isLlcommError } from 'llcomm'

export const EXAMPLE_DEVICES = (process.env.LLCOMM_EXAMPLE_DEVICES ?? '0,0').split(',').map(Number)

/** A CUDA communicator, or undefined (after saying why) where this machine has no GPU or no CUDA driver. */
export async function openGpuOrSkip(example: string): Promise<CudaCommunicator | undefined> {
  try {
    return await createCommunicator({ backend: 'cuda', devices: EXAMPLE_DEVICES })
  } catch (e) {
    if (isLlcommError(e) && (e.code === 'LIBRARY_NOT_FOUND' || e.code === 'NO_DEVICE')) {
      console.log(`${example}: skipped, no GPU here (${e.code}: ${e.message})`)
      return undefined
    }
    throw e
  }
}

/** One stream per distinct device, in the order device calls take them (launchGroupDevices). */
export function streamPerDevice(comm: CudaCommunicator) {
  return comm.launchGroupDevices.map((device) => comm.createStream(comm.devices.indexOf(device)))
}
