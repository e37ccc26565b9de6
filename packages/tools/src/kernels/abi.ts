/**
 * The tools' kernel ABI: the byte layout of the parameter struct of every kernel in packages/tools/kernels
 * (tools_abi.cuh: `llcomm decode`'s compute kernels, `llcomm sol`'s microbenchmarks) and packers that write exactly
 * those bytes, laid out by the library's C-layout machinery (layOut). The ABI test (test/kernels/abi.test.ts at the
 * repository root) compiles tools_abi.cuh on the host and checks every offsetof/sizeof and constant against these
 * tables.
 */
import {
  type FieldValue,
  f32Bits,
  LLCOMM_MAX_RANKS,
  LlcommError,
  layOut,
  packStruct,
  type StructLayout,
} from 'llcomm/internal'

/** The decode step's kernels (kernels/decode.cu). */
export const LLCOMM_DECODE_HEAD_DIM = 128
export const LLCOMM_DECODE_MAX_BATCH = 16
export const LLCOMM_DECODE_MAX_GROUP = 8
export const LLCOMM_DECODE_THREADS = 128
export const LLCOMM_DECODE_NORM_THREADS = 256
/** Output rows of a tensor-core GEMV block (batches above 1); a GEMV's rows must be a multiple of it. */
export const LLCOMM_DECODE_MMA_ROWS = 16
export const LLCOMM_DECODE_PARTIAL_ACC = 4
export const LLCOMM_DECODE_PARTIAL_FLOATS = LLCOMM_DECODE_PARTIAL_ACC + LLCOMM_DECODE_HEAD_DIM

export const DECODE_FILL_PARAMS_LAYOUT = layOut('LlcommDecodeFillParams', [
  { name: 'data', kind: 'u64' },
  { name: 'count', kind: 'u64' },
  { name: 'seed', kind: 'u32' },
  { name: 'scaleBits', kind: 'u32' },
])

export const DECODE_GEMV_PARAMS_LAYOUT = layOut('LlcommDecodeGemvParams', [
  { name: 'x', kind: 'u64' },
  { name: 'weight', kind: 'u64' },
  { name: 'y', kind: 'u64' },
  { name: 'batch', kind: 'u32' },
  { name: 'rows', kind: 'u32' },
  { name: 'cols', kind: 'u32' },
  { name: 'reserved', kind: 'u32' },
])

export const DECODE_NORM_PARAMS_LAYOUT = layOut('LlcommDecodeNormParams', [
  { name: 'residual', kind: 'u64' },
  { name: 'delta', kind: 'u64' },
  { name: 'weight', kind: 'u64' },
  { name: 'out', kind: 'u64' },
  { name: 'batch', kind: 'u32' },
  { name: 'hidden', kind: 'u32' },
  { name: 'mode', kind: 'u32' },
  { name: 'epsBits', kind: 'u32' },
])

export const DECODE_ATTENTION_PARAMS_LAYOUT = layOut('LlcommDecodeAttentionParams', [
  { name: 'qkv', kind: 'u64' },
  { name: 'kCache', kind: 'u64' },
  { name: 'vCache', kind: 'u64' },
  { name: 'partial', kind: 'u64' },
  { name: 'out', kind: 'u64' },
  { name: 'batch', kind: 'u32' },
  { name: 'qHeads', kind: 'u32' },
  { name: 'kvHeads', kind: 'u32' },
  { name: 'context', kind: 'u32' },
  { name: 'maxContext', kind: 'u32' },
  { name: 'splits', kind: 'u32' },
  { name: 'tokensPerSplit', kind: 'u32' },
  { name: 'ropeThetaBits', kind: 'u32' },
])

export const SOL_L2_PARAMS_LAYOUT = layOut('LlcommSolL2Params', [
  { name: 'result', kind: 'u64' },
  { name: 'probe', kind: 'u64' },
  { name: 'iters', kind: 'u32' },
  { name: 'mode', kind: 'u32' },
])

export const SOL_PINGPONG_PARAMS_LAYOUT = layOut('LlcommSolPingPongParams', [
  { name: 'flag', kind: 'u64', count: 2 },
  { name: 'result', kind: 'u64' },
  { name: 'errorWord', kind: 'u64' },
  { name: 'timeoutNs', kind: 'u64' },
  { name: 'iters', kind: 'u32' },
  { name: 'ordering', kind: 'u32' },
  { name: 'ranksInLaunch', kind: 'u32' },
  { name: 'reserved', kind: 'u32' },
  { name: 'launchRanks', kind: 'u8', count: LLCOMM_MAX_RANKS },
])

export const SOL_EMPTY_PARAMS_LAYOUT = layOut('LlcommSolEmptyParams', [{ name: 'unused', kind: 'u64' }])

export const SOL_COPY_PARAMS_LAYOUT = layOut('LlcommSolCopyParams', [
  { name: 'src', kind: 'u64' },
  { name: 'dst', kind: 'u64' },
  { name: 'bytes', kind: 'u64' },
])

/** Every struct of tools_abi.cuh, for the ABI test. */
export { f32Bits }

export const TOOLS_ABI_STRUCTS: readonly StructLayout[] = [
  DECODE_FILL_PARAMS_LAYOUT,
  DECODE_GEMV_PARAMS_LAYOUT,
  DECODE_NORM_PARAMS_LAYOUT,
  DECODE_ATTENTION_PARAMS_LAYOUT,
  SOL_L2_PARAMS_LAYOUT,
  SOL_PINGPONG_PARAMS_LAYOUT,
  SOL_EMPTY_PARAMS_LAYOUT,
  SOL_COPY_PARAMS_LAYOUT,
]

/** Every integer constant of tools_abi.cuh that the host relies on, for the ABI test. */
export const TOOLS_ABI_CONSTANTS: Readonly<Record<string, number>> = {
  LLCOMM_DECODE_HEAD_DIM,
  LLCOMM_DECODE_MAX_BATCH,
  LLCOMM_DECODE_MAX_GROUP,
  LLCOMM_DECODE_THREADS,
  LLCOMM_DECODE_NORM_THREADS,
  LLCOMM_DECODE_PARTIAL_ACC,
  LLCOMM_DECODE_MMA_ROWS,
  LLCOMM_DECODE_PARTIAL_FLOATS,
}

export interface DecodeFillParamsHost {
  data: bigint | number
  count: bigint | number
  seed: number
  scaleBits: number
}
export function packDecodeFillParams(p: DecodeFillParamsHost): Buffer {
  return packStruct(DECODE_FILL_PARAMS_LAYOUT, { ...p })
}

export interface DecodeGemvParamsHost {
  x: bigint | number
  weight: bigint | number
  y: bigint | number
  batch: number
  rows: number
  cols: number
}
export function packDecodeGemvParams(p: DecodeGemvParamsHost): Buffer {
  return packStruct(DECODE_GEMV_PARAMS_LAYOUT, { ...p })
}

export interface DecodeNormParamsHost {
  residual: bigint | number
  delta: bigint | number
  weight: bigint | number
  out: bigint | number
  batch: number
  hidden: number
  /** 0: residual = delta; 1: residual += delta. */
  mode: 0 | 1
  epsBits: number
}
export function packDecodeNormParams(p: DecodeNormParamsHost): Buffer {
  return packStruct(DECODE_NORM_PARAMS_LAYOUT, { ...p })
}

export interface DecodeAttentionParamsHost {
  qkv: bigint | number
  kCache: bigint | number
  vCache: bigint | number
  partial: bigint | number
  out: bigint | number
  batch: number
  qHeads: number
  kvHeads: number
  context: number
  maxContext: number
  splits: number
  tokensPerSplit: number
  ropeThetaBits: number
}
export function packDecodeAttentionParams(p: DecodeAttentionParamsHost): Buffer {
  return packStruct(DECODE_ATTENTION_PARAMS_LAYOUT, { ...p })
}

export interface SolL2ParamsHost {
  /** Device u64[3]: elapsed ns, elapsed cycles, checksum. */
  result: bigint | number
  /** Device u32 holding 0 (mode 1 chases it). */
  probe: bigint | number
  iters: number
  /** 0 = fence.sc.gpu (__threadfence) per iteration; 1 = dependent L2 load per iteration. */
  mode: 0 | 1
}
export function packSolL2Params(p: SolL2ParamsHost): Buffer {
  return packStruct(SOL_L2_PARAMS_LAYOUT, { ...p })
}

export interface SolPingPongParamsHost {
  /** Each side's own flag word (u32, zero-filled before the launch): [side 0, side 1]. */
  flag: readonly [bigint | number, bigint | number]
  /** Device u64[2] written by side 0: elapsed ns, round trips completed. */
  result: bigint | number
  errorWord: bigint | number
  timeoutNs: bigint | number
  iters: number
  /** 0 = relaxed flags (an LL hop), 1 = release/acquire. */
  ordering: 0 | 1
  ranksInLaunch: number
  /** Side (0 or 1) of each block of this launch. */
  launchRanks: readonly number[]
}
export function packSolPingPongParams(p: SolPingPongParamsHost): Buffer {
  return packStruct(SOL_PINGPONG_PARAMS_LAYOUT, { ...p, reserved: 0 })
}

export function packSolEmptyParams(): Buffer {
  return packStruct(SOL_EMPTY_PARAMS_LAYOUT, {})
}

export interface SolCopyParamsHost {
  src: bigint | number
  dst: bigint | number
  /** A multiple of 16; both pointers 16-byte aligned. */
  bytes: bigint | number
}
export function packSolCopyParams(p: SolCopyParamsHost): Buffer {
  if (BigInt(p.bytes) % 16n !== 0n)
    throw new LlcommError('MISALIGNED_BUFFER', `copy size ${p.bytes} is not a multiple of 16 bytes`)
  return packStruct(SOL_COPY_PARAMS_LAYOUT, { ...p })
}
