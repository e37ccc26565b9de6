/**
 * The call signature (issue 18 item 1): what every rank says about the call it is making, checked by every peer
 * before it uses any of that call's data. Two 32-bit words, identical encoding on both backends:
 *
 *   word 0: the element count of this chunk (one chunk = one epoch on the CPU, one launch on CUDA), low 32 bits
 *   word 1: bits  0..3  algorithm code (ALGORITHM_CODES; 0 is never sent, so a zero word is never a signature)
 *           bits  4..5  dtype code (LLCOMM_DTYPE_*: f32 0, f16 1, bf16 2)
 *           bits  6..7  op code (sum 0)
 *           bits  8..9  protocol code (0 none: the algorithm uses no LL packets, 1 ll8, 2 ll16)
 *           bits 10..20 chunk index within the call, modulo 2048
 *           bits 21..31 chunk count of the call, modulo 2048
 *
 * A fused RMSNorm launch (per process; encodeFusedSignature below) has algorithm code 9 and its own bits 6..31; an
 * allReduceMany launch (per process; encodeManySignature) code 10, its dtype in bits 4..5 and a hash in bits 9..31.
 *
 * Two ranks whose words differ at the same epoch are making different calls: both fail with MISMATCH, and neither
 * returns data. The chunk count makes two calls of different totals differ at their first chunk even where the
 * first chunks have the same length (chunking at the buffer's capacity), so no rank completes a call that its peers
 * make with another count. Equal signatures do not prove equal calls beyond these fields (different buffers, or a
 * chunk count that differs by a multiple of 2048 with equal chunk lengths): the signature catches what a user can
 * get wrong through options and lengths, not every possible divergence.
 */
import type { AlgorithmName, Dtype, LlProtocol, ReduceOp } from '../api/types.js'
import { LlcommError } from '../errors.js'

/** Algorithm codes in word 1 (kernels/llcomm/abi.cuh repeats them as LLCOMM_SIG_ALG_*). Never renumber. */
export const ALGORITHM_CODES: Readonly<Record<AlgorithmName, number>> = {
  'oneshot-ll': 1,
  'oneshot-sentinel': 2,
  'twoshot-sentinel': 3,
  'twoshot-atomic': 4,
  'oneshot-barrier': 5,
  ring: 6,
  nccl: 7,
  'nccl-symmetric': 8,
}

export const DTYPE_CODES: Readonly<Record<Dtype, number>> = { f32: 0, f16: 1, bf16: 2 }
export const OP_CODES: Readonly<Record<ReduceOp, number>> = { sum: 0 }
/** 0: the algorithm moves no LL packets (the protocol option does not change what it does). */
export const PROTOCOL_CODES: Readonly<Record<LlProtocol | 'none', number>> = { none: 0, ll8: 1, ll16: 2 }

export const SIGNATURE_CHUNK_MODULUS = 2048

export interface CallSignature {
  /** Elements in this chunk. */
  count: number
  algorithm: AlgorithmName
  dtype: Dtype
  op: ReduceOp
  protocol: LlProtocol | 'none'
  chunkIndex: number
  chunkCount: number
}

/** The protocol field of an algorithm's signature: only oneshot-ll moves LL packets whose format the option picks. */
export function signatureProtocol(
  algorithm: AlgorithmName,
  protocol: LlProtocol | undefined,
  backendDefault: LlProtocol,
): LlProtocol | 'none' {
  return algorithm === 'oneshot-ll' ? (protocol ?? backendDefault) : 'none'
}

/** Word 1's bits 0..9 (what a CUDA kernel knows at compile time). */
export function signatureKindBits(s: Pick<CallSignature, 'algorithm' | 'dtype' | 'op' | 'protocol'>): number {
  return (
    ALGORITHM_CODES[s.algorithm] |
    (DTYPE_CODES[s.dtype] << 4) |
    (OP_CODES[s.op] << 6) |
    (PROTOCOL_CODES[s.protocol] << 8)
  )
}

/** Word 1's bits 10..31 (what the host knows: chunk index and count), as the CUDA params' `signatureChunk`. */
export function signatureChunkBits(chunkIndex: number, chunkCount: number): number {
  return (((chunkIndex % SIGNATURE_CHUNK_MODULUS) << 10) | ((chunkCount % SIGNATURE_CHUNK_MODULUS) << 21)) >>> 0
}

export function encodeSignature(s: CallSignature): [number, number] {
  return [s.count >>> 0, (signatureKindBits(s) | signatureChunkBits(s.chunkIndex, s.chunkCount)) >>> 0]
}

// ---- the fused AllReduce + residual add + RMSNorm (issue 21; per process: kernels/llcomm/fused_signature.cuh) ----

/** Word 1's algorithm code of a fused RMSNorm launch (abi.cuh LLCOMM_SIG_ALG_FUSED_RMSNORM): never an all-reduce's. */
export const FUSED_SIGNATURE_CODE = 9
/** The fused algorithms' codes in word 1's bits 6..8 (never renumber). */
export const FUSED_ALGORITHM_CODES: Readonly<Record<string, number>> = {
  oneshot: 1,
  twoshot: 2,
  split: 3,
  'split-ll': 4,
  'split-twoshot': 5,
}
/** Word 1's bits 9..31 of a fused signature: 23 bits of hash. */
export const FUSED_SIGNATURE_HASH_BITS = 23

/** What a fused launch's signature covers (everything the ranks must agree on for the launch to be one call). */
export interface FusedCallSignature {
  /** The launch's rows (word 0 = rows × hidden, low 32 bits) and the call's. */
  launchRows: number
  callRows: number
  hidden: number
  dtype: Dtype
  /** The resolved fused algorithm (push and non-push split kernels are one algorithm: they interoperate). */
  algorithm: string
  epsBits: number
  /** LLCOMM_FUSED_* flags (residual in f32, no residual input, e4m3 output). */
  flags: number
  outScaleBits: number
  launchIndex: number
  launchCount: number
  blocksPerRank: number
  clusterBlocks: number
}

/** 32-bit FNV-1a over u32 words (each word's four bytes, little-endian). */
function fnv1a32(words: readonly number[]): number {
  let h = 0x811c9dc5
  for (const w of words)
    for (let b = 0; b < 4; b++) {
      h ^= (w >>> (8 * b)) & 0xff
      h = Math.imul(h, 0x01000193) >>> 0
    }
  return h >>> 0
}

/**
 * A fused launch's two words: word 0 = launch rows × hidden (low 32 bits); word 1 = FUSED_SIGNATURE_CODE | dtype
 * << 4 | algorithm << 6 | hash << 9, the hash (FNV-1a folded to 23 bits) over call rows, hidden, eps bits, flags,
 * outScale bits, launch index and count, blocks per rank and cluster size. A difference in any hashed field is caught
 * unless the two hashes collide (one chance in 2^23 for unrelated values); dtype, algorithm and the launch's element
 * count are compared exactly. Code 9 in bits 0..3 keeps every fused signature apart from every all-reduce signature.
 */
export function encodeFusedSignature(s: FusedCallSignature): [number, number] {
  const alg = FUSED_ALGORITHM_CODES[s.algorithm]
  if (alg === undefined) throw new LlcommError('INTERNAL', `no fused signature code for algorithm ${s.algorithm}`)
  const h = fnv1a32([
    s.callRows,
    s.hidden,
    s.epsBits,
    s.flags,
    s.outScaleBits,
    s.launchIndex,
    s.launchCount,
    s.blocksPerRank,
    s.clusterBlocks,
  ])
  const word0 = Number((BigInt(s.launchRows) * BigInt(s.hidden)) & 0xffffffffn)
  return [word0 >>> 0, (FUSED_SIGNATURE_CODE | (DTYPE_CODES[s.dtype] << 4) | (alg << 6) | (foldHash(h) << 9)) >>> 0]
}

/** A 32-bit hash folded to word 1's FUSED_SIGNATURE_HASH_BITS (the fused and the allReduceMany signatures). */
function foldHash(h: number): number {
  return (h ^ (h >>> FUSED_SIGNATURE_HASH_BITS)) & ((1 << FUSED_SIGNATURE_HASH_BITS) - 1)
}

// ---- allReduceMany (issue 21 item 2; per process: kernels/llcomm/fused_signature.cuh, one signature block) ----

/** Word 1's algorithm code of an allReduceMany launch (abi.cuh LLCOMM_SIG_ALG_ALLREDUCE_MANY): never another call's. */
export const MANY_SIGNATURE_CODE = 10

/** What an allReduceMany launch's signature covers: its pieces (planAllReduceMany) and its place in the call. */
export interface ManyCallSignature {
  dtype: Dtype
  /** The launch's pieces: buffer index within the call, first element and element count of each. */
  pieces: readonly { buffer: number; offset: number; count: number }[]
  launchIndex: number
  launchCount: number
  blocksPerRank: number
}

/** A number's low and high 32 bits (offsets and counts may pass 2^32 elements). */
const u32Pair = (x: number): [number, number] => [x >>> 0, Math.floor(x / 2 ** 32) >>> 0]

/**
 * An allReduceMany launch's two words: word 0 = the launch's total elements (low 32 bits); word 1 =
 * MANY_SIGNATURE_CODE | dtype << 4 | hash << 9, the hash (FNV-1a folded to 23 bits) over each piece's buffer index,
 * offset and count, the piece count, launch index and count, and blocks per rank. Code 10 keeps it apart from every
 * all-reduce and fused RMSNorm signature (same epoch word and slots: a peer making another kind of call at that
 * epoch is a MISMATCH); a difference in one buffer's count changes the hash (and usually word 0).
 */
export function encodeManySignature(s: ManyCallSignature): [number, number] {
  const words: number[] = []
  let total = 0
  for (const p of s.pieces) {
    words.push(p.buffer, ...u32Pair(p.offset), ...u32Pair(p.count))
    total += p.count
  }
  words.push(s.pieces.length, s.launchIndex, s.launchCount, s.blocksPerRank)
  const word1 = MANY_SIGNATURE_CODE | (DTYPE_CODES[s.dtype] << 4) | (foldHash(fnv1a32(words)) << 9)
  return [u32Pair(total)[0], word1 >>> 0]
}

/**
 * The group signature of a per-process host-view allReduceMany (both backends: the CPU per-process communicator's
 * first epoch of the call, the CUDA one's signature-only launch where the buffers run one allReduce each): the
 * many-signature of every buffer as one piece (buffer index, offset 0, its count), launch index 0 and launch count 0
 * (no real allReduceMany launch has a launch count of 0, so the group never matches one). It makes a rank whose
 * call has another number of buffers, or another count in one, fail with MISMATCH before any buffer's call: with
 * only each buffer's own signature, a rank with fewer buffers would finish early and its next call would meet a
 * peer's extra buffer.
 */
export function encodeManyGroupSignature(dtype: Dtype, counts: readonly number[]): [number, number] {
  return encodeManySignature({
    dtype,
    pieces: counts.map((count, buffer) => ({ buffer, offset: 0, count })),
    launchIndex: 0,
    launchCount: 0,
    blocksPerRank: 0,
  })
}

// ---- a call refused on its rank (per process) ----

/** Word 1's code of a call refused on its rank (abi.cuh LLCOMM_SIG_ALG_REFUSED): never any call's. */
export const REFUSED_SIGNATURE_CODE = 11

/**
 * The signature a per-process rank publishes for a call it refused (a typed error thrown on that rank before
 * anything ran: an unknown dtype, a bad pointer, a count out of range): one signature epoch with these words and no
 * data, so that its peers, who made the call, fail with MISMATCH at the same epoch instead of meeting the refused
 * rank's next call. Every refusal has the same words, so ranks that all refuse the call match and stay usable.
 */
export function encodeRefusedSignature(): [number, number] {
  return [0, REFUSED_SIGNATURE_CODE]
}

function keyOf<K extends string>(table: Readonly<Record<K, number>>, code: number): K | undefined {
  return (Object.keys(table) as K[]).find((k) => table[k] === code)
}

/** The readable form of a signature's two words (unknown codes kept as numbers). */
export interface DecodedSignature {
  count: number
  algorithm: string
  dtype: string
  op: string
  protocol: string
  chunkIndex: number
  chunkCount: number
  /**
   * A fused RMSNorm or allReduceMany launch's hash of the rest of its call (encodeFusedSignature,
   * encodeManySignature); absent for an all-reduce.
   */
  fusedHash?: number
  /** A call refused on its rank (encodeRefusedSignature). */
  refused?: boolean
}

export function decodeSignature(word0: number, word1: number): DecodedSignature {
  const w = word1 >>> 0
  const alg = w & 0xf
  const dt = (w >>> 4) & 3
  const op = (w >>> 6) & 3
  const proto = (w >>> 8) & 3
  if (alg === REFUSED_SIGNATURE_CODE)
    return {
      count: 0,
      algorithm: 'refused',
      dtype: '-',
      op: '-',
      protocol: 'none',
      chunkIndex: 0,
      chunkCount: 1,
      refused: true,
    }
  if (alg === FUSED_SIGNATURE_CODE || alg === MANY_SIGNATURE_CODE) {
    const f = (w >>> 6) & 7
    return {
      count: word0 >>> 0,
      algorithm:
        alg === MANY_SIGNATURE_CODE ? 'allreduce-many' : `fused-rmsnorm ${keyOf(FUSED_ALGORITHM_CODES, f) ?? `#${f}`}`,
      dtype: keyOf(DTYPE_CODES, dt) ?? `dtype#${dt}`,
      op: 'sum',
      protocol: 'none',
      chunkIndex: 0,
      chunkCount: 1,
      fusedHash: w >>> 9,
    }
  }
  return {
    count: word0 >>> 0,
    algorithm: keyOf(ALGORITHM_CODES, alg) ?? `algorithm#${alg}`,
    dtype: keyOf(DTYPE_CODES, dt) ?? `dtype#${dt}`,
    op: keyOf(OP_CODES, op) ?? `op#${op}`,
    protocol: keyOf(PROTOCOL_CODES, proto) ?? `protocol#${proto}`,
    chunkIndex: (w >>> 10) & (SIGNATURE_CHUNK_MODULUS - 1),
    chunkCount: (w >>> 21) & (SIGNATURE_CHUNK_MODULUS - 1),
  }
}

export function describeSignature(s: DecodedSignature): string {
  if (s.refused) return 'a call refused on its rank (a typed error there, before anything ran)'
  if (s.fusedHash !== undefined)
    return `${s.algorithm} ${s.dtype} × ${s.count} (call 0x${s.fusedHash.toString(16).padStart(6, '0')})`
  const proto = s.protocol === 'none' ? '' : ` ${s.protocol}`
  const chunk = s.chunkCount === 0 ? 'empty call' : `chunk ${s.chunkIndex + 1}/${s.chunkCount}`
  return `${s.algorithm}${proto} ${s.dtype} ${s.op} × ${s.count} (${chunk})`
}
