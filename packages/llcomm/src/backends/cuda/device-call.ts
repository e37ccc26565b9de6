/**
 * The device-buffer AllReduce call as the CUDA communicator takes it (deviceAllReduce, prepareDeviceAllReduce):
 * argument and result types only, apart from communicator.ts so that its helpers (benchmark.ts) need not import it.
 */
import type { AlgorithmChoice, AlgorithmName, Dtype, LlProtocol, ReduceOp } from '../../api/types.js'
import type { CuStream, DevicePtr } from '../../ffi/types.js'

/** Arguments of a device-buffer AllReduce. Pointers are indexed by global rank. */
export interface DeviceAllReduceArgs {
  inputs: readonly DevicePtr[]
  outputs: readonly DevicePtr[]
  /** Elements per rank. */
  count: number
  dtype: Dtype
  op?: ReduceOp
  algorithm?: AlgorithmChoice
  protocol?: LlProtocol
  pdl?: boolean
  fallback?: boolean
  /** The caller's stream, when all ranks live on one device. */
  stream?: CuStream
  /** One stream per distinct device (launch group), in order of first appearance in `devices`. */
  streams?: readonly CuStream[]
}

export interface DeviceAllReduceInfo {
  algorithm: AlgorithmName
  fallbackReason?: string
  chunks: number
}

/** A device AllReduce packed once; `issue()` launches it again (same pointers and count) without allocating. */
export interface PreparedDeviceAllReduce extends DeviceAllReduceInfo {
  issue(streams?: readonly CuStream[]): void
}
