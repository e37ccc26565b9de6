// A FusedLauncher on stand-ins for the driver's device set and modules (no GPU): the tests that read what the
// launcher packs and launches (eager-fused.test.ts, fused-signature.test.ts) build it here. `driver` is the test's
// own stand-in (it records the launches); the device is one sm_90 group of 132 SMs holding `ranks`.
import type { LaunchGroup } from '../../src/backends/cuda/devices.js'
import { FusedLauncher } from '../../src/backends/cuda/fused-launcher.js'
import { deviceBufferLayout } from '../../src/backends/cuda/kernel-table.js'
import type { CudaDriver, DevicePtr } from '../../src/ffi/index.js'

export interface StandInFusedLauncherOptions {
  /** The driver stand-in (only the calls FusedLauncher makes). */
  driver: unknown
  /** Filled with the name of every kernel FusedLauncher asks for; a kernel's function handle is its index + 1. */
  kernels: string[]
  /** The global ranks of the one launch group. */
  ranks: number[]
  nranks: number
  bufferBytes: number
  /** Per rank: the receive buffer and scratch addresses; and the error word's. */
  recvBuf: DevicePtr[]
  scratch: DevicePtr[]
  errorWord: DevicePtr
  launcherOptions?: ConstructorParameters<typeof FusedLauncher>[4]
}

/** The launcher, and the device-set stand-in it launches on (for a communicator stand-in around it). */
export function standInFusedLauncher(o: StandInFusedLauncherOptions): { launcher: FusedLauncher; deviceSet: unknown } {
  const group: LaunchGroup = {
    index: 0,
    ordinal: 0,
    device: 0 as LaunchGroup['device'],
    context: 0x1000 as LaunchGroup['context'],
    ranks: o.ranks,
    name: 'stand-in',
    smCount: 132,
    arch: 'sm_90',
    cooperativeLaunch: true,
  }
  const deviceSet = { groups: [group], rankGroup: new Array<number>(o.nranks).fill(0), multiDevice: false, use() {} }
  const modules = {
    function: (_g: LaunchGroup, _source: string, name: string) => {
      o.kernels.push(name)
      return o.kernels.length
    },
  }
  const launcher = new FusedLauncher(
    o.driver as CudaDriver,
    deviceSet as unknown as ConstructorParameters<typeof FusedLauncher>[1],
    modules as unknown as ConstructorParameters<typeof FusedLauncher>[2],
    {
      nranks: o.nranks,
      recvBuf: o.recvBuf,
      scratch: o.scratch,
      errorWord: o.errorWord,
      timeoutNs: 10e9,
      bufferBytes: o.bufferBytes,
      layout: deviceBufferLayout(o.nranks, o.bufferBytes),
    },
    o.launcherOptions,
  )
  return { launcher, deviceSet }
}
