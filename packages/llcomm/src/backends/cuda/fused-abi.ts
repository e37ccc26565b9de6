/**
 * The byte layout of the fused kernels' parameter structs (kernels/llcomm/fused_abi.cuh) and their packers, with the
 * C layout rules of abi.ts. test/kernels/fused-abi.test.ts compiles fused_abi.cuh on the host and checks every
 * offsetof/sizeof and constant against these tables.
 */
import { LlcommError } from '../../errors.js'
import {
  type BufferRegion,
  LLCOMM_MAX_CHANNELS,
  LLCOMM_MAX_RANKS,
  layOut,
  packStruct,
  type StructLayout,
} from './abi.js'

export const LLCOMM_FUSED_RESIDUAL_F32 = 1
export const LLCOMM_FUSED_NO_RESIDUAL_IN = 2
export const LLCOMM_FUSED_OUT_E4M3 = 4
export const LLCOMM_FUSED_FLAGS_MASK = 7
export const LLCOMM_MANY_MAX_BUFFERS = 8

const region = (name: string) => [
  { name: `${name}.offset`, kind: 'u64' as const },
  { name: `${name}.channelHalfBytes`, kind: 'u64' as const },
]

export const FUSED_NORM_PARAMS_LAYOUT = layOut('LlcommFusedNormParams', [
  { name: 'input', kind: 'u64', count: LLCOMM_MAX_RANKS },
  { name: 'residual', kind: 'u64', count: LLCOMM_MAX_RANKS },
  { name: 'out', kind: 'u64', count: LLCOMM_MAX_RANKS },
  { name: 'weight', kind: 'u64', count: LLCOMM_MAX_RANKS },
  { name: 'recvBuf', kind: 'u64', count: LLCOMM_MAX_RANKS },
  { name: 'scratch', kind: 'u64', count: LLCOMM_MAX_RANKS },
  { name: 'errorWord', kind: 'u64' },
  { name: 'timeoutNs', kind: 'u64' },
  ...region('sentinel'),
  { name: 'rows', kind: 'u32' },
  { name: 'hidden', kind: 'u32' },
  { name: 'epsBits', kind: 'u32' },
  { name: 'flags', kind: 'u32' },
  { name: 'nranks', kind: 'u32' },
  { name: 'ranksInLaunch', kind: 'u32' },
  { name: 'blocksPerRank', kind: 'u32' },
  { name: 'outScaleBits', kind: 'u32' },
  { name: 'launchRanks', kind: 'u8', count: LLCOMM_MAX_RANKS },
  ...region('ll'),
  { name: 'signature', kind: 'u32', count: 2 },
])

export const ALLREDUCE_MANY_PARAMS_LAYOUT = layOut('LlcommAllReduceManyParams', [
  { name: 'input', kind: 'u64', count: LLCOMM_MANY_MAX_BUFFERS * LLCOMM_MAX_RANKS },
  { name: 'output', kind: 'u64', count: LLCOMM_MANY_MAX_BUFFERS * LLCOMM_MAX_RANKS },
  { name: 'count', kind: 'u64', count: LLCOMM_MANY_MAX_BUFFERS },
  { name: 'recvBuf', kind: 'u64', count: LLCOMM_MAX_RANKS },
  { name: 'scratch', kind: 'u64', count: LLCOMM_MAX_RANKS },
  { name: 'errorWord', kind: 'u64' },
  { name: 'timeoutNs', kind: 'u64' },
  ...region('sentinel'),
  { name: 'buffers', kind: 'u32' },
  { name: 'nranks', kind: 'u32' },
  { name: 'ranksInLaunch', kind: 'u32' },
  { name: 'blocksPerRank', kind: 'u32' },
  { name: 'launchRanks', kind: 'u8', count: LLCOMM_MAX_RANKS },
  { name: 'signature', kind: 'u32', count: 2 },
])

export const FUSED_ABI_STRUCTS: readonly StructLayout[] = [FUSED_NORM_PARAMS_LAYOUT, ALLREDUCE_MANY_PARAMS_LAYOUT]
export const FUSED_ABI_CONSTANTS: Readonly<Record<string, number>> = {
  LLCOMM_FUSED_RESIDUAL_F32,
  LLCOMM_FUSED_NO_RESIDUAL_IN,
  LLCOMM_FUSED_OUT_E4M3,
  LLCOMM_FUSED_FLAGS_MASK,
  LLCOMM_MANY_MAX_BUFFERS,
}

/** `signatureOnly`: blocksPerRank 0 is the launch of the signature block alone (fused-launcher.ts allReduceManyLaunches). */
function checkLaunch(
  nranks: number,
  ranksInLaunch: number,
  launchRanks: readonly number[],
  blocks: number,
  signatureOnly = false,
): void {
  if (!Number.isInteger(nranks) || nranks < 1 || nranks > LLCOMM_MAX_RANKS)
    throw new LlcommError('INVALID_ARGUMENT', `nranks ${nranks} outside 1..${LLCOMM_MAX_RANKS}`)
  if (launchRanks.length !== ranksInLaunch || ranksInLaunch < 1)
    throw new LlcommError(
      'INVALID_ARGUMENT',
      `launchRanks has ${launchRanks.length} entries, ranksInLaunch is ${ranksInLaunch}`,
    )
  for (const r of launchRanks)
    if (!Number.isInteger(r) || r < 0 || r >= nranks)
      throw new LlcommError('INVALID_ARGUMENT', `launch rank ${r} outside 0..${nranks - 1}`)
  if (signatureOnly ? blocks !== 0 : !Number.isInteger(blocks) || blocks < 1 || blocks > LLCOMM_MAX_CHANNELS)
    throw new LlcommError(
      'INVALID_ARGUMENT',
      signatureOnly
        ? `blocksPerRank ${blocks}: a launch without buffers is the signature block alone (0)`
        : `blocksPerRank ${blocks} outside 1..${LLCOMM_MAX_CHANNELS}`,
    )
}

function checkAligned(what: string, list: readonly bigint[], launchRanks: readonly number[]): void {
  for (const r of launchRanks) {
    const p = list[r]
    if (p === undefined) throw new LlcommError('INVALID_ARGUMENT', `${what} pointer of launch rank ${r} missing`)
    if (p % 16n !== 0n)
      throw new LlcommError('MISALIGNED_BUFFER', `${what} pointer of rank ${r} is not 16-byte aligned`, {
        rank: r,
        what,
      })
  }
}

export interface FusedNormParamsHost {
  input: readonly bigint[]
  residual: readonly bigint[]
  out: readonly bigint[]
  weight: readonly bigint[]
  recvBuf: readonly bigint[]
  scratch: readonly bigint[]
  errorWord: bigint
  timeoutNs: bigint
  sentinel: BufferRegion
  rows: number
  hidden: number
  epsBits: number
  flags: number
  nranks: number
  ranksInLaunch: number
  /** For the reference rmsnorm kernel: unused (the grid is ranksInLaunch × rows); pass 1. */
  blocksPerRank: number
  /** f32 bits of the e4m3 output's per-tensor scale (flags & LLCOMM_FUSED_OUT_E4M3); 0 otherwise. */
  outScaleBits?: number
  launchRanks: readonly number[]
  /** The LL packet region (the split LL kernel's lanes); absent: zero (the other kernels do not read it). */
  ll?: BufferRegion
  /**
   * The launch's call signature words (encodeFusedSignature), read by the per-process build's signature cluster
   * (kernels/llcomm/fused_signature.cuh); absent: zero (in process nothing reads them).
   */
  signature?: readonly [number, number]
}

export function packFusedNormParams(p: FusedNormParamsHost): Buffer {
  checkLaunch(p.nranks, p.ranksInLaunch, p.launchRanks, p.blocksPerRank)
  for (const [what, list] of [
    ['input', p.input],
    ['residual', p.residual],
    ['out', p.out],
    ['weight', p.weight],
  ] as const)
    checkAligned(what, list, p.launchRanks)
  if ((p.flags & ~LLCOMM_FUSED_FLAGS_MASK) !== 0)
    throw new LlcommError('INVALID_ARGUMENT', `fused flags ${p.flags} has unknown bits`)
  return packStruct(FUSED_NORM_PARAMS_LAYOUT, {
    input: p.input,
    residual: p.residual,
    out: p.out,
    weight: p.weight,
    recvBuf: p.recvBuf,
    scratch: p.scratch,
    errorWord: p.errorWord,
    timeoutNs: p.timeoutNs,
    'sentinel.offset': p.sentinel.offset,
    'sentinel.channelHalfBytes': p.sentinel.channelHalfBytes,
    rows: p.rows,
    hidden: p.hidden,
    epsBits: p.epsBits,
    flags: p.flags,
    nranks: p.nranks,
    ranksInLaunch: p.ranksInLaunch,
    blocksPerRank: p.blocksPerRank,
    outScaleBits: p.outScaleBits ?? 0,
    launchRanks: p.launchRanks,
    'll.offset': p.ll?.offset ?? 0,
    'll.channelHalfBytes': p.ll?.channelHalfBytes ?? 0,
    signature: p.signature ?? [0, 0],
  })
}

export interface AllReduceManyParamsHost {
  /** inputs[b][rank], outputs[b][rank]: device pointers of buffer b, by global rank. */
  inputs: readonly (readonly bigint[])[]
  outputs: readonly (readonly bigint[])[]
  counts: readonly number[]
  recvBuf: readonly bigint[]
  scratch: readonly bigint[]
  errorWord: bigint
  timeoutNs: bigint
  sentinel: BufferRegion
  nranks: number
  ranksInLaunch: number
  blocksPerRank: number
  launchRanks: readonly number[]
  /**
   * The launch's call signature words (encodeManySignature), read by the per-process build's signature block
   * (kernels/llcomm/fused_signature.cuh); absent: zero (in process nothing reads them).
   */
  signature?: readonly [number, number]
}

export function packAllReduceManyParams(p: AllReduceManyParamsHost): Buffer {
  const b = p.counts.length
  // No buffer: per process, the launch of the signature block alone (an empty call still takes its signature epoch).
  const signatureOnly = b === 0 && p.signature !== undefined
  checkLaunch(p.nranks, p.ranksInLaunch, p.launchRanks, p.blocksPerRank, signatureOnly)
  if ((b < 1 && !signatureOnly) || b > LLCOMM_MANY_MAX_BUFFERS || p.inputs.length !== b || p.outputs.length !== b)
    throw new LlcommError('INVALID_ARGUMENT', `allReduceMany takes 1..${LLCOMM_MANY_MAX_BUFFERS} buffers, got ${b}`)
  const flat = (lists: readonly (readonly bigint[])[]) => {
    const out: bigint[] = new Array(LLCOMM_MANY_MAX_BUFFERS * LLCOMM_MAX_RANKS).fill(0n)
    lists.forEach((l, i) => {
      checkAligned(`buffer ${i}`, l, p.launchRanks)
      l.forEach((x, r) => {
        out[i * LLCOMM_MAX_RANKS + r] = x
      })
    })
    return out
  }
  return packStruct(ALLREDUCE_MANY_PARAMS_LAYOUT, {
    input: flat(p.inputs),
    output: flat(p.outputs),
    count: p.counts,
    recvBuf: p.recvBuf,
    scratch: p.scratch,
    errorWord: p.errorWord,
    timeoutNs: p.timeoutNs,
    'sentinel.offset': p.sentinel.offset,
    'sentinel.channelHalfBytes': p.sentinel.channelHalfBytes,
    buffers: b,
    nranks: p.nranks,
    ranksInLaunch: p.ranksInLaunch,
    blocksPerRank: p.blocksPerRank,
    launchRanks: p.launchRanks,
    signature: p.signature ?? [0, 0],
  })
}
