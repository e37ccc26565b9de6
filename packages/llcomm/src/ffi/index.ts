/** The FFI boundary: the only folder that imports koffi. Everything above sees branded numbers and typed errors. */

export {
  CU_DEVICE_ATTRIBUTE,
  CU_EVENT_DEFAULT,
  CU_EVENT_DISABLE_TIMING,
  CU_FUNC_ATTRIBUTE,
  CudaDriver,
  cudaDriver,
} from './cuda-driver.js'
export { CU_IPC_HANDLE_BYTES, CudaIpc, cudaIpc } from './cuda-ipc.js'
export { type LaunchFlags, type LaunchShape, type ParamPassing, PreparedLaunch } from './launch.js'
export { LIBCUDA, LIBNCCL, LIBNVRTC, type LibrarySpec, loadLibrary } from './library.js'
export { NativeBlock } from './native-memory.js'
export { NCCL_DATA_TYPE, Nccl, type NcclDataType, nccl } from './nccl.js'
export { NCCL_UNIQUE_ID_BYTES, NcclRank, ncclRank } from './nccl-rank.js'
export { Nvrtc, type NvrtcHeader, type NvrtcOutput, nvrtc } from './nvrtc.js'
export {
  futexWait,
  futexWake,
  listSegments,
  removeStaleSegments,
  SharedMemorySegment,
} from './shared-memory.js'
export * from './types.js'
