export * from './api/types.js'
export { CpuCommunicator, createCpuCommunicator } from './backends/cpu/communicator.js'
export type { CpuProcessCommunicator } from './backends/cpu/process-communicator.js'
export type { CpuRank, CpuRankHandle, RankAllReduceResult } from './backends/cpu/rank-view.js'
export { attachCpuRank } from './backends/cpu/rank-view.js'
export type {
  CanServeQuery,
  CanServeResult,
  CudaCommunicator,
  DeviceAllReduceArgs,
  DeviceAllReduceInfo,
  DeviceFallback,
  DeviceGraph,
  FusedManyCall,
  FusedNormAlgorithm,
  FusedNormCall,
  PreparedDeviceAllReduce,
  PreparedFusedCall,
} from './backends/cuda/communicator.js'
export type { CudaProcessCommunicator } from './backends/cuda/process-communicator.js'
export { createCommunicator } from './create.js'
export type { LlcommErrorCode, TimeoutDetails } from './errors.js'
export { isLlcommError, LlcommError } from './errors.js'
export type { CuStream, DevicePtr } from './ffi/types.js'
export { cudaStream, devicePtr } from './ffi/types.js'
