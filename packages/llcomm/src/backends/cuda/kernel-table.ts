/**
 * The kernel instantiations and their launch and buffer rules, as the host sees them.
 *
 * One source of truth: kernels/instantiations.def lists every all-reduce instantiation; each kernels/allreduce/*.cu
 * expands it as an X-macro, and this module parses the same lines. launchShape() and deviceBufferLayout() mirror the
 * kernels' capacity arithmetic (kernels/llcomm/channel.cuh llcPiece, and the lane sizes computed at the top of each
 * kernel); test/kernels/kernel-table.test.ts checks their invariants.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { join, relative, sep } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Accumulation, AlgorithmName, Dtype, LlProtocol, ReduceOp } from '../../api/types.js'
import { DTYPE_BYTES, LLCOMM_ALGORITHMS } from '../../api/types.js'
import { DEFAULT_BUFFER_BYTES as DEFAULT_BUFFER_BYTES_OF_BACKEND } from '../../communicator/options.js'
import { LlcommError } from '../../errors.js'
import {
  type BufferRegion,
  LLCOMM_ATOMIC_F32_LINES,
  LLCOMM_ERROR_WORD_BYTES,
  LLCOMM_LINE_BYTES,
  LLCOMM_LINE_DATA_WORDS,
  LLCOMM_MAX_CHANNELS,
  LLCOMM_MAX_RANKS,
  LLCOMM_RING_F32_PARTIALS,
  LLCOMM_SCRATCH_BYTES,
  LLCOMM_SENTINEL_WORD,
  LLCOMM_THREADS,
} from './abi.js'

export type KernelProtocol = 'll8' | 'll16' | 'sentinel' | 'll128' | 'flags' | 'barrier'

export interface KernelVariant {
  algorithm: AlgorithmName
  protocol: KernelProtocol
  dtype: Dtype
  op: ReduceOp
  kernelName: string
  /** Path relative to kernels/. */
  sourceFile: string
  /**
   * twoshot-sentinel only: which of its two kernels (kernels/allreduce/twoshot_sentinel.cu kPull) this is: 'push'
   * (llcomm_twoshot_sentinel_*, the owner broadcasts its reduced part) or 'pull' (llcomm_twoshot_sentinel_pull_*,
   * the serial path's owner publishes it once and the peers pull it). The host picks one per launch: launchVariant().
   */
  allGather?: TwoshotKernel
}

/** twoshot-sentinel's two kernels (KernelVariant.allGather). */
export type TwoshotKernel = 'push' | 'pull'

/** The package's kernels/ folder (this file is dist/src/backends/cuda/kernel-table.js), or $LLCOMM_KERNELS_DIR. */
export function kernelsDirectory(): string {
  return process.env.LLCOMM_KERNELS_DIR ?? fileURLToPath(new URL('../../../../kernels/', import.meta.url))
}

export const INSTANTIATIONS_FILE = 'instantiations.def'

const VARIANT_LINE = /^LLCOMM_VARIANT\(\s*(\w+)\s*,\s*(\w+)\s*,\s*(\w+)\s*,\s*(\w+)\s*\)\s*$/
/**
 * Kernel names of instantiations.def that are a second kernel of an algorithm, in that algorithm's source file:
 * twoshot_sentinel_pull is twoshot-sentinel's pull kernel (allreduce/twoshot_sentinel.cu).
 */
const SECOND_KERNELS: Readonly<Record<string, { alg: string; allGather: TwoshotKernel }>> = {
  twoshot_sentinel_pull: { alg: 'twoshot_sentinel', allGather: 'pull' },
}
const ALGORITHMS_WITH_KERNELS = LLCOMM_ALGORITHMS
const PROTOCOLS: readonly KernelProtocol[] = ['ll8', 'll16', 'sentinel', 'll128', 'flags', 'barrier']
const DTYPE_NAMES: readonly Dtype[] = ['f32', 'f16', 'bf16']
const OPS: readonly ReduceOp[] = ['sum']

/** Parses the LLCOMM_VARIANT(algorithm, protocol, dtype, op) lines of instantiations.def. */
export function parseInstantiations(text: string): KernelVariant[] {
  const out: KernelVariant[] = []
  for (const raw of text.split('\n')) {
    const line = raw.trim()
    if (!line.startsWith('LLCOMM_VARIANT(')) continue
    const m = VARIANT_LINE.exec(line)
    if (!m) throw new LlcommError('INVALID_ARGUMENT', `cannot parse instantiation line: ${line}`)
    const [, name, protocol, dtype, op] = m
    const second = SECOND_KERNELS[name]
    const alg = second?.alg ?? name
    const algorithm = alg.replace(/_/g, '-') as AlgorithmName
    if (!ALGORITHMS_WITH_KERNELS.includes(algorithm))
      throw new LlcommError('INVALID_ARGUMENT', `unknown algorithm in ${line}`)
    if (!PROTOCOLS.includes(protocol as KernelProtocol))
      throw new LlcommError('INVALID_ARGUMENT', `unknown protocol in ${line}`)
    if (!DTYPE_NAMES.includes(dtype as Dtype)) throw new LlcommError('INVALID_ARGUMENT', `unknown dtype in ${line}`)
    if (!OPS.includes(op as ReduceOp)) throw new LlcommError('INVALID_ARGUMENT', `unknown op in ${line}`)
    out.push({
      algorithm,
      protocol: protocol as KernelProtocol,
      dtype: dtype as Dtype,
      op: op as ReduceOp,
      kernelName: `llcomm_${name}_${protocol}_${dtype}_${op}`,
      sourceFile: `allreduce/${alg}.cu`,
      ...(algorithm === 'twoshot-sentinel' ? { allGather: second?.allGather ?? 'push' } : {}),
    })
  }
  return out
}

/** Every all-reduce instantiation (twoshot-sentinel's pull kernels included: allGather 'pull'). */
export const KERNEL_VARIANTS: readonly KernelVariant[] = Object.freeze(
  parseInstantiations(readFileSync(join(kernelsDirectory(), INSTANTIATIONS_FILE), 'utf8')).map((v) => Object.freeze(v)),
)

/**
 * The support kernels the library launches itself beside its collectives (the benchmark's skew spin, the LL16
 * stress test that must pass before `auto` may choose LL16), one parameter struct each (abi.ts). The tools' own
 * kernels (decode, sol) have their table in packages/tools/src/kernels/table.ts.
 */
export interface ToolKernel {
  kernelName: string
  /** Path relative to the package's kernels/ folder, or absolute (the tools' kernels). */
  sourceFile: string
  /** abi.cuh struct of its one parameter. */
  paramsStruct: string
}

export const TOOL_KERNELS: readonly ToolKernel[] = Object.freeze([
  { kernelName: 'llcomm_spin_ns', sourceFile: 'support/spin.cu', paramsStruct: 'LlcommSpinParams' },
  { kernelName: 'llcomm_stress_ll16', sourceFile: 'support/stress_ll16.cu', paramsStruct: 'LlcommStressParams' },
])

function listFiles(dir: string): string[] {
  const out: string[] = []
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name)
    if (e.isDirectory()) out.push(...listFiles(p))
    else if (/\.(cu|cuh|def)$/.test(e.name)) out.push(p)
  }
  return out.sort()
}

/**
 * Every file NVRTC may need: `name` is the include name (a path relative to kernels/, exactly as the sources write
 * their #include lines), `path` the file relative to kernels/.
 */
export function kernelSources(): { name: string; path: string }[] {
  const dir = kernelsDirectory()
  return listFiles(dir).map((p) => {
    const rel = relative(dir, p).split(sep).join('/')
    return { name: rel, path: rel }
  })
}

/**
 * The variant for an algorithm, dtype and op; `protocol` picks LL16 or LL8 for oneshot-ll (default LL8). For
 * twoshot-sentinel the push kernel: launchVariant() swaps in the pull kernel per launch.
 */
export function selectKernel(
  algorithm: AlgorithmName,
  dtype: Dtype,
  op: ReduceOp,
  protocol?: LlProtocol,
): KernelVariant {
  const candidates = KERNEL_VARIANTS.filter(
    (v) => v.algorithm === algorithm && v.dtype === dtype && v.op === op && v.allGather !== 'pull',
  )
  if (candidates.length === 0) {
    if (!ALGORITHMS_WITH_KERNELS.includes(algorithm)) {
      throw new LlcommError('UNSUPPORTED_ALGORITHM', `algorithm ${algorithm} has no llcomm kernel`, { algorithm })
    }
    throw new LlcommError('UNSUPPORTED_DTYPE', `no ${algorithm} kernel for dtype ${dtype} and op ${op}`, {
      algorithm,
      dtype,
      op,
    })
  }
  if (candidates.length === 1) {
    if (protocol !== undefined && algorithm === 'oneshot-ll' && candidates[0].protocol !== protocol) {
      throw new LlcommError('INVALID_ARGUMENT', `no ${algorithm} kernel with protocol ${protocol}`, {
        algorithm,
        protocol,
      })
    }
    return candidates[0]
  }
  // Several protocols (oneshot-ll): LL8 unless asked, since LL16 needs the stress test's verdict first (docs/design.md §2).
  const want: KernelProtocol = protocol ?? 'll8'
  const v = candidates.find((c) => c.protocol === want)
  if (!v)
    throw new LlcommError('INVALID_ARGUMENT', `no ${algorithm} kernel with protocol ${want}`, {
      algorithm,
      protocol: want,
    })
  return v
}

// ---- buffers ----
/** Default payload capacity per buffer half (bytes, all channels together): CommunicatorOptions.bufferBytes. */
export const DEFAULT_BUFFER_BYTES = DEFAULT_BUFFER_BYTES_OF_BACKEND.cuda

export interface BufferFill {
  offset: number
  bytes: number
  word32: number
  region: 'recv' | 'scratch'
}

export interface DeviceBufferLayout {
  recvBufBytes: number
  scratchBytes: number
  channels: number
  /** What the host writes once at creation (cuMemsetD32), per rank. Ranges not listed need no initial contents. */
  fills: BufferFill[]
  /** Regions of the receive buffer (packed into every launch's params, identical on every rank). */
  ll: BufferRegion
  sentinel: BufferRegion
  ll128: BufferRegion
  plain: BufferRegion
  /** sizeof(LlcommErrorWord), one per communicator, zero-filled. */
  errorWordBytes: number
  nranks: number
  bufferBytes: number
}

const roundUp = (x: number, m: number) => Math.ceil(x / m) * m
const roundDown = (x: number, m: number) => Math.floor(x / m) * m

function checkRanks(nranks: number): void {
  if (!Number.isInteger(nranks) || nranks < 1 || nranks > LLCOMM_MAX_RANKS) {
    throw new LlcommError('INVALID_ARGUMENT', `nranks ${nranks} outside 1..${LLCOMM_MAX_RANKS}`, { nranks })
  }
}

/**
 * Each rank's receive buffer holds four regions, each split into LLCOMM_MAX_CHANNELS channels × 2 halves (epoch
 * parity). With P = ceil(bufferBytes / channels) rounded up to 128 bytes of payload per channel-half:
 *   ll       (LL8/LL16 packets, zero fill)       2P per channel-half (packets are half flag)
 *   sentinel (sentinel slots, 0xFFFFFFFF fill)     P
 *   ll128    (atomic lines, zero fill)            lines for P / nranks of payload (twoshot-atomic's owner part), twice:
 *                                                 f16/bf16 on f32 lines take two lines per 31 words (issue 18 item 4),
 *                                                 so twoshot-atomic's capacity per launch stays what its LL8 all-gather
 *                                                 lanes carry (P / nranks per owner) in every build
 *   plain    (ring, oneshot-barrier; no fill)      P
 * So a one-shot carries bufferBytes / nranks per launch and a two-shot up to bufferBytes / 2 or bufferBytes.
 */
export function deviceBufferLayout(nranks: number, bufferBytes: number = DEFAULT_BUFFER_BYTES): DeviceBufferLayout {
  checkRanks(nranks)
  if (!Number.isInteger(bufferBytes) || bufferBytes < 1) {
    throw new LlcommError('INVALID_ARGUMENT', `bufferBytes ${bufferBytes} must be a positive integer`, { bufferBytes })
  }
  const channels = LLCOMM_MAX_CHANNELS
  const payload = roundUp(Math.ceil(bufferBytes / channels), 128)
  const llHalf = 2 * payload
  const sentinelHalf = payload
  const ll128Half = 2 * Math.ceil(payload / nranks / (LLCOMM_LINE_DATA_WORDS * 4)) * LLCOMM_LINE_BYTES
  const plainHalf = payload
  let offset = 0
  const place = (half: number): BufferRegion => {
    const r = { offset, channelHalfBytes: half }
    offset += channels * 2 * half
    return r
  }
  const ll = place(llHalf)
  const sentinel = place(sentinelHalf)
  const ll128 = place(ll128Half)
  const plain = place(plainHalf)
  const recvBufBytes = offset
  if (recvBufBytes > 2 ** 40)
    throw new LlcommError('INVALID_ARGUMENT', `bufferBytes ${bufferBytes} gives an absurd buffer`)
  const regionBytes = (r: BufferRegion) => channels * 2 * r.channelHalfBytes
  return {
    recvBufBytes,
    scratchBytes: LLCOMM_SCRATCH_BYTES,
    channels,
    fills: [
      { offset: ll.offset, bytes: regionBytes(ll), word32: 0, region: 'recv' },
      { offset: sentinel.offset, bytes: regionBytes(sentinel), word32: LLCOMM_SENTINEL_WORD, region: 'recv' },
      { offset: ll128.offset, bytes: regionBytes(ll128), word32: 0, region: 'recv' },
      { offset: 0, bytes: LLCOMM_SCRATCH_BYTES, word32: 0, region: 'scratch' },
    ],
    ll,
    sentinel,
    ll128,
    plain,
    errorWordBytes: LLCOMM_ERROR_WORD_BYTES,
    nranks,
    bufferBytes,
  }
}

// ---- launch shape ----
/**
 * Bytes of message per block before another block (channel) is used. More blocks put more SMs (and more loads) in
 * flight at once; fewer keep the per-block fixed cost down. The one-shot entries were lowered fourfold (4096 -> 1024,
 * 8192 -> 2048) after a run with LLCOMM_TARGET_BYTES_PER_BLOCK_SCALE=0.25 on an H200, 8 virtual ranks, bf16
 * (bench/results/cuda-h200-bench-v8-scale025-2026-11-29b.json against cuda-h200-bench-v8-2026-11-29b.json):
 * oneshot-ll 8 KB 6.75 -> 4.04 us, 64 KB 7.81 -> 7.41; oneshot-sentinel 8 KB 6.13 -> 4.46, 64 KB 6.80 -> 6.19.
 * twoshot-sentinel and barrier went from 16384 to 4096 and 2048 after a sweep of the scale at 2-64 virtual ranks on
 * the kernels since fd9724f (bench/results/cuda-h200-block-scale-sweep-2026-12-02.txt, bf16, 3 interleaved rounds;
 * µs at the old entry -> the new): twoshot-sentinel 2 ranks 64 KB 4.79 -> 4.33, 8 ranks 64 KB 6.57 -> 5.48, 16 ranks
 * 8 KB 5.83 -> 5.50, 16 ranks 64 KB 6.82 -> 6.26, 32 ranks 8 KB 6.49 -> 5.96; oneshot-barrier 2 ranks 64 KB 5.18 ->
 * 4.40, 8 ranks 64 KB 6.35 -> 5.32, 16 ranks 8 KB 5.98 -> 5.43, 16 ranks 64 KB 8.15 -> 6.97, 32 ranks 8 KB 7.81 ->
 * 7.09; 256 KB and 1 MB unchanged (already at the block cap or bandwidth-bound). The one-shot sentinel entry is the
 * one at 2 ranks; it shrinks with the ranks (ONESHOT_SENTINEL_TARGET_RANKS). The LL entries stay: at 8 ranks 8 KB
 * oneshot-ll took 3.13 us at 1024 and 3.99 at 512.
 */
export const TARGET_BYTES_PER_BLOCK: Readonly<Record<KernelProtocol | 'twoshot-sentinel', number>> = {
  ll8: 1024,
  ll16: 1024,
  sentinel: 2048,
  'twoshot-sentinel': 4096,
  ll128: 16384,
  barrier: 2048,
  flags: 32768,
}

/**
 * oneshot-sentinel's target is TARGET_BYTES_PER_BLOCK.sentinel times min(1, ONESHOT_SENTINEL_TARGET_RANKS / nranks):
 * each of its blocks reduces its piece from every rank, so a block's work per byte grows with the ranks. Measured
 * (the sweep above): 8 ranks 8 KB 4.38 us at 2048 (4 blocks), 3.46 at 512 (16); 16 ranks 8 KB 5.16 at 2048 (4
 * blocks), 4.27 at 1024 and below (8, the cap); 2 ranks 8 KB 2.72 at 2048, 2.79 at 512. The fused kernels' planners
 * (fused-launcher.ts) read the sentinel entry itself.
 */
export const ONESHOT_SENTINEL_TARGET_RANKS = 2

/** How launchShape sizes a message's blocks: bytes per block, and where oneshot-sentinel's target starts to shrink. */
export interface BlockTargets {
  bytesPerBlock: Readonly<Record<KernelProtocol | 'twoshot-sentinel', number>>
  /** oneshot-sentinel's target times min(1, this / nranks); undefined: the sentinel entry at every rank count. */
  oneshotSentinelRanks: number | undefined
}

/** The library's block targets. */
export const BLOCK_TARGETS: BlockTargets = {
  bytesPerBlock: TARGET_BYTES_PER_BLOCK,
  oneshotSentinelRanks: ONESHOT_SENTINEL_TARGET_RANKS,
}

/** The bytes a block of `v` takes at `nranks` ranks before launchShape adds another (before the scale below). */
export function allReduceTargetBytesPerBlock(
  v: KernelVariant,
  nranks: number,
  targets: BlockTargets = BLOCK_TARGETS,
): number {
  if (v.algorithm === 'twoshot-sentinel') return targets.bytesPerBlock['twoshot-sentinel']
  const target = targets.bytesPerBlock[v.protocol]
  const shrinkFrom = targets.oneshotSentinelRanks
  return v.algorithm === 'oneshot-sentinel' && shrinkFrom !== undefined
    ? target * Math.min(1, shrinkFrom / nranks)
    : target
}

/**
 * Multiplier on every TARGET_BYTES_PER_BLOCK entry, from $LLCOMM_TARGET_BYTES_PER_BLOCK_SCALE (read once, when this
 * module loads; default 1). For sweeping the block targets on a GPU without rebuilding: 0.25 puts four times as
 * many blocks on a message (still capped by maxBlocksPerRank and raised to fit the lanes). Every rank of a
 * communicator must see the same value (launchShape must be identical on every rank).
 */
export const TARGET_BYTES_PER_BLOCK_SCALE: number = parseTargetScale(process.env.LLCOMM_TARGET_BYTES_PER_BLOCK_SCALE)

export function parseTargetScale(text: string | undefined): number {
  if (text === undefined || text.trim() === '') return 1
  const x = Number(text)
  if (!Number.isFinite(x) || x <= 0)
    throw new LlcommError('INVALID_ARGUMENT', `LLCOMM_TARGET_BYTES_PER_BLOCK_SCALE=${text} must be a positive number`, {
      value: text,
    })
  return x
}

/** Blocks of all ranks of one device together must stay co-resident: at most 128 (H200 has 132 SMs). */
export const MAX_BLOCKS_PER_DEVICE = 128

export function maxBlocksPerRank(nranks: number): number {
  return Math.max(1, Math.min(LLCOMM_MAX_CHANNELS, Math.floor(MAX_BLOCKS_PER_DEVICE / nranks)))
}

/**
 * Payload bytes one channel can carry in one launch for this variant, from the region sizes exactly as the
 * kernel computes its lanes (always a multiple of 16).
 */
export function channelCapacityBytes(
  v: KernelVariant,
  nranks: number,
  layout: DeviceBufferLayout,
  kernelOptions: KernelBuildOptions = {},
): number {
  const n = nranks
  const ll = layout.ll.channelHalfBytes
  const s = layout.sentinel.channelHalfBytes
  const plain = layout.plain.channelHalfBytes
  switch (v.algorithm) {
    case 'oneshot-ll': {
      // lane = ll / n (16-aligned) per sender; each packet carries half its bytes.
      const laneBytes = roundDown(Math.floor(ll / n), 16)
      return roundDown(laneBytes / 2, 16)
    }
    case 'oneshot-sentinel':
      return roundDown(Math.floor(s / n), 16)
    case 'twoshot-sentinel': {
      const part = roundDown(Math.floor(s / (2 * n)), 16) // one RS lane and one AG lane per rank
      return n * part
    }
    case 'twoshot-atomic': {
      const agLane = roundDown(Math.floor(ll / n), 16) // LL8 packets: 4 payload bytes per 8
      const byAg = roundDown(agLane / 2, 16)
      // f16/bf16 on f32 lines (abi.cuh LLCOMM_ATOMIC_F32_LINES): 31 input words take two physical lines
      // (kernels/llcomm/atomic_lines.cuh).
      const f32Lines = (kernelOptions.atomicF32Lines ?? LLCOMM_ATOMIC_F32_LINES !== 0) && DTYPE_BYTES[v.dtype] === 2
      const lines = Math.floor(layout.ll128.channelHalfBytes / LLCOMM_LINE_BYTES / (f32Lines ? 2 : 1))
      const byLines = roundDown(lines * LLCOMM_LINE_DATA_WORDS * 4, 16)
      return n * Math.min(byAg, byLines)
    }
    case 'oneshot-barrier':
      return roundDown(plain, 16)
    case 'ring': {
      if (n === 1) return roundDown(plain, 16)
      const slot = roundDown(Math.floor(plain / (2 * (n - 1))), 16) // one part per step
      // With f32 partials (abi.cuh LLCOMM_RING_F32_PARTIALS), f16/bf16 reduce-scatter steps carry f32 partial sums
      // (kernels/allreduce/ring.cu): a part is half a slot.
      const wide = (kernelOptions.ringF32Partials ?? LLCOMM_RING_F32_PARTIALS !== 0) && DTYPE_BYTES[v.dtype] === 2
      return n * (wide ? roundDown(slot / 2, 16) : slot)
    }
    default:
      throw new LlcommError('UNSUPPORTED_ALGORITHM', `algorithm ${v.algorithm} has no llcomm kernel`)
  }
}

/**
 * Compile-time kernel switches the capacity rules depend on (default: abi.cuh's values); set by the communicator
 * option `accumulation` (accumulationBuild()) and by the kernel tests.
 */
export interface KernelBuildOptions {
  /** The kernels were built with LLCOMM_RING_F32_PARTIALS=1 (or 0). */
  ringF32Partials?: boolean
  /** The kernels were built with LLCOMM_ATOMIC_F32_LINES=1 (or 0). */
  atomicF32Lines?: boolean
  /**
   * The kernels were built with LLCOMM_SIG_DEFERRED (kernels/llcomm/signature.cuh: kernel e checks epoch e - 1's
   * call signatures; the host checks each channel's last launch, latest-signature.ts). No capacity rule depends on
   * it; the communicators' checkDeviceError does.
   */
  signatureDeferred?: boolean
  /**
   * The kernels were built with LLCOMM_SIG_IN_BLOCKS (the in-block check: signature.cuh), which the host asks for when
   * it launches no signature block (LLCOMM_SIG_BLOCK=0: SIGNATURE_KERNEL_BUILD).
   */
  signatureInBlocks?: boolean
  /**
   * The fused RMSNorm kernels take a signature cluster, and allreduce_many a signature block, after their data blocks
   * (LLCOMM_FUSED_SIG_CLUSTER, kernels/llcomm/fused_signature.cuh): the per-process communicator's build, with the
   * signature block only. The in-process build leaves it off (but for the FUSED_SIGNATURE_IN_PROCESS A/B setting),
   * and its kernels are those without it.
   */
  fusedSignatureCluster?: boolean
}

/**
 * Whether the communicators build their kernels with the deferred signature check (default off, as abi.cuh):
 * LLCOMM_SIG_DEFERRED=1 in the environment turns it on (NVRTC -DLLCOMM_SIG_DEFERRED=1, and the host's check of
 * each channel's last launch in checkDeviceError), for its A/B and GPU tests.
 */
export const SIGNATURE_DEFERRED: boolean = process.env.LLCOMM_SIG_DEFERRED === '1'

/**
 * Whether every all-reduce launch carries a signature block (kernels/llcomm/signature.cuh, llcSignatureBlock: one
 * block after the data blocks publishes and checks the call signature of every rank of the launch, and the data
 * blocks carry none; the default kernels since round 11 of research/notes/signature-cost.md). A launch then takes
 * ranks x blocksPerRank + 1 blocks, within MAX_BLOCKS_PER_DEVICE + 1 (co-resident on 132 SMs). Off with the deferred
 * build (its check is in the data blocks) and with LLCOMM_SIG_BLOCK=0, an A/B setting (the kernel trees built without
 * the block: research/scripts/probe/make-signature-trees.sh writes it into their ab.env), under which the host builds
 * the kernels with the in-block check instead (SIGNATURE_KERNEL_BUILD), so that no setting leaves a call unchecked.
 * On with kernels built without the guard (allreduce_common.cuh) the extra block would act as a data block of the
 * launch's first rank.
 */
export const SIGNATURE_BLOCK: boolean = process.env.LLCOMM_SIG_BLOCK !== '0' && !SIGNATURE_DEFERRED

/**
 * The signature settings above in one value, for the per-process rendezvous config: ranks whose environments set
 * them differently would run kernels that publish and check in different places (a rank without the block waits for
 * packets its peers never store where it looks), so such a rank is refused at creation, as with
 * LLCOMM_TWOSHOT_ALLGATHER, instead of failing its first call at the deadline.
 */
export const SIGNATURE_CHECK: 'block' | 'deferred' | 'in-blocks' = SIGNATURE_DEFERRED
  ? 'deferred'
  : SIGNATURE_BLOCK
    ? 'block'
    : 'in-blocks'

/**
 * LLCOMM_FUSED_SIG_IN_PROCESS=1 (an A/B setting for scripts/bench-fused.mjs, read once; only with the signature
 * block): the in-process communicator's fused launches carry the per-process build's signature cluster too (one more
 * cluster of C blocks per launch, publishing and checking every launched rank's words: kernels/llcomm/
 * fused_signature.cuh), so one process can measure what the check costs a per-process fused call. In process it
 * checks nothing a host call could get wrong (one call launches every rank with the same words).
 */
export const FUSED_SIGNATURE_IN_PROCESS: boolean = process.env.LLCOMM_FUSED_SIG_IN_PROCESS === '1' && SIGNATURE_BLOCK

/** The kernels' build for SIGNATURE_CHECK (kernelBuildDefines: nothing for the default, the block). */
export const SIGNATURE_KERNEL_BUILD: KernelBuildOptions = {
  signatureDeferred: SIGNATURE_CHECK === 'deferred',
  signatureInBlocks: SIGNATURE_CHECK === 'in-blocks',
}

/**
 * The kernel switches of a communicator's `accumulation` option: 'f32' (default) keeps abi.cuh's defaults (f32
 * accumulation everywhere); 'dtype' builds the f16/bf16 ring with 16-bit partials and twoshot-atomic with packed
 * 16-bit red.add (docs/kernels.md, "Numerics").
 */
export function accumulationBuild(accumulation: Accumulation): KernelBuildOptions {
  return accumulation === 'dtype' ? { ringF32Partials: false, atomicF32Lines: false } : {}
}

/** NVRTC -D options for the switches that differ from abi.cuh's defaults (none for the defaults: same cache key). */
export function kernelBuildDefines(o: KernelBuildOptions): string[] {
  const out: string[] = []
  if (o.ringF32Partials !== undefined && o.ringF32Partials !== (LLCOMM_RING_F32_PARTIALS !== 0))
    out.push(`-DLLCOMM_RING_F32_PARTIALS=${o.ringF32Partials ? 1 : 0}`)
  if (o.atomicF32Lines !== undefined && o.atomicF32Lines !== (LLCOMM_ATOMIC_F32_LINES !== 0))
    out.push(`-DLLCOMM_ATOMIC_F32_LINES=${o.atomicF32Lines ? 1 : 0}`)
  if (o.signatureDeferred) out.push('-DLLCOMM_SIG_DEFERRED=1')
  if (o.signatureInBlocks) out.push('-DLLCOMM_SIG_IN_BLOCKS=1')
  if (o.fusedSignatureCluster) out.push('-DLLCOMM_FUSED_SIG_CLUSTER=1')
  return out
}

/** llcPiece's size: ceil(count / parts) rounded up to alignElems (kernels/llcomm/channel.cuh). */
export function pieceElems(count: number, parts: number, alignElems: number): number {
  return roundUp(Math.ceil(count / parts), alignElems)
}

export interface LaunchShape {
  blocksPerRank: number
  threadsPerBlock: number
  sharedBytes: number
  maxCountPerCall: number
}

/**
 * The launch shape of one launch of `count` elements per rank (a pure function of variant, nranks, count and the
 * buffer size, so every rank runs the same channels). The host launches min(count, maxCountPerCall) elements
 * and chunks the rest. `bufferBytes` must be the communicator's (deviceBufferLayout's) value.
 */
export function launchShape(
  v: KernelVariant,
  nranks: number,
  count: number,
  bufferBytes: number = DEFAULT_BUFFER_BYTES,
  kernelOptions: KernelBuildOptions = {},
  targets: BlockTargets = BLOCK_TARGETS,
): LaunchShape {
  checkRanks(nranks)
  if (!Number.isInteger(count) || count < 1)
    throw new LlcommError('INVALID_ARGUMENT', `count ${count} must be a positive integer`)
  const layout = deviceBufferLayout(nranks, bufferBytes)
  const eb = DTYPE_BYTES[v.dtype]
  const alignElems = 16 / eb
  const capElems = channelCapacityBytes(v, nranks, layout, kernelOptions) / eb
  if (capElems < alignElems) {
    throw new LlcommError(
      'INVALID_ARGUMENT',
      `bufferBytes ${bufferBytes} is too small for ${v.algorithm} at ${nranks} ranks`,
      {
        bufferBytes,
        nranks,
      },
    )
  }
  const maxBlocks = maxBlocksPerRank(nranks)
  const maxCountPerCall = maxBlocks * capElems
  const n = Math.min(count, maxCountPerCall)
  const target = Math.max(16, allReduceTargetBytesPerBlock(v, nranks, targets) * TARGET_BYTES_PER_BLOCK_SCALE)
  let blocks = Math.max(Math.ceil((n * eb) / target), Math.ceil(n / capElems))
  blocks = Math.min(maxBlocks, Math.max(1, blocks))
  // Every channel's piece must fit its lanes (the kernels do not check; this is the guarantee).
  while (pieceElems(n, blocks, alignElems) > capElems && blocks < maxBlocks) blocks++
  return { blocksPerRank: blocks, threadsPerBlock: LLCOMM_THREADS, sharedBytes: 0, maxCountPerCall }
}

// ---- twoshot-sentinel: push or pull all-gather, per launch ----
/**
 * $LLCOMM_TWOSHOT_ALLGATHER: which twoshot-sentinel kernel a launch takes. 'auto' (default): twoshotAllGather();
 * 'push': always the push kernel (the product's all-gather; for A/B runs against 'auto'); 'pull': the pull kernel
 * for every launch that takes the serial path (twoshotSerialPath; the spread path has no pull). Read once, when a
 * communicator is created (parseTwoshotAllGather). Every rank must see the same value: with another value at one
 * rank the same call can run the push kernel there and the pull kernel elsewhere, which share the call signature,
 * so their all-gathers wait for what the other never sends and end in TIMEOUT (bounded, never a hang).
 */
export type TwoshotAllGatherMode = 'auto' | 'push' | 'pull'

/** LLCOMM_TWOSHOT_ALLGATHER's value: unset or empty is 'auto'; anything but auto, push, pull is INVALID_ARGUMENT. */
export function parseTwoshotAllGather(text: string | undefined): TwoshotAllGatherMode {
  const t = text?.trim() ?? ''
  if (t === '') return 'auto'
  if (t === 'auto' || t === 'push' || t === 'pull') return t
  throw new LlcommError('INVALID_ARGUMENT', `LLCOMM_TWOSHOT_ALLGATHER=${text} must be auto, push or pull`, {
    value: text,
  })
}

/** ll_buffer.cuh's spread-path constants (the GPU build's; the emulator builds other values, test/kernels). */
export const LLCOMM_SPREAD_MIN_RANKS = 8
export const LLCOMM_SPREAD_MIN_GROUPS = 4
export const LLCOMM_PEER_STAGE_WORDS = 8192

/**
 * The 16-byte slots of one part of a launch's first (largest) channel, as twoshot_sentinel.cu computes slotsPerPart:
 * chanElems = the channel's piece of count (llcPiece), partElems = llcPieceElems(chanElems, nranks, 16 / eb).
 */
export function twoshotPartSlots(dtype: Dtype, nranks: number, count: number, blocksPerRank: number): number {
  const eb = DTYPE_BYTES[dtype]
  const chanElems = Math.min(count, pieceElems(count, blocksPerRank, 16 / eb))
  return Math.ceil((pieceElems(chanElems, nranks, 16 / eb) * eb) / 16)
}

/**
 * Whether twoshot_sentinel.cu takes its serial path for parts of `slots` slots (not the spread path:
 * llcSpreadGroups(n, slots, 4) > 1 && 4 * slots <= blockDim.x, at LLCOMM_THREADS threads).
 */
export function twoshotSerialPath(nranks: number, slots: number, threads: number = LLCOMM_THREADS): boolean {
  const spreadable =
    nranks >= LLCOMM_SPREAD_MIN_RANKS && slots > 0 && slots < threads && slots * 4 <= LLCOMM_PEER_STAGE_WORDS
  const groups = spreadable ? Math.min(Math.floor(threads / slots), nranks) : 1
  return !(groups >= LLCOMM_SPREAD_MIN_GROUPS && 4 * slots <= threads)
}

/**
 * Stores the pull must remove per channel and rank, in 16-byte slots, before it pays: (2n - 3) * slotsPerPart >=
 * TWOSHOT_PULL_MIN_SLOTS (48 KB). Per channel and rank the push costs the owner n - 1 broadcast copies of its part and
 * the receivers n - 1 re-arms of their AG slots (plus the polls that miss); the pull costs one publish copy, so it
 * removes (2n - 3) * slotsPerPart stores, for a fixed cost per launch and block (bar.sync, a release at system scope,
 * a dependent acquire round trip, a second bar.sync). Measured on one H200, virtual ranks, bf16: at 2 ranks that
 * cost was +1.3-1.4 us with nothing visible saved (8 B / 8 KB / 64 KB: 3.62 / 3.97 / 4.72 -> 4.99 / 5.38 / 6.04 us,
 * bench/results/cuda-h200-bench-scale-v2-2026-12-02.json); at 8 ranks, 1 MB, 256-slot parts (3328 slots removed, two
 * launches, 1 MB buffer) +0.7 us a launch, 512-slot parts (6656, one launch, 4 MB buffer) 20.06 -> 16.22 us
 * (bench/results/cuda-h200-scale-ab-pullag-2026-12-02.txt). A line through the gains per launch crosses zero at
 * 2300-2600 slots; 3072 keeps both 8-rank wins and leaves the cases near the break-even on the push (pullgate:
 * research/notes/scale-2026-12-02-pullag.md). The gate moved from the kernel (pullgate: per channel, inside one
 * kernel) to the host because the pull branch's mere presence cost the push +0.05-0.25 us at 2 ranks (8 B 3.80 ->
 * 4.05, 256 KB 5.02 -> 5.27, bench/results/cuda-h200-scale-ab-pullgate-2026-12-02.txt): the push kernel is now the
 * product's code, unchanged.
 * Measured on virtual ranks, where the saved stores are L2 traffic; across NVLink re-measure before trusting it.
 */
export const TWOSHOT_PULL_MIN_SLOTS = 3072

/**
 * The twoshot-sentinel kernel of one launch of `count` elements in `blocksPerRank` channels: 'pull' when the launch
 * takes the serial path (twoshotSerialPath of its first channel's parts) and, in mode 'auto', the pull removes at
 * least TWOSHOT_PULL_MIN_SLOTS stores a channel (its comment: the measurements). What it picks at 512 threads: 2 ranks
 * push up to 3072-slot (48 KB) parts, beyond any launch of the 1 MB and 4 MB buffers; 4 ranks pull from 615-slot
 * parts (1 MB with a 4 MB buffer); 8 ranks pull from 237-slot parts (the serial path starts above 128 slots: 1 MB
 * calls, both with the 1 MB buffer's two 512 KB launches and the 4 MB buffer's one). A function of (dtype, nranks,
 * count, blocksPerRank, mode) only: the same at every rank of a matched call (launchShape is). A mismatched call
 * (another count or dtype at one rank) may pick the other kernel there: its signature (twoshot-sentinel either way)
 * still differs, and both kernels' all-gather waits are armed, so it ends in MISMATCH (or TIMEOUT), never a hang (the
 * emulator test runs such pairs). The other channels of the launch run the same kernel; a short last channel whose parts
 * would spread takes the pull kernel's serial path (the pull kernel has no spread path).
 */
export function twoshotAllGather(
  dtype: Dtype,
  nranks: number,
  count: number,
  blocksPerRank: number,
  mode: TwoshotAllGatherMode = 'auto',
): TwoshotKernel {
  if (mode === 'push' || nranks < 2) return 'push'
  const slots = twoshotPartSlots(dtype, nranks, count, blocksPerRank)
  if (!twoshotSerialPath(nranks, slots)) return 'push'
  return mode === 'pull' || (2 * nranks - 3) * slots >= TWOSHOT_PULL_MIN_SLOTS ? 'pull' : 'push'
}

/**
 * The kernel one launch runs: `v` itself, or for twoshot-sentinel the kernel twoshotAllGather picks (its pull
 * sibling: the same algorithm, protocol, dtype and op, allGather 'pull').
 */
export function launchVariant(
  v: KernelVariant,
  nranks: number,
  count: number,
  blocksPerRank: number,
  mode: TwoshotAllGatherMode = 'auto',
): KernelVariant {
  if (v.algorithm !== 'twoshot-sentinel') return v
  const want = twoshotAllGather(v.dtype, nranks, count, blocksPerRank, mode)
  if (v.allGather === want) return v
  const sibling = KERNEL_VARIANTS.find(
    (x) =>
      x.algorithm === v.algorithm &&
      x.protocol === v.protocol &&
      x.dtype === v.dtype &&
      x.op === v.op &&
      x.allGather === want,
  )
  if (!sibling) throw new LlcommError('UNSUPPORTED_DTYPE', `no twoshot-sentinel ${want} kernel for dtype ${v.dtype}`)
  return sibling
}

// ---- fused kernels (issue 21) ----
/** The fused kernels of instantiations.def's LLCOMM_FUSED_VARIANT lines (kernels/allreduce/<kind>.cu). */
export type FusedKernelKind =
  | 'fused_rmsnorm_oneshot'
  | 'fused_rmsnorm_twoshot'
  | 'fused_rmsnorm_split'
  | 'fused_rmsnorm_split_ll'
  | 'fused_rmsnorm_split_push'
  | 'fused_rmsnorm_split_ll_push'
  | 'fused_rmsnorm_split_twoshot'
  | 'rmsnorm'
  | 'allreduce_many'
export interface FusedKernel {
  kind: FusedKernelKind
  dtype: Dtype
  kernelName: string
  /** Path relative to kernels/. */
  sourceFile: string
  /** The C struct of its one parameter (kernels/llcomm/fused_abi.cuh). */
  paramsStruct: 'LlcommFusedNormParams' | 'LlcommAllReduceManyParams'
}
const FUSED_LINE = /^LLCOMM_FUSED_VARIANT\(\s*(\w+)\s*,\s*(\w+)\s*\)\s*$/
const FUSED_KINDS: readonly FusedKernelKind[] = [
  'fused_rmsnorm_oneshot',
  'fused_rmsnorm_twoshot',
  'fused_rmsnorm_split',
  'fused_rmsnorm_split_ll',
  'fused_rmsnorm_split_push',
  'fused_rmsnorm_split_ll_push',
  'fused_rmsnorm_split_twoshot',
  'rmsnorm',
  'allreduce_many',
]

/** Parses the LLCOMM_FUSED_VARIANT(kind, dtype) lines of instantiations.def. */
export function parseFusedInstantiations(text: string): FusedKernel[] {
  const out: FusedKernel[] = []
  for (const raw of text.split('\n')) {
    const line = raw.trim()
    if (!line.startsWith('LLCOMM_FUSED_VARIANT(')) continue
    const m = FUSED_LINE.exec(line)
    if (!m) throw new LlcommError('INVALID_ARGUMENT', `cannot parse instantiation line: ${line}`)
    const [, kind, dtype] = m
    if (!FUSED_KINDS.includes(kind as FusedKernelKind))
      throw new LlcommError('INVALID_ARGUMENT', `unknown fused kernel in ${line}`)
    if (!DTYPE_NAMES.includes(dtype as Dtype)) throw new LlcommError('INVALID_ARGUMENT', `unknown dtype in ${line}`)
    out.push({
      kind: kind as FusedKernelKind,
      dtype: dtype as Dtype,
      kernelName: `llcomm_${kind}_${dtype}`,
      sourceFile: `allreduce/${kind}.cu`,
      paramsStruct: kind === 'allreduce_many' ? 'LlcommAllReduceManyParams' : 'LlcommFusedNormParams',
    })
  }
  return out
}

export const FUSED_KERNELS: readonly FusedKernel[] = Object.freeze(
  parseFusedInstantiations(readFileSync(join(kernelsDirectory(), INSTANTIATIONS_FILE), 'utf8')).map((k) =>
    Object.freeze(k),
  ),
)

export function selectFusedKernel(kind: FusedKernelKind, dtype: Dtype): FusedKernel {
  const k = FUSED_KERNELS.find((x) => x.kind === kind && x.dtype === dtype)
  if (!k) throw new LlcommError('UNSUPPORTED_DTYPE', `no ${kind} kernel for dtype ${dtype}`, { kind, dtype })
  return k
}
