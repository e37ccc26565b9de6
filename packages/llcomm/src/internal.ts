/**
 * `llcomm/internal`: the one entry point through which llcomm's own tools (packages/tools: bench, sol, model,
 * decode, diagnose) reach below the public API — the CUDA backend's driver, devices, allocations, module cache,
 * kernel table and ABI packers, the tuning table, the dtype codecs. Not a public API: names here may change with
 * any release. Programs that use llcomm import 'llcomm' only.
 */

export * from './algorithms/auto.js'
export { CPU_ALGORITHM_NAMES, resolveCpuAlgorithm } from './algorithms/cpu/resolve.js'
export { BENCHMARK_INPUT_SETS, combineRankBenchmarks } from './backends/cpu/benchmark-data.js'
export * from './backends/cpu/process-communicator.js'
export type { RankBenchmarkCommand, RankBenchmarkResult } from './backends/cpu/rank-runner.js'
export * from './backends/cuda/abi.js'
export * from './backends/cuda/allreduce-launcher.js'
export {
  CudaCommunicator,
  type CudaCommunicatorInternals,
  createCudaCommunicator,
  cudaCommunicatorInternals,
  type PreparedDeviceAllReduce,
} from './backends/cuda/communicator.js'
export * from './backends/cuda/devices.js'
export * from './backends/cuda/eager-calls.js'
export * from './backends/cuda/error-word.js'
export * from './backends/cuda/fused-abi.js'
export * from './backends/cuda/fused-launcher.js'
export * from './backends/cuda/graph.js'
/** Both the kernel table and the FFI name a LaunchShape; the tools mean the kernel table's. */
export type { LaunchShape } from './backends/cuda/kernel-table.js'
export * from './backends/cuda/kernel-table.js'
export * from './backends/cuda/latest-signature.js'
export * from './backends/cuda/memory.js'
export * from './backends/cuda/modules.js'
export * from './backends/cuda/reference.js'
export * from './backends/cuda/timeout-signature.js'
export * from './backends/cuda/tool-kernels.js'
export { CommunicatorBase } from './communicator/base.js'
export { DEFAULT_BUFFER_BYTES as DEFAULT_BUFFER_BYTES_OF_BACKEND } from './communicator/options.js'
export * from './communicator/validate.js'
export * from './dtype/index.js'
export * from './ffi/index.js'
export * from './index.js'
export * from './protocol/call-signature.js'
export { type ChannelLayout, computeChannelLayout } from './protocol/cpu/layout.js'
export * from './rendezvous/address.js'
export * from './rendezvous/free-port.js'
export * from './rendezvous/process-liveness.js'
