/**
 * The device side's tool kernels that the host side launches itself (skew spin, LL16 stress), looked up in the
 * kernel table's TOOL_KERNELS; their parameter packers live in abi.ts.
 */
import { LlcommError } from '../../errors.js'
import { TOOL_KERNELS, type ToolKernel } from './kernel-table.js'

export function toolKernel(kernelName: string): ToolKernel {
  const k = TOOL_KERNELS.find((t) => t.kernelName === kernelName)
  if (!k) throw new LlcommError('INVALID_ARGUMENT', `no tool kernel ${kernelName} in the kernel table`)
  return k
}

export const SPIN_KERNEL_NAME = 'llcomm_spin_ns'
export const STRESS_LL16_KERNEL_NAME = 'llcomm_stress_ll16'
