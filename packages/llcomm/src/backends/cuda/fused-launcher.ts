/**
 * Launches of the fused kernels (issue 21): AllReduce + residual add + RMSNorm (one-shot and two-shot sentinel), the
 * reference RMSNorm kernel of the unfused composition, and allReduceMany. Pure planning functions (which kernel, how
 * many blocks, how rows or buffers are split over launches: the same on every rank) and a launcher that packs the
 * parameters once per call and issues them allocation-free, as allreduce-launcher.ts does for the AllReduce.
 *
 * Row layout: x, residual and out are [rows][hidden] row-major and contiguous per rank; hidden * elementBytes must
 * be a multiple of 16 (every row starts on a 16-byte boundary; the kernels move whole 16-byte slots).
 */

import type { Dtype } from '../../api/types.js'
import { DTYPE_BYTES } from '../../api/types.js'
import { LlcommError } from '../../errors.js'
import { type CudaDriver, type CuStream, type DevicePtr, PreparedLaunch } from '../../ffi/index.js'
import { encodeFusedSignature, encodeManyGroupSignature, encodeManySignature } from '../../protocol/call-signature.js'
import { f32Bits, LLCOMM_THREADS } from './abi.js'
import type { CommunicatorDeviceState } from './allreduce-launcher.js'
import type {
  FusedManyCall,
  FusedNormAlgorithm,
  FusedNormCall,
  FusedProbe,
  FusedSplitAlgorithm,
  PreparedFusedCall,
} from './device-call.js'
import type { DeviceSet, LaunchGroup } from './devices.js'
import {
  type AllReduceManyParamsHost,
  FUSED_NORM_PARAMS_LAYOUT,
  LLCOMM_FUSED_NO_RESIDUAL_IN,
  LLCOMM_FUSED_OUT_E4M3,
  LLCOMM_FUSED_RESIDUAL_F32,
  LLCOMM_MANY_MAX_BUFFERS,
  packAllReduceManyParams,
  packFusedNormParams,
} from './fused-abi.js'
import {
  DEFAULT_BUFFER_BYTES,
  deviceBufferLayout,
  type FusedKernel,
  type FusedKernelKind,
  maxBlocksPerRank,
  pieceElems,
  selectFusedKernel,
  TARGET_BYTES_PER_BLOCK,
  TARGET_BYTES_PER_BLOCK_SCALE,
  twoshotSerialPath,
} from './kernel-table.js'
import type { KernelModules } from './modules.js'

const floor16 = (x: number) => Math.floor(x / 16) * 16
// (split-twoshot has one kernel, a push kernel: its plans have clusters of C > 1 blocks whose q's fit)
const splitKind = (a: FusedSplitAlgorithm): FusedKernelKind =>
  a === 'split' ? 'fused_rmsnorm_split' : a === 'split-ll' ? 'fused_rmsnorm_split_ll' : 'fused_rmsnorm_split_twoshot'
const splitPushKind = (a: FusedSplitAlgorithm): FusedKernelKind =>
  a === 'split'
    ? 'fused_rmsnorm_split_push'
    : a === 'split-ll'
      ? 'fused_rmsnorm_split_ll_push'
      : 'fused_rmsnorm_split_twoshot'
/**
 * LLCOMM_FUSED_SPLIT_PUSH=0: the split kernels exchange their q's through the two release barriers everywhere,
 * never with the push kernels (read once; for A/B runs and diagnosis: the outputs are the same bits).
 */
const SPLIT_PUSH = process.env.LLCOMM_FUSED_SPLIT_PUSH !== '0'
/** LLCOMM_FUSED_CLUSTER_COOPERATIVE=0: cluster launches without the cooperative attribute (read once). */
const CLUSTER_COOPERATIVE = process.env.LLCOMM_FUSED_CLUSTER_COOPERATIVE !== '0'

/**
 * Most rows one block (channel) of the fused kernel can carry in one launch, from the sentinel lanes exactly as the
 * kernel computes them (0: a single row does not fit). One-shot: a block's rows are one message in one lane of
 * channelHalf / nranks bytes. Two-shot: the message is split in nranks parts (each rounded up to a 16-byte slot)
 * and a part must fit one lane of channelHalf / (2 nranks) bytes.
 */
export function fusedRowsPerBlock(
  algorithm: 'oneshot' | 'twoshot',
  nranks: number,
  hidden: number,
  dtype: Dtype,
  bufferBytes: number = DEFAULT_BUFFER_BYTES,
): number {
  const s = deviceBufferLayout(nranks, bufferBytes).sentinel.channelHalfBytes
  const eb = DTYPE_BYTES[dtype]
  const rowBytes = hidden * eb
  if (algorithm === 'oneshot') return Math.floor(floor16(Math.floor(s / nranks)) / rowBytes)
  const lane = floor16(Math.floor(s / (2 * nranks)))
  const e = 16 / eb
  const fits = (k: number) => Math.ceil(Math.ceil((k * hidden) / nranks) / e) * e * eb <= lane
  let k = Math.floor((nranks * lane) / rowBytes)
  while (k > 0 && !fits(k)) k--
  return k
}

export interface FusedNormLaunchPlan {
  /** First row and row count of the launch, and its blocks per rank. */
  firstRow: number
  rows: number
  blocksPerRank: number
  /**
   * Blocks per thread-block cluster (the split kernels: a row is shared by the blocks of a cluster; 1, 2, 4 or 8,
   * dividing blocksPerRank, so that no cluster straddles two ranks). Absent: 1 (no cluster attribute).
   */
  clusterBlocks?: number
}
export interface FusedNormPlan {
  algorithm: FusedNormAlgorithm
  launches: FusedNormLaunchPlan[]
}

/** Checks a [rows][hidden] shape of the fused and reference RMSNorm kernels. */
export function checkNormShape(rows: number, hidden: number, dtype: Dtype): void {
  if (!Number.isInteger(rows) || rows < 1 || rows > 0x7fffffff)
    throw new LlcommError('INVALID_ARGUMENT', `rows must be a positive integer, got ${rows}`)
  if (!Number.isInteger(hidden) || hidden < 1 || hidden > 0x7fffffff)
    throw new LlcommError('INVALID_ARGUMENT', `hidden must be a positive integer, got ${hidden}`)
  if (!(dtype in DTYPE_BYTES)) throw new LlcommError('UNSUPPORTED_DTYPE', `unknown dtype ${dtype}`)
  if ((hidden * DTYPE_BYTES[dtype]) % 16 !== 0)
    throw new LlcommError(
      'INVALID_ARGUMENT',
      `hidden ${hidden} × ${DTYPE_BYTES[dtype]} bytes is not a multiple of 16 (rows must start on 16-byte boundaries)`,
      { hidden, dtype },
    )
}

/**
 * Whether 'auto' takes the fused two-shot ahead of the one-shot and split kernels: all rows in one two-shot launch,
 * every block of it on the two-shot's spread path (fused_rmsnorm_twoshot.cu since f1dd9b7: twoshot_sentinel.cu's
 * rule, twoshotSerialPath), at 8-16 ranks, and at 8-15 ranks at least 16 rows (8 with a hidden of 8192 or more).
 * Measured once on one H200, virtual ranks, bf16, 4 MiB buffer (bench/results/cuda-h200-bench-fused-bf16-v8-2026-12-03b.json
 * and …-v8-16-2026-12-03c.json; the fused two-shot against the choice before):
 * - 8 ranks: hidden 4096 batch 16 7.38 against the one-shot's 8.70 us, batch 32 10.63 against 14.58; hidden 8192
 *   batch 8 8.87 against split's 9.71, batch 16 9.91 against the one-shot's 14.22; not at 4096 batch 8 (6.69 against
 *   the one-shot's 6.64) nor below batch 8 (split: 4096 batch 1-4 5.58 / 6.33 against 6.25 / 6.66).
 * - 16 ranks, every batch 1-32 measured: 4096 batch 1 6.59 against split's 7.07, batch 4 6.80 against 9.58, batch 8
 *   7.14 against the one-shot's 13.81; 8192 batch 1 8.81 against 8.85, batch 4 9.14 against 15.15.
 * - Above 16 ranks not measured (the session's device time ran out): the choice before stands there.
 * Not where a block's parts take the serial path (8 ranks 8192 batch 32: two rows a block, 256-slot parts).
 */
export function fusedTwoshotFirst(
  nranks: number,
  rows: number,
  hidden: number,
  dtype: Dtype,
  bufferBytes: number = DEFAULT_BUFFER_BYTES,
): boolean {
  if (nranks < 8 || nranks > 16 || (nranks < 16 && rows < (hidden >= 8192 ? 8 : 16))) return false
  const k = fusedRowsPerBlock('twoshot', nranks, hidden, dtype, bufferBytes)
  const blocks = maxBlocksPerRank(nranks)
  if (k < 1 || k * blocks < rows) return false
  const eb = DTYPE_BYTES[dtype]
  const blockElems = Math.ceil(rows / Math.min(blocks, rows)) * hidden // the largest block's message
  const partSlots = Math.ceil((pieceElems(blockElems, nranks, 16 / eb) * eb) / 16)
  return !twoshotSerialPath(nranks, partSlots)
}

/**
 * Whether 'auto' tries the split two-shot first (split-twoshot: a row over a cluster, each block's slots exchanged
 * two-shot; it is taken when it serves the rows in one launch): 8-15 ranks, a hidden of 8192 or more, 4-7 rows.
 * Measured on one H100 (80GB HBM3), 8 virtual ranks, bf16, 4 MiB buffer, 2026-12-07, two interleaved rounds
 * (bench/results/cuda-h100-split-twoshot-keep-ab-2026-12-07.txt; its `keep` tree is these kernels): hidden 8192
 * batch 4 7.47 us against split's 8.58 and the fused two-shot's 8.34. Not at batch 8, although the kernel is faster
 * there too (7.65 against the two-shot's 8.43): in a TP 8 decode step of Llama-3.1-70B shapes (virtual ranks, 20
 * layers, 40 fused calls of 8 x 8192 a step) the step with it was 53-140 us slower than with the fused two-shot in 11
 * of 12 rounds (bench/results/cuda-h100-v8-decode-70b-l20-b8-fused-2026-12-07.json; at batch 4 47-71 us faster in 7
 * of 7: …-b4-fused-2026-12-07.json), so 'auto' keeps the two-shot at 8 until that is understood. Not at batch 1-2
 * (6.22 / 6.42 against split's 5.55 / 6.24), 16 (the two-shot 9.86) or a hidden of 4096 (batch 4: 6.18 against
 * split's 6.07). Batch 5-7 not measured; 2 ranks: split was faster (8192 batch 8: 5.90 against 6.57, the first
 * build; bench/results/cuda-h100-bench-fused-split-twoshot-2026-12-07.json).
 */
export function fusedSplitTwoshotFirst(nranks: number, rows: number, hidden: number): boolean {
  return nranks >= 8 && nranks < 16 && hidden >= 8192 && rows >= 4 && rows <= 7
}

/**
 * Which fused kernel and which launches. 'auto' without the split kernels (`autoSplit` false: before sm_90) takes the
 * one-shot when all rows fit one launch, else the two-shot. With them, the crossovers measured on one H200 (bf16, 2
 * and 8 virtual ranks, hidden 4096/8192, batch 1-16: bench/results/cuda-h200-bench-fused-bf16-2026-12-01{b,c}.json):
 * split (a row shared by a cluster) when it serves the rows in one launch and either the one-shot cannot (8 ranks,
 * hidden 8192, batch 1-8: 6.1-9.6 against the two-shot's 11.7-12.5 us) or there are fewer than 8 rows with 8 ranks
 * or more, or a hidden of 8192 or more (8 ranks 4096 batch 1-4: 5.7-6.5 against 6.4-6.8; 2 ranks 8192 batch 1-4:
 * 5.4-5.6 against 7.0), or, with 8 ranks or more, fewer than 16 rows of a hidden of 8192 or more (the 4 MiB
 * buffer's lanes hold 8192-wide rows in the one-shot, which takes one block per row: 8 ranks 8192 batch 8, 10.77
 * against split's 9.72 us; batch 16 keeps the one-shot, 14.24 against 15.05;
 * bench/results/cuda-h200-bench-fused-bf16-2026-12-02c-bb4M.json); the one-shot or two-shot otherwise (2 ranks 4096:
 * 4.5 against 4.9; batch 8 and up). Rows beyond one launch's capacity go to further launches (each a complete fused
 * call on its rows). Blocks: one row per block up to maxBlocksPerRank, then rows are shared out evenly (llcPiece).
 * Ahead of all that, 'auto' takes the two-shot where fusedTwoshotFirst says (its spread path, at 8-16 ranks: from
 * batch 8-16 at 8 ranks, every batch at 16 ranks; measured 2026-12-03). Since the split push kernels (2026-12-07,
 * one H100), split also at 8 rows with 8-15 ranks below a hidden of 8192 (4096 batch 8: 6.49 against the one-shot's
 * 7.01 us).
 */
export function planFusedNorm(
  algorithm: FusedNormAlgorithm | 'auto',
  nranks: number,
  rows: number,
  hidden: number,
  dtype: Dtype,
  bufferBytes: number = DEFAULT_BUFFER_BYTES,
  ranksPerDevice: number = nranks,
  clusterLimit: ClusterLimit = () => Number.POSITIVE_INFINITY,
  autoSplit = false,
  signatureCluster = false,
): FusedNormPlan {
  // The split planner's arguments after the algorithm (the same for every split kernel tried below).
  const split = [nranks, rows, hidden, dtype, bufferBytes, ranksPerDevice, clusterLimit, signatureCluster] as const
  if (algorithm !== 'auto' && isSplit(algorithm)) return planFusedSplit(algorithm, ...split)
  checkNormShape(rows, hidden, dtype)
  if (algorithm === 'auto' && autoSplit && fusedSplitTwoshotFirst(nranks, rows, hidden)) {
    const two = tryPlanFusedSplit('split-twoshot', ...split)
    if (two && two.launches.length === 1) return two
  }
  const maxBlocks = maxBlocksPerRank(nranks)
  const perBlock = {
    oneshot: fusedRowsPerBlock('oneshot', nranks, hidden, dtype, bufferBytes),
    twoshot: fusedRowsPerBlock('twoshot', nranks, hidden, dtype, bufferBytes),
  }
  let alg: 'oneshot' | 'twoshot'
  const oneshotFits = perBlock.oneshot * maxBlocks >= rows
  const twoshotFirst = algorithm === 'auto' && fusedTwoshotFirst(nranks, rows, hidden, dtype, bufferBytes)
  // 8 rows at 8-15 ranks below a hidden of 8192 (where the two-shot comes first): split since its push kernels
  // (2026-12-07, one H100, 8 ranks 4096 batch 8: 6.49 us against the one-shot's 7.01 and the two-shot's 6.67;
  // bench/results/cuda-h100-split-push-ab-2026-12-07.txt)
  const splitAt8 = rows === 8 && nranks >= 8 && nranks < 16 && hidden < 8192
  const splitFirst =
    !twoshotFirst &&
    (!oneshotFits ||
      (rows < 8 && (nranks >= 8 || hidden >= 8192)) ||
      splitAt8 ||
      (rows < 16 && nranks >= 8 && hidden >= 8192))
  if (algorithm === 'auto' && autoSplit && splitFirst) {
    const plan = tryPlanFusedSplit('split', ...split)
    if (plan && plan.launches.length === 1) return plan
  }
  if (algorithm === 'auto') alg = oneshotFits && !twoshotFirst ? 'oneshot' : 'twoshot'
  else alg = algorithm as 'oneshot' | 'twoshot'
  const k = perBlock[alg]
  if (k < 1) {
    throw new LlcommError(
      'INVALID_ARGUMENT',
      `a row of ${hidden} ${dtype} does not fit the ${alg} fused kernel's lanes at ${nranks} ranks with bufferBytes ${bufferBytes}; use a larger bufferBytes${alg === 'oneshot' ? " or algorithm 'twoshot'" : ''}`,
      { hidden, dtype, nranks, bufferBytes, algorithm: alg },
    )
  }
  const perLaunch = k * maxBlocks
  const launches: FusedNormLaunchPlan[] = []
  for (let first = 0; first < rows; first += perLaunch) {
    const n = Math.min(perLaunch, rows - first)
    let blocks = Math.min(maxBlocks, n)
    while (Math.ceil(n / blocks) > k) blocks++ // cannot pass maxBlocks: n <= k * maxBlocks
    launches.push({ firstRow: first, rows: n, blocksPerRank: blocks })
  }
  return { algorithm: alg, launches }
}

/** planFusedSplit, or undefined where the rows do not fit the kernel's lanes (INVALID_ARGUMENT): 'auto' goes on. */
function tryPlanFusedSplit(...args: Parameters<typeof planFusedSplit>): FusedNormPlan | undefined {
  try {
    return planFusedSplit(...args)
  } catch (e) {
    if (!(e instanceof LlcommError) || e.code !== 'INVALID_ARGUMENT') throw e
    return undefined
  }
}

// ---- the split kernels (kernels/llcomm/fused_split.cuh): a row shared by the blocks of a cluster ----

/** The split kernels' threads per row of the reference RMSNorm ("virtual threads", split over a cluster). */
export const FUSED_SPLIT_VIRTUAL_THREADS = LLCOMM_THREADS
/** fused_split.cuh LLCOMM_SPLIT_MAX_UNITS / LLCOMM_SPLIT_MAX_ROWS: (row, virtual thread) units and rows of a block. */
export const FUSED_SPLIT_MAX_UNITS = 4096
export const FUSED_SPLIT_MAX_ROWS = 64
/** Cluster sizes the split kernels are launched with (portable sizes; 512 / C virtual threads per block). */
export const FUSED_CLUSTER_SIZES: readonly number[] = [1, 2, 4, 8]
/** fused_split.cuh LLC_SPLIT_TWO_SUM_SLOTS: the most slots of a split-twoshot part (its owner's shared copy). */
export const FUSED_SPLIT_TWOSHOT_PART_SLOTS = 512

export const isSplit = (a: FusedNormAlgorithm): a is FusedSplitAlgorithm =>
  a === 'split' || a === 'split-ll' || a === 'split-twoshot'

/**
 * Most rows one cluster of C blocks can carry in one launch (0: none). Block b of the cluster holds K * V data slots
 * (16 bytes each) per row, V = 512 / C, K = ceil(slots per row / 512), in its lane: sentinel lanes of channelHalf /
 * nranks bytes (one slot per data slot) or LL lanes of llHalf / nranks bytes (two 16-byte LL16 packets per data
 * slot); and at most FUSED_SPLIT_MAX_UNITS units and FUSED_SPLIT_MAX_ROWS rows. split-twoshot: clusters of C > 1
 * only (its one kernel is a push kernel: at most FUSED_SPLIT_MAX_UNITS / `threads` rows), and a block's R * K * V
 * slots in nranks parts of ceil(R K V / nranks) slots, each within a two-shot lane of channelHalf / (2 nranks) bytes
 * and within FUSED_SPLIT_TWOSHOT_PART_SLOTS. `threads`: the block size (the emulator test passes its own).
 */
export function fusedSplitRowsPerCluster(
  algorithm: FusedSplitAlgorithm,
  nranks: number,
  hidden: number,
  dtype: Dtype,
  clusterBlocks: number,
  bufferBytes: number = DEFAULT_BUFFER_BYTES,
  threads: number = FUSED_SPLIT_VIRTUAL_THREADS,
): number {
  const layout = deviceBufferLayout(nranks, bufferBytes)
  const slotsPerRow = (hidden * DTYPE_BYTES[dtype]) / 16
  const k = Math.ceil(slotsPerRow / threads)
  const v = threads / clusterBlocks
  if (algorithm === 'split-twoshot') {
    if (clusterBlocks < 2) return 0
    const partSlots = Math.min(
      floor16(Math.floor(layout.sentinel.channelHalfBytes / (2 * nranks))) / 16,
      FUSED_SPLIT_TWOSHOT_PART_SLOTS,
    )
    // ceil(R K V / nranks) <= partSlots  <=>  R K V <= partSlots × nranks
    const byParts = Math.floor((partSlots * nranks) / (k * v))
    return Math.max(0, Math.min(FUSED_SPLIT_MAX_ROWS, Math.floor(FUSED_SPLIT_MAX_UNITS / threads), byParts))
  }
  const laneSlots =
    algorithm === 'split'
      ? floor16(Math.floor(layout.sentinel.channelHalfBytes / nranks)) / 16
      : Math.floor(floor16(Math.floor(layout.ll.channelHalfBytes / nranks)) / 32)
  return Math.max(
    0,
    Math.min(FUSED_SPLIT_MAX_ROWS, Math.floor(FUSED_SPLIT_MAX_UNITS / v), Math.floor(laneSlots / (k * v))),
  )
}

/**
 * Whether a split launch of `rows` rows takes a row per cluster of 2 (when clusters of 2 serve it): 8-15 ranks, 4-7
 * rows. Measured on one H100 (80GB HBM3), 8 virtual ranks, bf16, 2026-12-07, three interleaved rounds, 9216fd6's
 * kernels (bench/results/cuda-h100-split-cluster-size-ab-2026-12-07.txt): at 4 rows the planner's four
 * clusters of 4 were the slowest shape for both split kernels; four clusters of 2 (8 blocks a rank) ran split
 * 5.75 against 5.90 us at hidden 4096 and split-twoshot 7.30 against 7.49 at 8192 (two clusters of 8: 5.79 / 7.38).
 * At 4-7 rows against the planner without clusters of 2 (bench/results/cuda-h100-split-planner-pairs-ab-2026-12-07.txt,
 * three interleaved rounds, 2026-12-07), the faster kernel of each hidden (split at 4096, split-twoshot at 8192):
 * 4 rows -0.13 / -0.18 us, 5 rows 0.00 / -0.04, 6 rows -0.13 / -0.02, 7 rows -0.67 / -2.57, where the old choice,
 * four clusters of 4 (16 blocks a rank), gave three clusters two rows each.
 */
export function fusedSplitPairsFirst(nranks: number, rows: number): boolean {
  return nranks >= 8 && nranks < 16 && rows >= 4 && rows <= 7
}

/**
 * Most clusters of C blocks (C > 1) co-resident on every device of the communicator, from
 * cuOccupancyMaxActiveClusters; clusters of one block are bounded by maxBlocksPerRank alone. The planner keeps
 * ranksInLaunch × clusters per rank within it.
 */
export type ClusterLimit = (clusterBlocks: number) => number

/**
 * The split kernels' launches: rows per launch = the most any cluster size allows; per launch the (C, G) pair
 * (cluster size, clusters per rank) whose C × G blocks per rank is nearest to one block per
 * TARGET_BYTES_PER_BLOCK bytes (ll16 for split-ll, sentinel for split; rounded up to a power of two), ties to the
 * larger G (fewer blocks share a row), subject to every cluster's rows fitting its lanes, C × G <= maxBlocksPerRank
 * and ranksPerDevice × G <= clusterLimit(C); clusters of 2 only where fusedSplitPairsFirst says so and they serve the
 * launch's rows. `signatureCluster` (per process: kernels/llcomm/fused_signature.cuh): every rank's launch takes one
 * more cluster of C blocks after its G, so the co-residency bound is ranksPerDevice × (G + 1) <= clusterLimit(C)
 * (clusters of one block: the extra block per rank is within MAX_BLOCKS_PER_DEVICE + ranks, as the all-reduce
 * signature block's).
 */
export function planFusedSplit(
  algorithm: FusedSplitAlgorithm,
  nranks: number,
  rows: number,
  hidden: number,
  dtype: Dtype,
  bufferBytes: number = DEFAULT_BUFFER_BYTES,
  ranksPerDevice: number = nranks,
  clusterLimit: ClusterLimit = () => Number.POSITIVE_INFINITY,
  signatureCluster = false,
): FusedNormPlan {
  checkNormShape(rows, hidden, dtype)
  const maxBlocks = maxBlocksPerRank(nranks)
  const options = FUSED_CLUSTER_SIZES.map((c) => {
    const perCluster = fusedSplitRowsPerCluster(algorithm, nranks, hidden, dtype, c, bufferBytes)
    const byLimit = c === 1 ? maxBlocks : Math.floor(clusterLimit(c) / ranksPerDevice) - (signatureCluster ? 1 : 0)
    const clusters = Math.max(0, Math.min(Math.floor(maxBlocks / c), byLimit))
    return { c, perCluster, clusters }
  }).filter((o) => o.perCluster > 0 && o.clusters > 0)
  const perLaunch = Math.max(0, ...options.map((o) => o.perCluster * o.clusters))
  if (perLaunch < 1)
    throw new LlcommError(
      'INVALID_ARGUMENT',
      `a row of ${hidden} ${dtype} does not fit the ${algorithm} fused kernel's lanes at ${nranks} ranks with bufferBytes ${bufferBytes}; use a larger bufferBytes or algorithm 'twoshot'`,
      { hidden, dtype, nranks, bufferBytes, algorithm },
    )
  const rowBytes = hidden * DTYPE_BYTES[dtype]
  const target = Math.max(
    16,
    TARGET_BYTES_PER_BLOCK[algorithm === 'split-ll' ? 'll16' : 'sentinel'] * TARGET_BYTES_PER_BLOCK_SCALE,
  )
  const launches: FusedNormLaunchPlan[] = []
  for (let first = 0; first < rows; first += perLaunch) {
    const n = Math.min(perLaunch, rows - first)
    let want = 1
    while (want < Math.ceil((n * rowBytes) / target) && want < maxBlocks) want *= 2
    let best: { c: number; g: number; score: number } | undefined
    const pairs = fusedSplitPairsFirst(nranks, n) && options.some((o) => o.c === 2 && o.perCluster * o.clusters >= n)
    for (const o of pairs ? options.filter((x) => x.c === 2) : options)
      for (let g = Math.ceil(n / o.perCluster); g <= Math.min(o.clusters, n); g++) {
        if (Math.ceil(n / g) > o.perCluster) continue
        const score = Math.abs(Math.log2((o.c * g) / want))
        if (!best || score < best.score - 1e-9 || (Math.abs(score - best.score) <= 1e-9 && g > best.g))
          best = { c: o.c, g, score }
      }
    if (!best) throw new LlcommError('INTERNAL', `planFusedSplit found no cluster shape for ${n} rows`)
    launches.push({ firstRow: first, rows: n, blocksPerRank: best.c * best.g, clusterBlocks: best.c })
  }
  return { algorithm, launches }
}

/** One piece of one buffer in an allReduceMany launch. */
export interface ManyPiece {
  buffer: number
  /** First element of the piece in its buffer, and its element count. */
  offset: number
  count: number
}
export interface ManyLaunchPlan {
  pieces: ManyPiece[]
  blocksPerRank: number
}

/**
 * Packs buffers into allreduce_many launches: consecutive buffers share a launch while their slots fit the
 * launch's lanes (maxBlocksPerRank channels of channelHalf / nranks bytes) and at most LLCOMM_MANY_MAX_BUFFERS
 * pieces; a buffer larger than one launch is split at 16-byte boundaries. Usually one launch for the whole group.
 * Blocks: one per TARGET_BYTES_PER_BLOCK.sentinel bytes, raised until every channel's slots fit its lane.
 */
export function planAllReduceMany(
  counts: readonly number[],
  dtype: Dtype,
  nranks: number,
  bufferBytes: number = DEFAULT_BUFFER_BYTES,
): ManyLaunchPlan[] {
  if (!Array.isArray(counts) || counts.length < 1)
    throw new LlcommError('INVALID_ARGUMENT', 'allReduceMany needs at least one buffer')
  for (const c of counts)
    if (!Number.isInteger(c) || c < 0)
      throw new LlcommError('INVALID_ARGUMENT', `allReduceMany counts must be non-negative integers, got ${c}`)
  const eb = DTYPE_BYTES[dtype]
  const laneSlots = floor16(Math.floor(deviceBufferLayout(nranks, bufferBytes).sentinel.channelHalfBytes / nranks)) / 16
  const maxBlocks = maxBlocksPerRank(nranks)
  const maxSlots = laneSlots * maxBlocks
  const slotsOf = (n: number) => Math.ceil((n * eb) / 16)
  const launches: ManyLaunchPlan[] = []
  let cur: ManyPiece[] = []
  let curSlots = 0
  const close = () => {
    if (cur.length === 0) return
    let blocks = Math.min(maxBlocks, Math.max(1, Math.ceil((curSlots * 16) / TARGET_BYTES_PER_BLOCK.sentinel)))
    while (Math.ceil(curSlots / blocks) > laneSlots) blocks++
    launches.push({ pieces: cur, blocksPerRank: blocks })
    cur = []
    curSlots = 0
  }
  counts.forEach((count, buffer) => {
    let offset = 0
    while (offset < count) {
      if (cur.length === LLCOMM_MANY_MAX_BUFFERS || curSlots === maxSlots) close()
      const room = maxSlots - curSlots
      const n = Math.min(count - offset, (room * 16) / eb)
      cur.push({ buffer, offset, count: n })
      curSlots += slotsOf(n)
      offset += n
    }
  })
  close()
  return launches
}

/**
 * The launches an allReduceMany makes: planAllReduceMany's, and per process (`signed`: each launch carries the
 * signature block) one launch of the signature block alone (no piece, blocksPerRank 0: the grid is that block,
 * kernels/llcomm/fused_signature.cuh) where no buffer has an element. Such a call still takes this rank's signature
 * epoch, so a peer whose call has elements meets it (MISMATCH on both sides) instead of this rank's next call (an
 * empty call that launched nothing left its rank one call behind, and its next call was reduced with the peers'
 * mismatched one, without an error), and matched empty calls keep the ranks' signature epochs in step. In process
 * (one call for every rank) an empty call launches nothing.
 */
export function allReduceManyLaunches(
  counts: readonly number[],
  dtype: Dtype,
  nranks: number,
  signed: boolean,
  bufferBytes: number = DEFAULT_BUFFER_BYTES,
): ManyLaunchPlan[] {
  const plans = planAllReduceMany(counts, dtype, nranks, bufferBytes)
  return plans.length === 0 && signed ? [{ pieces: [], blocksPerRank: 0 }] : plans
}

// ---- cost-decomposition probes (bench only: scripts/bench-fused.mjs --probes) ----

/** kernels/allreduce/fused_rmsnorm_split_probe.cu: bf16 probe kernels (llcomm/fused_split.cuh kProbe bits). */
export const FUSED_PROBE_SOURCE = 'allreduce/fused_rmsnorm_split_probe.cu'
export const FUSED_PROBE_KERNELS: readonly string[] = [
  'llcomm_fused_probe_empty',
  'llcomm_fused_probe_empty_small',
  'llcomm_fused_probe_ll_xchg',
  'llcomm_fused_probe_ll_xchg_flagc',
  'llcomm_fused_probe_ll_nonorm',
  'llcomm_fused_probe_ll_nobar',
  'llcomm_fused_probe_ll_nobar_nonorm',
  'llcomm_fused_probe_s_xchg',
  'llcomm_fused_probe_s_nonorm',
  'llcomm_fused_probe_ll_late',
  'llcomm_fused_probe_ll_spread',
  'llcomm_fused_probe_ll_late_spread',
]

/** Rows of the largest cluster of split launch `l` (llcPiece gives the first clusters ceil(rows / G)). */
const largestClusterRows = (l: FusedNormLaunchPlan) => Math.ceil(l.rows / (l.blocksPerRank / (l.clusterBlocks ?? 1)))

/**
 * Whether the SPREAD candidate (fused_split.cuh LLC_SPLIT_SPREAD: the peer-parallel exchange of ll_buffer.cuh) takes
 * every cluster of launch `l` (its kernels write nothing on any other shape): LL16, one 16-byte slot per virtual thread (a row
 * of exactly `threads` slots), at least LLCOMM_SPREAD_MIN_RANKS (8) ranks, at most 64 units per block, at least
 * LLCOMM_SPREAD_MIN_GROUPS (4) thread groups per packet, and the stage (ranks × packets × 2 words) between shared
 * words 512 and 4096 − 768. `threads`: the block size (LLCOMM_THREADS; the emulator test passes its own).
 */
export function fusedSplitSpreadApplies(
  nranks: number,
  hidden: number,
  dtype: Dtype,
  l: FusedNormLaunchPlan,
  threads: number = LLCOMM_THREADS,
): boolean {
  const c = l.clusterBlocks ?? 1
  if ((hidden * DTYPE_BYTES[dtype]) / 16 !== threads || nranks < 8) return false
  const units = largestClusterRows(l) * (threads / c)
  const packets = 2 * units
  const groups = Math.min(Math.floor(threads / packets), nranks)
  return units <= 64 && groups >= 4 && 512 + nranks * packets * 2 <= FUSED_SPLIT_MAX_UNITS - 12 * 64
}

/**
 * Whether launch `l` of a split plan runs the push kernel (fused_split.cuh kPush: the cluster's q's exchanged with
 * st.async and an mbarrier, no release barrier; the same outputs, bit for bit): clusters of C > 1 blocks (at C = 1
 * there is nothing to exchange) whose rows' q's fit the kernel's array (rows per cluster × `threads` <=
 * FUSED_SPLIT_MAX_UNITS, i.e. at most 8 rows a cluster at 512 threads). The push kernel returns without writing
 * anything on any other shape. `threads`: the block size (LLCOMM_THREADS; the emulator test passes its own).
 */
export function fusedSplitPushes(l: FusedNormLaunchPlan, threads: number = LLCOMM_THREADS): boolean {
  return (l.clusterBlocks ?? 1) > 1 && largestClusterRows(l) * threads <= FUSED_SPLIT_MAX_UNITS
}

// ---- the launcher ----

interface PackedLaunch {
  group: LaunchGroup
  launch: PreparedLaunch
  params: Uint8Array
}

export type {
  FusedManyCall,
  FusedNormAlgorithm,
  FusedNormCall,
  FusedProbe,
  FusedSplitAlgorithm,
  PreparedFusedCall,
} from './device-call.js'

/** How a FusedLauncher's launches relate to the communicator's ranks. */
export interface FusedLauncherOptions {
  /**
   * One process per rank (process-communicator.ts): the launch groups hold this process's rank only, the call's
   * pointer lists only its entries, and the plans assume every rank on one device (ranksPerDevice = nranks: the
   * processes may share a GPU, and a plan must not depend on what one process sees).
   */
  perProcess?: boolean
  /**
   * Every fused RMSNorm launch takes one more cluster, and every allReduceMany launch one more block, that publishes
   * and checks its call signature (kernels/llcomm/fused_signature.cuh); the modules must be built with
   * LLCOMM_FUSED_SIG_CLUSTER (KernelBuildOptions.fusedSignatureCluster). Per process only: in process one call
   * launches every rank alike.
   */
  signatureCluster?: boolean
}

export class FusedLauncher {
  private readonly driver: CudaDriver
  private readonly devices: DeviceSet
  private readonly modules: KernelModules
  private readonly state: CommunicatorDeviceState
  private readonly options: FusedLauncherOptions
  private readonly configs = new Map<string, PreparedLaunch>()

  constructor(
    driver: CudaDriver,
    devices: DeviceSet,
    modules: KernelModules,
    state: CommunicatorDeviceState,
    options: FusedLauncherOptions = {},
  ) {
    this.driver = driver
    this.devices = devices
    this.modules = modules
    this.state = state
    this.options = options
  }

  /**
   * Launch config for one device, built on first use (with the co-residency checks when cooperative: blocks per SM,
   * and for clusters of C > 1 blocks the device's cluster occupancy) and cached.
   */
  private launchFor(
    k: FusedKernel,
    group: LaunchGroup,
    grid: number,
    cooperative: boolean,
    pdl: boolean,
    bytes: number,
    clusterBlocks = 1,
  ) {
    const key = `${k.kernelName}|${group.index}|${grid}|${cooperative ? 1 : 0}|${pdl ? 1 : 0}|${clusterBlocks}`
    let l = this.configs.get(key)
    if (l) return l
    const f = this.modules.function(group, k.sourceFile, k.kernelName)
    this.driver.setCurrent(group.context)
    if (clusterBlocks > 1 && grid / clusterBlocks > this.maxActiveClusters(k, group, clusterBlocks))
      throw new LlcommError(
        'INVALID_ARGUMENT',
        `${k.kernelName}: ${grid / clusterBlocks} clusters of ${clusterBlocks} blocks on device ${group.ordinal} cannot all be co-resident; use fewer virtual ranks per device or another algorithm`,
        { kernel: k.kernelName, device: group.ordinal, grid, clusterBlocks },
      )
    // A cluster launch is cooperative too (all blocks co-resident or the launch fails) unless
    // LLCOMM_FUSED_CLUSTER_COOPERATIVE=0, for a driver that refuses the two attributes together.
    const coop = cooperative && (clusterBlocks === 1 || CLUSTER_COOPERATIVE)
    if (coop) {
      const perSm = this.driver.occupancyMaxActiveBlocksPerSm(f, LLCOMM_THREADS, 0)
      if (grid > perSm * group.smCount) {
        throw new LlcommError(
          'INVALID_ARGUMENT',
          `${k.kernelName}: ${grid} blocks on device ${group.ordinal} cannot all be co-resident (at most ${perSm} per SM × ${group.smCount} SMs); use fewer virtual ranks per device`,
          { kernel: k.kernelName, device: group.ordinal, grid },
        )
      }
      if (!group.cooperativeLaunch)
        throw new LlcommError('NO_DEVICE', `device ${group.ordinal} does not support cooperative launch`, {
          device: group.ordinal,
        })
    }
    // The kernels use static shared memory only (under 48 KB): no dynamic-shared attribute to set.
    l = new PreparedLaunch(
      this.driver,
      f,
      k.kernelName,
      { gridDimX: grid, blockDimX: LLCOMM_THREADS, sharedBytes: 0 },
      { cooperative: coop, pdl, clusterDimX: clusterBlocks },
      bytes,
    )
    this.configs.set(key, l)
    return l
  }

  private readonly clusterLimits = new Map<string, number>()

  /** cuOccupancyMaxActiveClusters for kernel k with clusters of c blocks on this device (cached). */
  private maxActiveClusters(k: FusedKernel, group: LaunchGroup, c: number): number {
    if (c === 1) return Number.POSITIVE_INFINITY
    const key = `${k.kernelName}|${group.index}|${c}`
    let n = this.clusterLimits.get(key)
    if (n !== undefined) return n
    const f = this.modules.function(group, k.sourceFile, k.kernelName)
    this.driver.setCurrent(group.context)
    const probe = new PreparedLaunch(
      this.driver,
      f,
      k.kernelName,
      { gridDimX: c, blockDimX: LLCOMM_THREADS, sharedBytes: 0 },
      { cooperative: false, pdl: false, clusterDimX: c },
      8,
    )
    try {
      n = this.driver.occupancyMaxActiveClusters(f, probe.configAddress)
    } finally {
      probe.dispose()
    }
    this.clusterLimits.set(key, n)
    return n
  }

  /** The ranks this launcher launches (in process every rank; per process this process's). */
  private launchedRanks(): number[] {
    return this.devices.groups.flatMap((g) => g.ranks).sort((a, b) => a - b)
  }

  private checkPointers(what: string, list: readonly DevicePtr[]): void {
    if (!Array.isArray(list) || list.length !== this.state.nranks)
      throw new LlcommError('INVALID_ARGUMENT', `${what} needs one device pointer per rank (${this.state.nranks})`)
    for (const r of this.launchedRanks()) {
      const p = list[r]
      if (!Number.isSafeInteger(p) || p <= 0)
        throw new LlcommError('INVALID_ARGUMENT', `${what}[${r}] is not a device pointer`)
      if (p % 16 !== 0)
        throw new LlcommError('MISALIGNED_BUFFER', `${what}[${r}] = 0x${p.toString(16)} is not 16-byte aligned`, {
          rank: r,
          what,
        })
    }
  }

  private normFlags(call: FusedNormCall): number {
    return (
      (call.residualF32 && call.dtype !== 'f32' ? LLCOMM_FUSED_RESIDUAL_F32 : 0) |
      (call.noResidualIn ? LLCOMM_FUSED_NO_RESIDUAL_IN : 0) |
      (call.outDtype === 'e4m3' ? LLCOMM_FUSED_OUT_E4M3 : 0)
    )
  }

  /**
   * Packs a fused AllReduce + residual + RMSNorm (reference: false) or the reference RMSNorm alone (true); with
   * `probe`, the probe's kernel and launch attributes on the split plan of `probe.plan` (bench only, bf16).
   */
  prepareNorm(call: FusedNormCall, reference: boolean, probe?: FusedProbe): PreparedFusedCall {
    if (probe) {
      if (reference || call.dtype !== 'bf16')
        throw new LlcommError('INVALID_ARGUMENT', 'fused probes run the split plan on bf16 only')
      call = { ...call, algorithm: probe.plan }
    }
    const s = this.state
    for (const [what, list] of [
      ['inputs', call.inputs],
      ['residuals', call.residuals],
      ['outputs', call.outputs],
      ['weights', call.weights],
    ] as const)
      this.checkPointers(what, list)
    if (!Number.isFinite(call.eps) || call.eps < 0)
      throw new LlcommError('INVALID_ARGUMENT', `eps must be a finite non-negative number, got ${call.eps}`)
    checkNormShape(call.rows, call.hidden, call.dtype)
    if (call.outDtype !== undefined && call.outDtype !== 'e4m3')
      throw new LlcommError('UNSUPPORTED_DTYPE', `outDtype ${String(call.outDtype)}: only 'e4m3' (or x's dtype)`)
    const outScale = call.outScale ?? 1
    if (!Number.isFinite(outScale) || outScale <= 0)
      throw new LlcommError('INVALID_ARGUMENT', `outScale must be a finite positive number, got ${call.outScale}`)
    if (call.outDtype === 'e4m3')
      for (const g of this.devices.groups)
        if (Number(g.arch.replace(/\D/g, '')) < 89)
          throw new LlcommError(
            'UNSUPPORTED_DTYPE',
            `an e4m3 output needs sm_89 or newer; device ${g.ordinal} is ${g.arch}`,
          )
    const eb = DTYPE_BYTES[call.dtype]
    const oeb = call.outDtype === 'e4m3' ? 1 : eb
    const resEb = call.residualF32 ? 4 : eb
    const flags = this.normFlags(call)
    const requested = call.algorithm ?? 'auto'
    const split = requested !== 'auto' && isSplit(requested)
    if (split && !reference)
      for (const g of this.devices.groups)
        if (Number(g.arch.replace(/\D/g, '')) < 90)
          throw new LlcommError(
            'UNSUPPORTED_ALGORITHM',
            `the ${requested} fused kernel needs thread-block clusters (sm_90 or newer); device ${g.ordinal} is ${g.arch}`,
            { algorithm: requested, device: g.ordinal },
          )
    // Per process: every rank on one device, whatever this process sees (the plan must be the same on every rank).
    const ranksPerDevice = this.options.perProcess
      ? s.nranks
      : Math.max(...this.devices.groups.map((g) => g.ranks.length))
    // The signature cluster (per process): on every fused launch of the shipped kernels, never on the reference
    // RMSNorm (no communication) nor on a probe (bench only, in process).
    const signed = (this.options.signatureCluster ?? false) && !reference && !probe
    // The split kernels' cluster limit: the smallest over the devices (every rank plans the same launches).
    // 'auto' may take the sentinel split kernel (planFusedNorm): where every device has clusters (sm_90 or newer).
    const autoSplit =
      requested === 'auto' && !reference && this.devices.groups.every((g) => Number(g.arch.replace(/\D/g, '')) >= 90)
    const splitAlgorithm: FusedSplitAlgorithm = split ? (requested as FusedSplitAlgorithm) : 'split'
    // (over both kernels of the algorithm, whether push is on or not: a plan's launches may take either, and the plan
    // must not depend on LLCOMM_FUSED_SPLIT_PUSH, which ranks may set apart)
    const limitKinds = [splitKind(splitAlgorithm), splitPushKind(splitAlgorithm)]
    const limit: ClusterLimit = (c) =>
      Math.min(
        ...this.devices.groups.flatMap((g) =>
          limitKinds.map((kind) => this.maxActiveClusters(selectFusedKernel(kind, call.dtype), g, c)),
        ),
      )
    const plan: FusedNormPlan = reference
      ? { algorithm: 'oneshot', launches: [{ firstRow: 0, rows: call.rows, blocksPerRank: 1 }] }
      : planFusedNorm(
          requested,
          s.nranks,
          call.rows,
          call.hidden,
          call.dtype,
          s.bufferBytes,
          ranksPerDevice,
          split || autoSplit ? limit : undefined,
          autoSplit,
          signed,
        )
    const shipped = selectFusedKernel(
      reference ? 'rmsnorm' : isSplit(plan.algorithm) ? splitKind(plan.algorithm) : `fused_rmsnorm_${plan.algorithm}`,
      call.dtype,
    )
    // A shipped split kernel launched without the cluster attribute runs clusters of one: its rows must fit a
    // single block's lanes (the plan only guarantees them for its own cluster size).
    if (probe?.sourceFile !== undefined && !probe.cluster)
      for (const l of plan.launches)
        if (
          Math.ceil(l.rows / l.blocksPerRank) >
          fusedSplitRowsPerCluster(probe.plan, s.nranks, call.hidden, call.dtype, 1, s.bufferBytes)
        )
          throw new LlcommError('INVALID_ARGUMENT', `probe ${probe.kernel}: the rows of a block do not fit its lanes`)
    if (probe?.spread)
      for (const l of plan.launches)
        if (!fusedSplitSpreadApplies(s.nranks, call.hidden, call.dtype, l))
          throw new LlcommError('INVALID_ARGUMENT', `probe ${probe.kernel}: the spread path does not apply here`)
    const k: FusedKernel = probe
      ? { ...shipped, kernelName: probe.kernel, sourceFile: probe.sourceFile ?? FUSED_PROBE_SOURCE }
      : shipped
    // The split plans' launches with clusters that exchange by push (fusedSplitPushes) run the push kernel.
    const kernelFor = (l: FusedNormLaunchPlan): FusedKernel =>
      !probe && SPLIT_PUSH && isSplit(plan.algorithm) && fusedSplitPushes(l)
        ? selectFusedKernel(splitPushKind(plan.algorithm), call.dtype)
        : k
    const big = (list: readonly DevicePtr[], offsetBytes: number) => list.map((p) => BigInt(p + offsetBytes))
    const packed: PackedLaunch[] = []
    for (const [launchIndex, l] of plan.launches.entries()) {
      const xOff = l.firstRow * call.hidden * eb
      const rOff = l.firstRow * call.hidden * resEb
      const oOff = l.firstRow * call.hidden * oeb
      for (const group of this.devices.groups) {
        const cluster = reference ? 1 : (l.clusterBlocks ?? 1)
        const signature = signed
          ? encodeFusedSignature({
              launchRows: l.rows,
              callRows: call.rows,
              hidden: call.hidden,
              dtype: call.dtype,
              algorithm: plan.algorithm,
              epsBits: f32Bits(call.eps),
              flags,
              outScaleBits: f32Bits(outScale),
              launchIndex,
              launchCount: plan.launches.length,
              blocksPerRank: l.blocksPerRank,
              clusterBlocks: cluster,
            })
          : undefined
        const params = packFusedNormParams({
          input: big(call.inputs, xOff),
          residual: big(call.residuals, rOff),
          out: big(call.outputs, oOff),
          weight: big(call.weights, 0),
          recvBuf: s.recvBuf.map((p) => BigInt(p)),
          scratch: s.scratch.map((p) => BigInt(p)),
          errorWord: BigInt(s.errorWord),
          timeoutNs: BigInt(Math.round(s.timeoutNs)),
          sentinel: s.layout.sentinel,
          ll: s.layout.ll,
          rows: l.rows,
          hidden: call.hidden,
          epsBits: f32Bits(call.eps),
          flags,
          nranks: s.nranks,
          ranksInLaunch: group.ranks.length,
          blocksPerRank: l.blocksPerRank,
          outScaleBits: f32Bits(outScale),
          launchRanks: group.ranks,
          signature,
        })
        // The signature cluster: C more blocks after the data blocks (one cluster; the grid stays a multiple of C).
        const grid = group.ranks.length * (reference ? l.rows : l.blocksPerRank) + (signed ? cluster : 0)
        let bytes: Uint8Array = new Uint8Array(params)
        // probe.flagC: the cluster size in flags >> 8 (patched after packing, which refuses unknown flag bits)
        if (probe?.flagC)
          new DataView(bytes.buffer).setUint32(
            FUSED_NORM_PARAMS_LAYOUT.byName.flags.offset,
            flags | (cluster << 8),
            true,
          )
        if (probe?.smallParams) {
          // struct LlcFusedProbeSmall { u64 errorWord; u32 rows; u32 pad; }
          bytes = new Uint8Array(16)
          const v = new DataView(bytes.buffer)
          v.setBigUint64(0, BigInt(s.errorWord), true)
          v.setUint32(8, l.rows, true)
        }
        const launch = this.launchFor(
          kernelFor(l),
          group,
          grid,
          probe ? probe.cooperative : !reference,
          call.pdl ?? false,
          bytes.byteLength,
          probe && !probe.cluster ? 1 : cluster,
        )
        packed.push({ group, launch, params: bytes })
      }
    }
    return this.prepared(reference ? 'rmsnorm' : plan.algorithm, plan.launches.length, packed)
  }

  /** Packs an allReduceMany: every buffer reduced, usually in one launch (planAllReduceMany). */
  prepareMany(call: FusedManyCall): PreparedFusedCall {
    const s = this.state
    const b = call.counts.length
    if (
      !Array.isArray(call.inputs) ||
      !Array.isArray(call.outputs) ||
      call.inputs.length !== b ||
      call.outputs.length !== b
    )
      throw new LlcommError('INVALID_ARGUMENT', `inputs, outputs and counts need one entry per buffer (${b})`)
    for (const [i, l] of call.inputs.entries()) this.checkPointers(`inputs[${i}]`, l)
    for (const [i, l] of call.outputs.entries()) this.checkPointers(`outputs[${i}]`, l)
    const eb = DTYPE_BYTES[call.dtype]
    // Per process: one signature block after the data blocks of every launch (kernels/llcomm/fused_signature.cuh;
    // allReduceMany launches are not cluster launches, so its signature cluster is that one block), and a call
    // without elements is that block alone (allReduceManyLaunches).
    const signed = this.options.signatureCluster ?? false
    const launches = allReduceManyLaunches(call.counts, call.dtype, s.nranks, signed, s.bufferBytes)
    const k = selectFusedKernel('allreduce_many', call.dtype)
    const packed: PackedLaunch[] = []
    for (const [launchIndex, plan] of launches.entries()) {
      const pieces = plan.pieces
      const signature = signed
        ? encodeManySignature({
            dtype: call.dtype,
            pieces,
            launchIndex,
            launchCount: launches.length,
            blocksPerRank: plan.blocksPerRank,
          })
        : undefined
      for (const group of this.devices.groups) {
        const params = this.manyParams(group, plan.blocksPerRank, signature, {
          inputs: pieces.map((p) => call.inputs[p.buffer].map((x) => BigInt(x + p.offset * eb))),
          outputs: pieces.map((p) => call.outputs[p.buffer].map((x) => BigInt(x + p.offset * eb))),
          counts: pieces.map((p) => p.count),
        })
        // launchFor's co-residency check counts the signature block (cooperative: every block of the grid at once).
        const launch = this.launchFor(
          k,
          group,
          group.ranks.length * plan.blocksPerRank + (signed ? 1 : 0),
          true,
          call.pdl ?? false,
          params.byteLength,
        )
        packed.push({ group, launch, params: new Uint8Array(params) })
      }
    }
    return this.prepared('many', packed.length / this.devices.groups.length, packed)
  }

  /**
   * Per process: one launch of the allreduce_many kernel's signature block alone (blocksPerRank 0, grid 1, no
   * piece) with the group signature of a host-view allReduceMany whose buffers then run one allReduce each
   * (encodeManyGroupSignature over `counts`): a rank with another number of buffers or another count fails with
   * MISMATCH on every rank before any buffer's launch. Only with the signature cluster (per process).
   */
  prepareManyGroupSignature(counts: readonly number[], dtype: Dtype, pdl = false): PreparedFusedCall {
    return this.prepareSignatureOnly(encodeManyGroupSignature(dtype, counts), dtype, pdl)
  }

  /**
   * Per process: one launch of the allreduce_many kernel (of `dtype`) whose only block is its signature block,
   * publishing and checking `signature` at this rank's next signature epoch (kernels/llcomm/fused_signature.cuh):
   * a host-view allReduceMany's group signature, or a refused call's (encodeRefusedSignature).
   */
  prepareSignatureOnly(signature: readonly [number, number], dtype: Dtype = 'bf16', pdl = false): PreparedFusedCall {
    if (!(this.options.signatureCluster ?? false))
      throw new LlcommError('INTERNAL', 'a signature-only launch needs the per-process signature block')
    const k = selectFusedKernel('allreduce_many', dtype)
    const packed: PackedLaunch[] = []
    for (const group of this.devices.groups) {
      const params = this.manyParams(group, 0, signature, { inputs: [], outputs: [], counts: [] })
      const launch = this.launchFor(k, group, 1, true, pdl, params.byteLength)
      packed.push({ group, launch, params: new Uint8Array(params) })
    }
    return this.prepared('many', 1, packed)
  }

  /** An allreduce_many launch's packed params for `group`: its pieces, the communicator's buffers, the signature. */
  private manyParams(
    group: LaunchGroup,
    blocksPerRank: number,
    signature: readonly [number, number] | undefined,
    pieces: Pick<AllReduceManyParamsHost, 'inputs' | 'outputs' | 'counts'>,
  ): Buffer {
    const s = this.state
    return packAllReduceManyParams({
      ...pieces,
      recvBuf: s.recvBuf.map((p) => BigInt(p)),
      scratch: s.scratch.map((p) => BigInt(p)),
      errorWord: BigInt(s.errorWord),
      timeoutNs: BigInt(Math.round(s.timeoutNs)),
      sentinel: s.layout.sentinel,
      nranks: s.nranks,
      ranksInLaunch: group.ranks.length,
      blocksPerRank,
      launchRanks: group.ranks,
      signature,
    })
  }

  private prepared(algorithm: string, launches: number, packed: PackedLaunch[]): PreparedFusedCall {
    const multi = this.devices.multiDevice
    return {
      algorithm,
      launches,
      issue: (streams) => {
        for (const { group, launch, params } of packed) {
          if (multi) this.driver.setCurrent(group.context)
          launch.setParams(params)
          launch.launchOn(streams[group.index])
        }
      },
    }
  }

  disposeAll(): void {
    for (const l of this.configs.values()) l.dispose()
    this.configs.clear()
  }
}
