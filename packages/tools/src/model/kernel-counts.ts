/**
 * Structural counts of one llcomm AllReduce call, from the same launch-shape rules the CUDA backend uses
 * (src/backends/cuda/kernel-table.ts: launchShape, selectKernel; no GPU needed), so the latency model follows the
 * kernels when their shapes change. Each count multiplies one fitted constant of the latency model (a per-event
 * cost in µs, or µs per byte).
 *
 * Per launch (the host chunks a call into launches of at most maxCountPerCall elements), on the critical path of
 * the largest channel piece, with T = 512 threads per block and one slot per thread per round:
 *   slots        = ceil(piece bytes / payload bytes per slot)      (LL8 4 B, LL16 8 B, sentinel and plain 16 B)
 *   r            = ceil(slots / T) rounds;  B8 = ceil(N / RECV_BATCH) poll batches (recvReduce's loop)
 *   one-shot, serial path (N < SPREAD_MIN_RANKS, or slots ≥ T):
 *                pollRounds r·B8, storeRounds r·(N−1), rearms r·(N−1) (sentinel);
 *                storeLaneRounds (slots / T)·(N−1): the block's store instructions in full-block rounds (on virtual)
 *   one-shot, peer-parallel path (LlBuffer::recvReduceSpread; N ≥ 8, slots < T): g = min(T / slots, N) thread
 *                groups, windows of ranks that fit the shared stage: pollRounds = windows·ceil(peers per poller / 8),
 *                storeRounds = ceil((N−1)/g), storeLaneRounds (slots / T)·(N−1) (on virtual), rearms = peers per poller (sentinel), spreadWindows = windows,
 *                stagedReduces = N × elements per slot (read back from shared memory by the slot's thread);
 *                oneshot-sentinel since ac2b151 reduces by words (LlBuffer::blockRecvReduceSpreadWords, as twoshot-
 *                sentinel's owner): polls ONESHOT_SENTINEL_WORDS_BATCH at a time, stagedReduces N × elements per
 *                word, its own input word and output word in 4-byte accesses
 *   two-shot     part = piece / N per owner (16 B aligned; K = owners with data, K' = min(N−1, K)),
 *                twoshot-sentinel, serial path (N < SPREAD_MIN_RANKS, or more than T / SPREAD_MIN_GROUPS slots a
 *                part): r on the part: pollRounds r·B8 (owner), storeRounds r·K' + r·(N−1), serialRecvs r·K'
 *                (all-gather, owner after owner), rearms r·(N−1) + r·K' (sentinel)
 *                twoshot-sentinel, spread path (twoshot_sentinel.cu, the spread2 structure of fd9724f; spreadGroups
 *                of the part's S slots > 1): g = min(T / S, N−1) sender groups, each thread P = min(ceil((N−1)/g), K')
 *                owners, polled TWOSHOT_SPREAD_BATCH (4) at a time; the owner's reduce spread over 4-byte words
 *                (LlBuffer::blockRecvReduceSpreadWords: the one-shots' pollers and windows, min(T / S, N) groups;
 *                thread t < 4S reduces word t % 4 of slot t / 4); pollRounds windows·ceil(peers per poller / 4) +
 *                ceil(P / 4) (all-gather), rearms = peerLoads = windows·peers per poller + P, spreadWindows windows,
 *                stagedReduces N × elements per word, serialRecvs 0, the own part's input and output in 4-byte
 *                accesses; the owner's broadcast by twoshotBroadcast (MODEL_TWOSHOT_BROADCAST):
 *                'words' (LlBuffer::bcastWord, before 4e5f9c1): each reducing thread its own word to every peer (no
 *                stage, no block barrier): storeRounds P + (N−1), storeLaneRounds (S·K' + 4S·(N−1)) / T (on
 *                virtual), the broadcast's bytes in 4-byte accesses too (blockAccesses);
 *                'slots' (since 4e5f9c1, bspread): the sums through shared memory and one __syncthreads (not a
 *                window: no count), then each sender thread one 16-byte slot store to each of its Q = ceil((N−1)/g)
 *                peers: storeRounds P + Q, storeLaneRounds (S·K' + S·(N−1)) / T (on virtual), the broadcast's bytes
 *                in 16-byte accesses
 *                twoshot-atomic: per line round (ceil(part lines / 16 warps)): atomicLineRounds K line sends
 *                (one fence per warp publishes them all), one counter wait, N−1 LL8 broadcast stores; the
 *                all-gather by twoshotAtomicAllGather (MODEL_TWOSHOT_ATOMIC_ALLGATHER): 'serial' (before 615ecff):
 *                serialRecvs ceil(part words / T)·K'; 'batched' (since 615ecff): pollRounds + ceil(part words /
 *                T)·ceil(K' / 8), peerLoads ceil(part words / T)·K', serialRecvs 0, and the owner's broadcast
 *                in the block's store instructions, storeLaneRounds (part lines · 32 / T)·(N−1) (on virtual;
 *                'serial': storeRounds, one thread's count); secondLineRecvs = serialRecvs
 *                ('serial') or the batches ('batched') when the part has more than one line (a receiving warp's 32
 *                words then come from two owner lines, broadcast by two warps);
 *                f16/bf16 on f32 lines (accumulation 'f32'): the same counts, twice the line bytes
 *                twoshot-sentinel's pull kernel (kernel-table.ts twoshotAllGather picks it per launch; counted only
 *                with allGather 'auto' or 'pull'; MODEL_TWOSHOT_ALLGATHER):
 *                the serial path with the broadcast replaced by one publish store (storeRounds r·K' + r), the
 *                all-gather's serial receives by loads issued 8 owners at a time after the owners' flags
 *                (pollRounds + r·ceil(K'/8), peerLoads + r·K', serialRecvs 0), no all-gather re-arms (rearms r·(N−1)),
 *                publishFlags 1 (the flag release and waits and two bar.syncs: priced as a ring step)
 *   ring         ringSteps 2(N−1) flag hand-offs; storeRounds 2(N−1)·ceil(step slots / T); f16/bf16 with f32
 *                partials (accumulation 'f32'): (N−1)·ceil(step slots / T) more stores and loads, the reduce-scatter
 *                steps' slot bytes doubled
 *   barrier      barriers 2; pollRounds r·B8 (each thread reads its slots of every rank, 8 ranks in flight)
 *   storeLaneRounds = storeRounds in the other kernels (left at one thread's count)
 *   every kernel blockBytes: the bytes one block moves through L2 (slot stores, loads and re-arms, input, output);
 *                blockAccesses: blockBytes / ACCESS_BYTES (8 B per LL8 packet, else 16 B; 4 B for word accesses), the
 *                block's memory requests;
 *                halfWordSentinelSlots: sentinel stores + loads in a 16-bit dtype (two elements per word to check;
 *                twoshot-sentinel's spread path: its reduce-scatter slot stores and its loads, plus its broadcast's
 *                canonicalized words in slots: 2/4 'words', 1 + 1/4 'slots')
 */
import type { Accumulation, Dtype } from 'llcomm/internal'
import {
  accumulationBuild,
  type BlockTargets,
  DTYPE_BYTES,
  type KernelProtocol,
  LLCOMM_LINE_DATA_WORDS,
  LlcommError,
  launchShape,
  pieceElems,
  selectKernel,
  type TwoshotAllGatherMode,
  twoshotAllGather,
} from 'llcomm/internal'

/** The kernel family whose structure an algorithm follows (data/latency/algorithms.json `kernel`). */
export type KernelShape = 'oneshot' | 'twoshot' | 'ring' | 'barrier'

/**
 * How one call's launches are counted: the build and communicator settings the kernels ran with. Every field absent
 * takes the model's own (MODEL_BUFFER_BYTES, MODEL_BLOCK_TARGETS, MODEL_TWOSHOT_ALLGATHER, MODEL_ACCUMULATION,
 * MODEL_TWOSHOT_BROADCAST, MODEL_TWOSHOT_ATOMIC_ALLGATHER: what the shipped fit measured); a bench file measured with
 * others is counted with its own (calibrate.ts: the file's bufferBytes; `llcomm model --block-targets /
 * --twoshot-allgather / --accumulation / --twoshot-broadcast / --twoshot-atomic-allgather`).
 */
export interface LaunchCounting {
  /** The communicator's receive buffer (CommunicatorOptions.bufferBytes): launchShape's capacity per launch. */
  bufferBytes?: number
  /** The block targets launchShape sizes a message's blocks with. */
  blockTargets?: BlockTargets
  /** twoshot-sentinel's all-gather kernel: 'auto' as the host picks it per launch, or forced. */
  allGather?: TwoshotAllGatherMode
  /** f16/bf16 accumulation of ring and twoshot-atomic (the communicator option `accumulation`). */
  accumulation?: Accumulation
  /** twoshot-sentinel's spread-path broadcast the kernel ran (TwoshotBroadcast; kernel versions, not a setting). */
  twoshotBroadcast?: TwoshotBroadcast
  /** twoshot-atomic's all-gather the kernel ran (TwoshotAtomicAllGather; kernel versions, not a setting). */
  twoshotAtomicAllGather?: TwoshotAtomicAllGather
}

/**
 * twoshot-sentinel's spread-path broadcast of the owner's sums (twoshot_sentinel.cu), by kernel version: 'words'
 * (LlBuffer::bcastWord, before 4e5f9c1): each reducing thread stores its own 4-byte word to every peer; 'slots' (since
 * 4e5f9c1, bspread): the sums through shared memory and one __syncthreads, then each reduce-scatter sender stores
 * one 16-byte slot to each of its peers (twoshotSpreadCounts).
 */
export type TwoshotBroadcast = 'words' | 'slots'

/**
 * twoshot-atomic's all-gather receive (twoshot_atomic.cu), by kernel version: 'serial' (before 615ecff): each thread
 * receives its word of one owner after another, a poll round trip an owner; 'batched' (since 615ecff, issue 22 item 1):
 * the owners with data only, polled RECV_BATCH (8) at a time, every load of a batch in flight together (one round
 * trip a batch; a single owner left is received alone).
 */
export type TwoshotAtomicAllGather = 'serial' | 'batched'

/**
 * The receive buffer the model's launches are counted at: 4 MiB, the library's cuda default since 3e1244f, which the
 * shipped fit's files measured (the 2026-12-03 grid, as the 12-02c one before it). Its own constant, so that a later change of the library's
 * default cannot silently recount the fit's launches (a refit on bench files measured with the new default comes
 * first). Rows of bench files are counted at their own buffer (calibrate.ts, rowBufferBytes).
 */
export const MODEL_BUFFER_BYTES = 4 << 20

/**
 * The cuda receive buffer of every bench file that has no `bufferBytes` field (the field is recorded since
 * 2026-12-02; the default was 1 MiB until 3e1244f). calibrate.ts counts such a file's launches at this buffer.
 */
export const BENCH_BUFFER_BYTES_BEFORE_FIELD = 1 << 20

/**
 * The block targets every bench file up to the 2026-12-02 block-scale sweep ran with (5e2560d changed the
 * library's), and every fit before the 2026-12-02c one counted with: twoshot-sentinel and barrier 16384 bytes a
 * block, the one-shot sentinel 2048 at every rank count.
 */
export const BLOCK_TARGETS_BEFORE_SWEEP: BlockTargets = {
  bytesPerBlock: {
    ll8: 1024,
    ll16: 1024,
    sentinel: 2048,
    'twoshot-sentinel': 16384,
    ll128: 16384,
    barrier: 16384,
    flags: 32768,
  },
  oneshotSentinelRanks: undefined,
}

/**
 * The block targets the model's launches are counted with: the library's BLOCK_TARGETS (kernel-table.ts) as the
 * shipped fit's files (the 2026-12-03 grid, as the 12-02c one before it) ran with them, copied here for the same reason as MODEL_BUFFER_BYTES
 * (test/model/kernel-structure.test.ts fails when the library's move: a refit on files measured with the new ones
 * comes first).
 */
export const MODEL_BLOCK_TARGETS: BlockTargets = {
  bytesPerBlock: {
    ll8: 1024,
    ll16: 1024,
    sentinel: 2048,
    'twoshot-sentinel': 4096,
    ll128: 16384,
    barrier: 2048,
    flags: 32768,
  },
  oneshotSentinelRanks: 2,
}

/**
 * twoshot-sentinel's all-gather kernel the counts follow by default: 'auto', the host's choice per launch
 * (kernel-table.ts twoshotAllGather: the pull kernel for large serial-path launches at 4-8 ranks), as the shipped
 * fit's files ran. Files measured before the pull kernel (pullsplit, 2026-12-02) are counted with 'push'.
 */
export const MODEL_TWOSHOT_ALLGATHER: TwoshotAllGatherMode = 'auto'

/**
 * The f16/bf16 accumulation the counts follow by default: 'f32', the library's default since issue 18 item 4
 * (42e4626: ring's f32 partial sums, twoshot-atomic's f32 lines), which the shipped fit's files measured. Bench files
 * measured before 42e4626 (the 11-29 grids, the 2-GPU files) ran the 16-bit build: counted with 'dtype'.
 */
export const MODEL_ACCUMULATION: Accumulation = 'f32'

/**
 * twoshot-sentinel's spread-path broadcast the counts follow by default: 'slots', the library's kernel since the
 * bspread merge (issue 22, 4e5f9c1), which the shipped fit's files (the 2026-12-03 grid, e1b554c's kernels) ran. Files
 * before 4e5f9c1 (the 12-02c grid and older) ran 'words' and are counted so (`--twoshot-broadcast words`).
 */
export const MODEL_TWOSHOT_BROADCAST: TwoshotBroadcast = 'slots'

/**
 * twoshot-atomic's all-gather the counts follow by default: 'batched', the library's kernel since 615ecff, which the
 * shipped fit's files (the 2026-12-03b grid) ran. Files before 615ecff (the first 12-03 grid and older) ran 'serial'
 * and are counted so (`--twoshot-atomic-allgather serial`).
 */
export const MODEL_TWOSHOT_ATOMIC_ALLGATHER: TwoshotAtomicAllGather = 'batched'

/**
 * How the bench files up to 2026-11-29 ran (the 11-29h / 11-29k grids, the 2-GPU files, the fits before the
 * 2026-12-02c one): a 1 MiB buffer, the block targets before the sweep, the push all-gather (the only kernel then),
 * ring and twoshot-atomic with 16-bit partials and lines, twoshot-sentinel's 'words' broadcast (where its spread path
 * ran at all), twoshot-atomic's 'serial' all-gather.
 */
export const COUNTING_2026_11_29: Required<LaunchCounting> = {
  bufferBytes: BENCH_BUFFER_BYTES_BEFORE_FIELD,
  blockTargets: BLOCK_TARGETS_BEFORE_SWEEP,
  allGather: 'push',
  accumulation: 'dtype',
  twoshotBroadcast: 'words',
  twoshotAtomicAllGather: 'serial',
}

/** A counting with every absent field at the model's own value. */
export function modelCounting(counting: LaunchCounting = {}): Required<LaunchCounting> {
  return {
    bufferBytes: counting.bufferBytes ?? MODEL_BUFFER_BYTES,
    blockTargets: counting.blockTargets ?? MODEL_BLOCK_TARGETS,
    allGather: counting.allGather ?? MODEL_TWOSHOT_ALLGATHER,
    accumulation: counting.accumulation ?? MODEL_ACCUMULATION,
    twoshotBroadcast: counting.twoshotBroadcast ?? MODEL_TWOSHOT_BROADCAST,
    twoshotAtomicAllGather: counting.twoshotAtomicAllGather ?? MODEL_TWOSHOT_ATOMIC_ALLGATHER,
  }
}

/** Peers recvReduce polls together (kernels/llcomm/ll_buffer.cuh LLCOMM_RECV_BATCH). */
export const RECV_BATCH = 8
/**
 * Peers one poller of oneshot-sentinel's word-spread reduce polls together, by element bytes (oneshot_sentinel.cu:
 * blockRecvReduceSpreadWords<DT, kElemBytes == 4 ? 4 : LLCOMM_RECV_BATCH>; the f32 kernel spilled with 8). A kernel
 * constant with no host copy: test/model/kernel-structure.test.ts reads it from the source.
 */
export const ONESHOT_SENTINEL_WORDS_BATCH: Readonly<Record<2 | 4, number>> = { 2: RECV_BATCH, 4: 4 }
/**
 * Owners one thread of twoshot-sentinel's spread path loads and polls together, and peers one poller of its owner
 * reduce polls together (kernels/allreduce/twoshot_sentinel.cu kTwoshotSpreadBatch; its serial path keeps
 * RECV_BATCH). A kernel constant with no host copy: test/model/kernel-structure.test.ts reads it from the source.
 */
export const TWOSHOT_SPREAD_BATCH = 4

/** Payload bytes one thread moves per slot, by protocol (docs/kernels.md packet layouts). */
export const SLOT_PAYLOAD_BYTES: Readonly<Record<KernelProtocol, number>> = {
  ll8: 4,
  ll16: 8,
  sentinel: 16,
  // twoshot-atomic: its all-gather runs LL8 packets, the longer of its two phases in slots
  ll128: 4,
  flags: 16,
  barrier: 16,
}

export interface KernelCounts {
  launches: number
  pollRounds: number
  storeRounds: number
  /**
   * storeRounds in full-block rounds of the block's store instructions (one-shot: slots × (N−1) sends over T
   * threads, so a block with fewer slots than threads counts slots / T of a round per peer). Used on `virtual`, where every rank's blocks
   * store into the one GPU's L2 and its store throughput, not one thread's chain of fire-and-forget stores, sets
   * the cost (latency-model.ts kernelFeatures).
   */
  storeLaneRounds: number
  /** Single-peer receives done one after another by one thread (two-shot all-gather). */
  serialRecvs: number
  /**
   * twoshot-atomic's all-gather: receives that wait for a second owner line. A receiving warp takes 32 consecutive
   * words of each owner's part, one owner after another; an owner line holds 31, so once the part has more than one
   * line the warp's words come from two lines, which two different warps of the owner count, sum and broadcast.
   * The warp moves on to the next owner only when all its lanes have their word: one more wait per owner. Used on
   * `virtual` only (latency-model.ts kernelFeatures), priced as a serial receive.
   */
  secondLineRecvs: number
  /** Sentinel re-arms: a local store of the sentinel after each slot read (sentinel protocol only). */
  rearms: number
  /** twoshot-atomic's reduce-scatter: per warp, rounds of LL128 lines × N red.add line sends (one per owner). */
  atomicLineRounds: number
  /** Peer-parallel one-shot path: windows of ranks staged in shared memory, each closed by a __syncthreads. */
  spreadWindows: number
  /** Peer-parallel one-shot path: elements one slot thread reads back from the shared stage and adds (N × per slot). */
  stagedReduces: number
  /** Remote slot loads one thread issues with RECV_BATCH in flight (one per peer per round of slots). */
  peerLoads: number
  /** Sentinel slots one thread checks or canonicalizes word by word in a 16-bit dtype (two halves per word). */
  halfWordSentinelSlots: number
  /**
   * Memory accesses the block's threads issue in the launch: blockBytes over the protocol's access size
   * (ACCESS_BYTES), the requests the block's SM issues one after another through its load/store unit.
   */
  blockAccesses: number
  /** Bytes one block moves through L2 in the launch: slot stores, slot loads, re-arms, its input and output. */
  blockBytes: number
  /** Bytes this rank re-arms (sentinel slots it read), for the bandwidth side of the re-arm. */
  rearmBytes: number
  /** This rank's message bytes in the launch(es) counted (the wire and atomic bytes scale from it). */
  messageBytes: number
  /**
   * Of messageBytes, the bytes whose reduce-scatter moves at twice the input's width: f16/bf16 with f32
   * accumulation, ring's f32 partial sums (two 16-byte accesses per 16 input bytes, ring.cu llcStoreF32Partial) and
   * twoshot-atomic's f32 lines (two red.add.f32 per input word into a pair of lines, atomic_lines.cuh). The
   * reduce-scatter half of the wire bytes, and all of the red.add bytes, double for them (latency-model.ts).
   */
  wideReduceScatterBytes: number
  ringSteps: number
  barriers: number
  /**
   * twoshot-sentinel's pull kernel: publish-flag hand-offs per launch (each owner's release after a bar.sync, every
   * peer's acquire waits for all owners' flags, one bar.sync), 1 per launch that pulls. Priced as a ring step
   * (latency-model.ts kernelFeatures: the same four events as llcBlockRingSignal / llcBlockRingWait).
   */
  publishFlags: number
}

const ZERO: KernelCounts = {
  launches: 0,
  pollRounds: 0,
  storeRounds: 0,
  storeLaneRounds: 0,
  serialRecvs: 0,
  secondLineRecvs: 0,
  rearms: 0,
  atomicLineRounds: 0,
  spreadWindows: 0,
  stagedReduces: 0,
  peerLoads: 0,
  halfWordSentinelSlots: 0,
  blockAccesses: 0,
  blockBytes: 0,
  rearmBytes: 0,
  messageBytes: 0,
  wideReduceScatterBytes: 0,
  ringSteps: 0,
  barriers: 0,
  publishFlags: 0,
}

const COUNT_KEYS = Object.keys(ZERO) as (keyof KernelCounts)[]

function add(a: KernelCounts, b: KernelCounts, times: number): KernelCounts {
  const out = { ...a }
  for (const k of COUNT_KEYS) out[k] = a[k] + times * b[k]
  return out
}

/** 32-bit words of the peer-parallel path's shared stage (ll_buffer.cuh LLCOMM_PEER_STAGE_WORDS). */
export const PEER_STAGE_WORDS = 8192
/** Fewest ranks at which the one-shot kernels take the peer-parallel path (ll_buffer.cuh LLCOMM_SPREAD_MIN_RANKS). */
export const SPREAD_MIN_RANKS = 8
/** Fewest thread groups per slot for the peer-parallel path (ll_buffer.cuh LLCOMM_SPREAD_MIN_GROUPS). */
export const SPREAD_MIN_GROUPS = 4
/** Payload words per slot (LL8 1, LL16 2, sentinel 4): the stage holds slots × words per rank. */
const SLOT_WORDS: Readonly<Record<KernelProtocol, number>> = {
  ll8: 1,
  ll16: 2,
  sentinel: 4,
  ll128: 1,
  flags: 4,
  barrier: 4,
}

/**
 * Thread groups per slot of the one-shot peer-parallel path (LlBuffer::spreadGroups): 1 means the serial path
 * (fewer than SPREAD_MIN_RANKS ranks, or at least one slot per thread, or a slot count the stage cannot hold, or
 * fewer than SPREAD_MIN_GROUPS groups).
 */
export function spreadGroups(ranks: number, slots: number, threads: number, slotWords: number): number {
  if (ranks < SPREAD_MIN_RANKS || slots === 0 || slots >= threads || slots * slotWords > PEER_STAGE_WORDS) return 1
  const groups = Math.min(Math.floor(threads / slots), ranks)
  return groups >= SPREAD_MIN_GROUPS ? groups : 1
}

/**
 * Bytes of one thread's access to a slot, by protocol: an LL8 packet is 8 bytes (4 of payload, 4 of flag), an LL16
 * packet, a sentinel slot and a plain slot 16. twoshot-atomic (ll128) is counted at its LL8 phases' 8 bytes. A
 * block's accesses = blockBytes / this size: the same bytes cost twice the requests in LL8 packets.
 */
export const ACCESS_BYTES: Readonly<Record<KernelProtocol, number>> = {
  ll8: 8,
  ll16: 16,
  sentinel: 16,
  ll128: 8,
  flags: 16,
  barrier: 16,
}

/**
 * A launch's counts before launchCounts derives its own: storeLaneRounds (storeRounds where not set),
 * halfWordSentinelSlots from `sentinelSlotsChecked` (storeRounds + peerLoads where not set: every store and load a
 * whole slot) and blockAccesses from blockBytes, of which `wordAccessBytes` move in 4-byte accesses (0 where not set).
 */
type StructureCounts = Omit<KernelCounts, 'storeLaneRounds' | 'halfWordSentinelSlots' | 'blockAccesses'> & {
  storeLaneRounds?: number
  sentinelSlotsChecked?: number
  wordAccessBytes?: number
}

/**
 * Bytes of one word access (twoshot-sentinel's spread path: its own part's input and output, and with the 'words'
 * broadcast the broadcast's stores).
 */
const WORD_ACCESS_BYTES = 4

/** Counts of one launch of `count` elements per rank. */
function launchCounts(
  shape: KernelShape,
  variant: ReturnType<typeof selectKernel>,
  ranks: number,
  count: number,
  counting: Required<LaunchCounting>,
): KernelCounts {
  const {
    sentinelSlotsChecked,
    wordAccessBytes = 0,
    ...counted
  } = structureCounts(shape, variant, ranks, count, counting)
  // the kernels other than the one-shot leave storeLaneRounds at storeRounds
  const k = { ...counted, storeLaneRounds: counted.storeLaneRounds ?? counted.storeRounds }
  // a 16-bit sentinel word holds two elements, each checked (reader) and canonicalized (writer) on its own
  const halfWords = variant.protocol === 'sentinel' && DTYPE_BYTES[variant.dtype] === 2
  return {
    ...k,
    halfWordSentinelSlots: halfWords ? (sentinelSlotsChecked ?? k.storeRounds + k.peerLoads) : 0,
    blockAccesses:
      (k.blockBytes - wordAccessBytes) / ACCESS_BYTES[variant.protocol] + wordAccessBytes / WORD_ACCESS_BYTES,
  }
}

function structureCounts(
  shape: KernelShape,
  variant: ReturnType<typeof selectKernel>,
  ranks: number,
  count: number,
  counting: Required<LaunchCounting>,
): StructureCounts {
  const eb = DTYPE_BYTES[variant.dtype]
  const build = accumulationBuild(counting.accumulation)
  const ls = launchShape(variant, ranks, count, counting.bufferBytes, build, counting.blockTargets)
  // f16/bf16 with f32 accumulation: ring's reduce-scatter carries f32 partials, twoshot-atomic adds on f32 lines
  const wide16 =
    eb === 2 &&
    (shape === 'ring'
      ? build.ringF32Partials !== false
      : variant.protocol === 'll128' && build.atomicF32Lines !== false)
  const threads = ls.threadsPerBlock
  const pieceBytes = pieceElems(count, ls.blocksPerRank, 16 / eb) * eb
  const payload = SLOT_PAYLOAD_BYTES[variant.protocol]
  const slots = Math.ceil(pieceBytes / payload)
  const peers = ranks - 1
  // recvReduce walks the ranks RECV_BATCH at a time (its own rank's batch included): ceil(N / B) poll batches
  const batches = Math.ceil(ranks / RECV_BATCH)
  const rounds = (s: number) => Math.ceil(s / threads)
  const sentinel = variant.protocol === 'sentinel'
  const rankBytes = count * eb // this rank's bytes in this launch, all channels
  const { halfWordSentinelSlots: _h, blockAccesses: _a, ...zero } = ZERO
  const none: StructureCounts = { ...zero, launches: 1, messageBytes: rankBytes, storeLaneRounds: undefined }
  switch (shape) {
    case 'oneshot': {
      const words = SLOT_WORDS[variant.protocol]
      // slot bytes per payload byte: LL packets are half flag; sentinel slots are all payload, re-armed once read
      const slotFactor = sentinel ? 1 : 2
      const oneshotBlockBytes = pieceBytes * (2 * slotFactor * peers + (sentinel ? peers : 0) + 3)
      const groups = spreadGroups(ranks, slots, threads, words)
      if (groups > 1) {
        // Peer-parallel path (LlBuffer::bcastSpread / recvReduceSpread): thread t serves slot t % slots and the
        // peers of group t / slots; ranks are staged in windows that fit the shared stage.
        const window = Math.min(Math.floor(PEER_STAGE_WORDS / (slots * words)), ranks)
        const pollGroups = Math.min(groups, window)
        const windows = Math.ceil(ranks / window)
        const peersPerPoller = Math.ceil(window / pollGroups)
        // oneshot-sentinel (ac2b151): the reduce by words, thread t < 4·slots summing word t % 4 of slot t / 4 over
        // the N ranks from the same stage; its own word loaded and its output word stored by that thread
        const byWords = variant.algorithm === 'oneshot-sentinel'
        const batch = byWords ? ONESHOT_SENTINEL_WORDS_BATCH[eb as 2 | 4] : RECV_BATCH
        return {
          ...none,
          pollRounds: windows * Math.ceil(peersPerPoller / batch),
          storeRounds: Math.ceil(peers / groups),
          // the block's store instructions: slots × (N−1) sends over T threads
          storeLaneRounds: (slots / threads) * peers,
          rearms: sentinel ? windows * peersPerPoller : 0,
          rearmBytes: sentinel ? peers * rankBytes : 0,
          spreadWindows: windows,
          stagedReduces: ranks * ((byWords ? 4 : 4 * words) / eb),
          blockBytes: oneshotBlockBytes,
          peerLoads: windows * peersPerPoller,
          wordAccessBytes: byWords ? 2 * pieceBytes : 0,
        }
      }
      const r = rounds(slots)
      return {
        ...none,
        pollRounds: r * batches,
        storeRounds: r * peers,
        // the block's store instructions: a block with fewer slots than threads stores slots / T of a round per peer
        storeLaneRounds: (slots / threads) * peers,
        rearms: sentinel ? r * peers : 0,
        rearmBytes: sentinel ? peers * rankBytes : 0,
        peerLoads: r * peers,
        blockBytes: oneshotBlockBytes,
      }
    }
    case 'twoshot': {
      // parts of the piece per owner, 16-byte aligned: small messages leave some owners without data
      const partBytes = Math.ceil(pieceBytes / ranks / 16) * 16
      const ownersWithData = Math.min(ranks, Math.ceil(pieceBytes / partBytes))
      const otherOwners = Math.min(peers, ownersWithData)
      if (variant.protocol === 'll128') {
        // twoshot-atomic: one warp per 128-byte line (LLCOMM_LINE_DATA_WORDS data words); per line round a warp
        // red.adds its line into every owner with data, then one fence and a counter bump per line publish them
        // (atomic_lines.cuh publish()); the owner waits for its lines' counters, then broadcasts each word as an LL8
        // packet to every peer; the all-gather receives word after word: owner after owner ('serial', before
        // 615ecff), or RECV_BATCH owners with data at a time, their loads in flight together ('batched': a poll round
        // and a peer load each, no serial receive; one owner left is received alone, a round all the same).
        const partLines = Math.ceil(partBytes / (LLCOMM_LINE_DATA_WORDS * 4))
        const lineRounds = Math.ceil(partLines / (threads / 32))
        const wordRounds = rounds(partBytes / 4)
        const batched = counting.twoshotAtomicAllGather === 'batched'
        const agBatches = wordRounds * Math.ceil(otherOwners / RECV_BATCH)
        const serialRecvs = batched ? 0 : wordRounds * otherOwners
        // f16/bf16 on f32 lines (atomic_lines.cuh kF32Lines): a logical line is a pair of 128-byte lines, each input
        // word added as two red.add.f32 (low element into the first, high into the second, same lane), the pair
        // counted, waited for, read and zeroed together. The same lines, rounds, fence and counter wait: only the
        // line bytes double (red.add bytes and the block's). Not a second line send: the warp's reds to the pair go
        // out in one issue sequence and its one fence waits for all of them (measured, bf16, f32 / 16-bit lines: 2
        // ranks 8 KB +0.40 us, 64 KB +0.46, 8 ranks 8 KB +0.46; bench/results/cuda-h200-bench-atomic-lines-bf16-
        // 2026-12-01.json, docs/kernels.md "Numerics"; at the 11-29 fit's 0.14 us a line send, a second send per line
        // would add 0.84, 4.8 and 1.1 us there).
        const lineBytesPerPayload = (wide16 ? 2 : 1) * (128 / 124)
        return {
          ...none,
          wideReduceScatterBytes: wide16 ? rankBytes : 0,
          atomicLineRounds: lineRounds * ownersWithData,
          pollRounds: lineRounds + (batched ? agBatches : 0),
          peerLoads: batched ? wordRounds * otherOwners : 0,
          storeRounds: lineRounds * peers,
          // 'batched' (on virtual): the owner's broadcast in the block's store instructions, as the one-shots' are
          // counted (a warp's line is one store instruction a peer, back to back, none waiting): (part lines · 32 /
          // T)·(N−1). 'serial' keeps one thread's count (storeRounds), as the files before 615ecff and their fits
          // counted it: there the kernel's walk over all N owners in every warp, which no count describes, rode on
          // this term (64 ranks 8 B: 16.7 µs measured, 14.5 predicted; 5.1 measured once the walk was gone, 615ecff)
          ...(batched ? { storeLaneRounds: ((partLines * 32) / threads) * peers } : {}),
          serialRecvs,
          // 32 consecutive words (one receiving warp) span at most two 31-word lines, and two as soon as the part
          // has more than one line (parts are whole 16-byte units: 28 words fit one line, 32 do not): a wait for
          // the second line a receive ('serial'), a batch ('batched')
          secondLineRecvs: partLines > 1 ? (batched ? agBatches : serialRecvs) : 0,
          // red.add lines (128 B per 124 payload; 256 on f32 lines) to every owner; LL8 broadcast and all-gather (8 B
          // per 4)
          blockBytes: partBytes * (ownersWithData * lineBytesPerPayload + 2 * 2 * peers) + 3 * pieceBytes,
        }
      }
      const partSlots = Math.ceil(partBytes / payload)
      if (variant.algorithm === 'twoshot-sentinel' && spreadGroups(ranks, partSlots, threads, SLOT_WORDS.sentinel) > 1)
        return twoshotSpreadCounts(none, ranks, partSlots, threads, otherOwners, counting.twoshotBroadcast, {
          blockBytes: partBytes * (peers * 6) + 3 * pieceBytes,
          rearmBytes: (2 * peers * rankBytes) / ranks,
          partBytes,
          elementsPerWord: 4 / eb,
        })
      const r = rounds(partSlots)
      if (
        variant.algorithm === 'twoshot-sentinel' &&
        twoshotAllGather(variant.dtype, ranks, count, ls.blocksPerRank, counting.allGather) === 'pull'
      )
        return {
          ...none,
          // the pull kernel: reduce-scatter and owner reduce as below; the owner publishes its reduced part once
          // (plain stores), releases its flag; every peer waits for every owner's flag, then loads the owners' parts
          // 8 at a time (kTwoshotPullBatch, the loads of a batch in flight together) and stores them
          pollRounds: r * batches + r * Math.ceil(otherOwners / RECV_BATCH),
          storeRounds: r * otherOwners + r,
          serialRecvs: 0,
          peerLoads: r * peers + r * otherOwners,
          // reduce-scatter stores, loads and re-arms, the publish store, the all-gather loads
          blockBytes: partBytes * (peers * 4 + 1) + 3 * pieceBytes,
          rearms: r * peers,
          rearmBytes: (peers * rankBytes) / ranks,
          // 16-bit words checked: the reduce-scatter's sentinel sends and polls (the pull moves plain slots)
          sentinelSlotsChecked: r * otherOwners + r * peers,
          publishFlags: 1,
        }
      return {
        ...none,
        // reduce-scatter: send my slots of every other owner's part; the owner polls its part like a one-shot
        // then broadcasts the reduced part to every peer; all-gather: receive each other owner's part in turn
        pollRounds: r * batches,
        storeRounds: r * otherOwners + r * peers,
        serialRecvs: r * otherOwners,
        peerLoads: r * peers,
        // reduce-scatter stores and loads, broadcast stores and all-gather loads, each slot re-armed once read
        blockBytes: partBytes * (peers * 6) + 3 * pieceBytes,
        rearms: sentinel ? r * peers + r * otherOwners : 0,
        rearmBytes: sentinel ? (2 * peers * rankBytes) / ranks : 0,
      }
    }
    case 'ring': {
      const stepSlots = Math.ceil((Math.ceil(pieceBytes / ranks / 16) * 16) / payload)
      // 2(N−1) dependent steps (a flag hand-off each); in each, rounds of one remote read and one store per thread
      const dataRounds = 2 * peers * rounds(stepSlots)
      const stepBytes = Math.ceil(pieceBytes / ranks / 16) * 16
      // f16/bf16 with f32 partials (ring.cu kWidePartials): the N−1 reduce-scatter sends (steps 0..N−2) store 32
      // bytes of f32 partials per 16 input bytes (two 16-byte stores, llcStoreF32Partial) and their N−1 receives
      // (steps 1..N−1) load them back (two loads, llcLoadF32Partial): one more store and one more load per thread and
      // round in those steps, one more part of bytes each way; the all-gather half is unchanged
      const wideRounds = wide16 ? peers * rounds(stepSlots) : 0
      // per step: read the received part, read my input, store the part to the next rank
      return {
        ...none,
        ringSteps: 2 * peers,
        peerLoads: dataRounds + wideRounds,
        storeRounds: dataRounds + wideRounds,
        blockBytes: 2 * peers * 3 * stepBytes + (wide16 ? 2 * peers * stepBytes : 0),
        wideReduceScatterBytes: wide16 ? rankBytes : 0,
      }
    }
    case 'barrier':
      // two global barriers; between them each thread reads its slots of every rank, RECV_BATCH ranks' loads in flight
      return {
        ...none,
        pollRounds: rounds(slots) * batches,
        peerLoads: rounds(slots) * ranks,
        barriers: 2,
        // copy into my buffer, read every rank's buffer, write the output
        blockBytes: pieceBytes * (ranks + 3),
      }
  }
}

/**
 * twoshot-sentinel's spread path (twoshot_sentinel.cu, the spread2 structure of fd9724f, taken uniformly per block
 * where spreadGroups of a part's `slots` is > 1), on the critical path of an owner of a full part (`slots` slots;
 * `otherOwners` = K'):
 * - reduce-scatter: sender thread t serves slot t % slots of the owners k = 1 + t / slots + j·g, g = min(T / slots,
 *   N−1) groups: P = min(ceil((N−1)/g), K') owners with data, their input loaded TWOSHOT_SPREAD_BATCH at a time
 *   before their sends (local loads, not counted, as in the serial path; the first batch and the owner's own word
 *   are issued before the epoch load, an overlap no count describes), P remote slot stores;
 * - owner reduce (LlBuffer::blockRecvReduceSpreadWords with the kernel's batch): the one-shots' pollers and windows
 *   over the part's slots (spreadGroups(N, slots) groups, windows of ranks that fit the shared stage, each closed by
 *   a __syncthreads), then thread t < 4·slots reduces word t % 4 of slot t / 4 over the N ranks: N × elements per
 *   word read back from the stage, not N × elements per slot;
 * - broadcast, by `broadcast` (TwoshotBroadcast; MODEL_TWOSHOT_BROADCAST is the shipped fit's 'slots'):
 *   - 'words' (LlBuffer::bcastWord, the kernel before 4e5f9c1, which the 12-02c grid and older files ran): each reducing
 *     thread stores its own word to every peer, N−1 word stores, with no stage and no __syncthreads between the sums
 *     and the stores (no window of its own); the block issues 4·slots × (N−1) store instructions, four per slot and
 *     peer;
 *   - 'slots' (since 4e5f9c1, bspread): each reducing thread puts its canonicalized word in the shared `sums` (and
 *     stores its output word, as before), one __syncthreads, then each sender thread with s < slots reads the slot's
 *     4 words back and sends one 16-byte slot (Fmt::write) to each of its peers ownerOf(k), k = first, first + g, …:
 *     Q = ceil((N−1)/g) slot stores a thread (not capped at K': every peer needs my part; 1 where g = N−1), the block
 *     slots × (N−1) store instructions, one per slot and peer. The __syncthreads is not counted: it is no window
 *     (nothing polled or staged by rank before it; the threads arrive from the same reduce, just out of its last
 *     window's barrier, so a window's fitted price would overstate it), and `barriers` are global barriers (priced
 *     barrier(N)); the count has no term for a bare block barrier, so its cost (with the 4 shared loads) is left to
 *     the fit's other terms;
 * - all-gather: each sender thread polls its P owners TWOSHOT_SPREAD_BATCH at a time (LlBuffer::pollBatch, every load
 *   before any inspection: batched polls, not serial receives) and re-arms each slot it read. pollRounds, rearms,
 *   peerLoads, spreadWindows and stagedReduces are the same under both broadcasts.
 * The signature check after the broadcast (off the path between the sums and the peers' polls) has no count here,
 * as the check had none before it moved. Bytes (blockBytes, rearmBytes) are the serial path's: the same slots move,
 * only the threads differ; the owner's own input and output words move in 4-byte accesses, and with 'words' the
 * broadcast's bytes too ('slots': in 16-byte slot stores, as the other slots).
 * 16-bit words to check or canonicalize: the reduce-scatter's slot stores and every slot load count whole slots as
 * elsewhere; the broadcast ('words'): the N−1 word stores send one word canonicalized twice (in the kernel and in
 * sendWord), both hoisted out of the store loop (nvcc -ptx, sm_90, the bf16 kernel): 2 words = 2/4 of a slot;
 * ('slots'): the reducing thread's word canonicalized once (into `sums`), and the sender's slot once more in
 * Fmt::write, hoisted out of its Q stores (the same slot to every peer; nvcc -ptx, sm_90, the bf16 kernel at
 * 4e5f9c1): 1 + 1/4 of a slot, whatever Q.
 */
function twoshotSpreadCounts(
  none: StructureCounts,
  ranks: number,
  slots: number,
  threads: number,
  otherOwners: number,
  broadcast: TwoshotBroadcast,
  bytes: { blockBytes: number; rearmBytes: number; partBytes: number; elementsPerWord: number },
): StructureCounts {
  const peers = ranks - 1
  const words = SLOT_WORDS.sentinel
  const senderGroups = Math.min(Math.floor(threads / slots), peers)
  const ownersPerThread = Math.min(Math.ceil(peers / senderGroups), otherOwners)
  // the owner's reduce: blockRecvReduceSpreadWords(slots, spreadGroups(slots)), the one-shots' pollers and windows
  const ownerGroups = spreadGroups(ranks, slots, threads, words)
  const window = Math.min(Math.floor(PEER_STAGE_WORDS / (slots * words)), ranks)
  const pollGroups = Math.min(ownerGroups, window)
  const windows = Math.ceil(ranks / window)
  const peersPerPoller = Math.ceil(window / pollGroups)
  const ownerLoads = windows * peersPerPoller
  const peerLoads = ownerLoads + ownersPerThread
  const common: StructureCounts = {
    ...none,
    pollRounds:
      windows * Math.ceil(peersPerPoller / TWOSHOT_SPREAD_BATCH) + Math.ceil(ownersPerThread / TWOSHOT_SPREAD_BATCH),
    rearms: peerLoads,
    rearmBytes: bytes.rearmBytes,
    peerLoads,
    spreadWindows: windows,
    stagedReduces: ranks * bytes.elementsPerWord,
    blockBytes: bytes.blockBytes,
  }
  if (broadcast === 'slots') {
    // one slot store to each of the sender's peers k = first, first + g, … (every peer, with data or not)
    const broadcastStores = Math.ceil(peers / senderGroups)
    return {
      ...common,
      // reduce-scatter slot sends, then the sender's broadcast slot sends
      storeRounds: ownersPerThread + broadcastStores,
      // the block's store instructions: slots × K' reduce-scatter sends and slots × (N−1) broadcast slot sends over T
      storeLaneRounds: (slots * otherOwners + slots * peers) / threads,
      // the reducing thread's word (1/4 of a slot) and the sender's slot (Fmt::write, hoisted out of its stores)
      sentinelSlotsChecked: ownersPerThread + peerLoads + 1 + 1 / words,
      // my part's input loaded and output stored word by word; the broadcast in 16-byte slots
      wordAccessBytes: bytes.partBytes * 2,
    }
  }
  // the broadcast's word, canonicalized twice (kernel, sendWord) before its store loop
  const canonicalizedWords = 2
  return {
    ...common,
    // reduce-scatter slot sends, then the reducing thread's word to every peer
    storeRounds: ownersPerThread + peers,
    // the block's store instructions: slots × K' reduce-scatter sends and 4·slots × (N−1) broadcast word sends over T
    storeLaneRounds: (slots * otherOwners + words * slots * peers) / threads,
    sentinelSlotsChecked: ownersPerThread + peerLoads + canonicalizedWords / words,
    // the broadcast's bytes, and my part's input loaded and output stored word by word
    wordAccessBytes: bytes.partBytes * (peers + 2),
  }
}

/** Launches of one shape: `times` identical launches with the counts of one. */
export interface LaunchGroup {
  times: number
  counts: KernelCounts
}

/**
 * The launches of one call of `bytes` per rank: full launches of maxCountPerCall elements, then the remainder.
 * A call of 0 bytes is counted as one launch of one element (the kernel still runs its handshake). `counting`: the
 * buffer, block targets, all-gather kernel, accumulation and twoshot-sentinel broadcast the launches are counted with
 * (absent fields: the model's own, modelCounting).
 */
export function kernelLaunches(
  algorithm: string,
  shape: KernelShape,
  ranks: number,
  bytes: number,
  dtype: Dtype = 'bf16',
  counting: LaunchCounting = {},
): LaunchGroup[] {
  if (!Number.isInteger(ranks) || ranks < 2)
    throw new LlcommError('INVALID_ARGUMENT', `ranks must be an integer ≥ 2, got ${ranks}`)
  // the name comes from the model's table; selectKernel rejects one without a kernel
  const variant = selectKernel(algorithm as Parameters<typeof selectKernel>[0], dtype, 'sum')
  const c = modelCounting(counting)
  const count = Math.max(1, Math.ceil(bytes / DTYPE_BYTES[dtype]))
  const build = accumulationBuild(c.accumulation)
  const maxCount = launchShape(variant, ranks, 1, c.bufferBytes, build, c.blockTargets).maxCountPerCall
  const full = Math.floor(count / maxCount)
  const rest = count - full * maxCount
  const groups: LaunchGroup[] = []
  if (full > 0) groups.push({ times: full, counts: launchCounts(shape, variant, ranks, maxCount, c) })
  if (rest > 0) groups.push({ times: 1, counts: launchCounts(shape, variant, ranks, rest, c) })
  return groups
}

/** Counts of one call of `bytes` per rank: the sum over its launches (kernelLaunches). */
export function kernelCounts(
  algorithm: string,
  shape: KernelShape,
  ranks: number,
  bytes: number,
  dtype: Dtype = 'bf16',
  counting: LaunchCounting = {},
): KernelCounts {
  return kernelLaunches(algorithm, shape, ranks, bytes, dtype, counting).reduce(
    (total, g) => add(total, g.counts, g.times),
    ZERO,
  )
}
