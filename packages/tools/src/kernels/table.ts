/**
 * The tools' kernels (packages/tools/kernels: `llcomm sol`'s microbenchmarks, `llcomm decode`'s compute kernels),
 * one parameter struct each (tools_abi.cuh, src/kernels/abi.ts). They are compiled by the library's module cache
 * (KernelModules) from absolute paths, with the library's headers (llcomm/*.cuh) and their own beside them.
 */
import { fileURLToPath } from 'node:url'
import type { ToolKernel } from 'llcomm/internal'

/** The tools package's kernels/ folder (this file is dist/src/kernels/table.js). */
export const TOOLS_KERNELS_DIR = fileURLToPath(new URL('../../../kernels/', import.meta.url))
export const SOL_SOURCE = `${TOOLS_KERNELS_DIR}sol.cu`
export const DECODE_SOURCE = `${TOOLS_KERNELS_DIR}decode.cu`

/** The largest batch of each decode GEMV variant (kernels/decode.cu LLC_DECODE_GEMV_KERNELS), ascending. */
export const DECODE_GEMV_BATCHES = [1, 4, 16] as const

export const TOOLS_KERNELS: readonly ToolKernel[] = Object.freeze([
  { kernelName: 'llcomm_sol_l2_rtt', sourceFile: SOL_SOURCE, paramsStruct: 'LlcommSolL2Params' },
  { kernelName: 'llcomm_sol_pingpong', sourceFile: SOL_SOURCE, paramsStruct: 'LlcommSolPingPongParams' },
  { kernelName: 'llcomm_sol_empty', sourceFile: SOL_SOURCE, paramsStruct: 'LlcommSolEmptyParams' },
  { kernelName: 'llcomm_sol_copy', sourceFile: SOL_SOURCE, paramsStruct: 'LlcommSolCopyParams' },
  { kernelName: 'llcomm_decode_fill', sourceFile: DECODE_SOURCE, paramsStruct: 'LlcommDecodeFillParams' },
  ...DECODE_GEMV_BATCHES.flatMap((n) => [
    { kernelName: `llcomm_decode_gemv_b${n}`, sourceFile: DECODE_SOURCE, paramsStruct: 'LlcommDecodeGemvParams' },
    {
      kernelName: `llcomm_decode_gemv_gated_b${n}`,
      sourceFile: DECODE_SOURCE,
      paramsStruct: 'LlcommDecodeGemvParams',
    },
  ]),
  { kernelName: 'llcomm_decode_add_rmsnorm', sourceFile: DECODE_SOURCE, paramsStruct: 'LlcommDecodeNormParams' },
  {
    kernelName: 'llcomm_decode_rope_append',
    sourceFile: DECODE_SOURCE,
    paramsStruct: 'LlcommDecodeAttentionParams',
  },
  { kernelName: 'llcomm_decode_attention', sourceFile: DECODE_SOURCE, paramsStruct: 'LlcommDecodeAttentionParams' },
  {
    kernelName: 'llcomm_decode_attention_combine',
    sourceFile: DECODE_SOURCE,
    paramsStruct: 'LlcommDecodeAttentionParams',
  },
])

/** The tools' kernel of that name (its source and parameter struct). */
export function toolsKernel(kernelName: string): ToolKernel {
  const k = TOOLS_KERNELS.find((t) => t.kernelName === kernelName)
  if (!k) throw new Error(`no tools kernel ${kernelName} in the table`)
  return k
}
