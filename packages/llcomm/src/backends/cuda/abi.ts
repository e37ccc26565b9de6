/**
 * The byte layout of every collective kernel parameter struct of kernels/llcomm/abi.cuh (the tools' own kernels
 * have theirs in packages/tools/src/kernels/abi.ts), and packers that write exactly those
 * bytes (plain Buffer packing: only src/ffi imports koffi). Each kernel takes one struct by value, so the host
 * passes the packed buffer through CU_LAUNCH_PARAM_BUFFER_POINTER and a captured graph keeps it by value.
 *
 * The layouts are declared field by field in C order and laid out here with the C rules (each field aligned to its
 * element size, the struct to its largest alignment); test/kernels/abi.test.ts compiles abi.cuh on the host and
 * checks every offsetof/sizeof, and every shared constant, against these tables.
 */
import { LlcommError } from '../../errors.js'

// ---- constants shared with abi.cuh (checked by the ABI test) ----
export const LLCOMM_MAX_RANKS = 64
export const LLCOMM_MAX_CHANNELS = 16
export const LLCOMM_THREADS = 512
export const LLCOMM_MIN_BLOCKS_PER_SM = 1
export const LLCOMM_SCRATCH_EPOCHS_OFFSET = 0
export const LLCOMM_SCRATCH_BARRIER_OFFSET = 256
export const LLCOMM_SCRATCH_BARRIER_BYTES = LLCOMM_MAX_CHANNELS * 2 * LLCOMM_MAX_RANKS * 4
export const LLCOMM_MAX_RING_STEPS = 2 * (LLCOMM_MAX_RANKS - 1)
export const LLCOMM_SCRATCH_RING_OFFSET = LLCOMM_SCRATCH_BARRIER_OFFSET + LLCOMM_SCRATCH_BARRIER_BYTES
export const LLCOMM_SCRATCH_RING_STRIDE = 128
export const LLCOMM_SCRATCH_SIGNATURE_OFFSET =
  LLCOMM_SCRATCH_RING_OFFSET + LLCOMM_MAX_CHANNELS * LLCOMM_SCRATCH_RING_STRIDE * 4
/**
 * Call signatures (kernels/llcomm/signature.cuh): per channel, per slot, per sender one 16-byte packet. A call of
 * epoch e uses slot e & 1 (the default kernels) or e & 3 (kernels built with LLCOMM_SIG_DEFERRED, whose kernel e
 * checks epoch e - 1); the region has the 4 slots in every build, so the host allocates one size for any tree.
 */
export const LLCOMM_SIG_SLOTS = 4
export const LLCOMM_SCRATCH_SIGNATURE_BYTES = LLCOMM_MAX_CHANNELS * LLCOMM_SIG_SLOTS * LLCOMM_MAX_RANKS * 16
export const LLCOMM_SCRATCH_BYTES = LLCOMM_SCRATCH_SIGNATURE_OFFSET + LLCOMM_SCRATCH_SIGNATURE_BYTES
/** Fill word of an empty sentinel slot (f32: one NaN; f16/bf16: two 0xFFFF NaNs). */
export const LLCOMM_SENTINEL_WORD = 0xffffffff
/** sizeof(LlcommErrorWord): eight u32 {code, rank, peer, epoch, what, slot, channel, reserved}. */
export const LLCOMM_ERROR_WORD_BYTES = 32
export const LLCOMM_ERR_TIMEOUT = 1
/** A peer's call signature differs: what/slot = the two ranks' signature words 1, channel/reserved = words 0. */
export const LLCOMM_ERR_MISMATCH = 2
export const LLCOMM_WAIT_SIGNATURE = 7
/** Call-signature codes compiled into the kernels (abi.cuh LLCOMM_SIG_*; src/protocol/call-signature.ts). */
export const LLCOMM_SIG_ALG_ONESHOT_LL = 1
export const LLCOMM_SIG_ALG_ONESHOT_SENTINEL = 2
export const LLCOMM_SIG_ALG_TWOSHOT_SENTINEL = 3
export const LLCOMM_SIG_ALG_TWOSHOT_ATOMIC = 4
export const LLCOMM_SIG_ALG_ONESHOT_BARRIER = 5
export const LLCOMM_SIG_ALG_RING = 6
export const LLCOMM_SIG_PROTOCOL_LL8 = 1
export const LLCOMM_SIG_PROTOCOL_LL16 = 2
export const LLCOMM_SIG_KIND_MASK = 0x3ff
/** abi.cuh LLCOMM_RING_F32_PARTIALS: f16/bf16 ring with f32 partial sums (half the capacity); 1 = on (default). */
export const LLCOMM_RING_F32_PARTIALS: number = 1
/** abi.cuh LLCOMM_ATOMIC_F32_LINES: f16/bf16 twoshot-atomic on f32 lines (two lines per 31 words); 1 = on (default). */
export const LLCOMM_ATOMIC_F32_LINES: number = 1
/** LlcommErrorWord.what: what the waiter that timed out was waiting for. */
export const LLCOMM_WAIT_KINDS: Readonly<Record<number, string>> = {
  1: 'LL packet',
  2: 'sentinel slot',
  3: 'LL128 line counter',
  4: 'barrier',
  5: 'ring step flag',
  6: 'ping-pong flag',
  7: 'call signature',
}

/** Bytes of one LL128 atomic line (word 0 counter, words 1..31 data). */
export const LLCOMM_LINE_BYTES = 128
export const LLCOMM_LINE_DATA_WORDS = 31

// ---- layout machinery ----
export type FieldKind = 'u8' | 'u32' | 'u64'
const KIND_BYTES: Readonly<Record<FieldKind, number>> = { u8: 1, u32: 4, u64: 8 }

/** One field in C declaration order; `count` > 1 for arrays. Nested structs are flattened as `outer.inner`. */
export interface FieldSpec {
  name: string
  kind: FieldKind
  count?: number
}
export interface FieldLayout {
  name: string
  kind: FieldKind
  count: number
  offset: number
  bytes: number
}
export interface StructLayout {
  /** The C struct name in abi.cuh. */
  cName: string
  fields: readonly FieldLayout[]
  byName: Readonly<Record<string, FieldLayout>>
  bytes: number
}

export function layOut(cName: string, specs: readonly FieldSpec[]): StructLayout {
  let offset = 0
  let maxAlign = 1
  const fields: FieldLayout[] = []
  for (const s of specs) {
    const size = KIND_BYTES[s.kind]
    const count = s.count ?? 1
    offset = Math.ceil(offset / size) * size
    fields.push({ name: s.name, kind: s.kind, count, offset, bytes: size * count })
    offset += size * count
    maxAlign = Math.max(maxAlign, size)
  }
  const bytes = Math.ceil(offset / maxAlign) * maxAlign
  return Object.freeze({
    cName,
    fields: Object.freeze(fields),
    byName: Object.freeze(Object.fromEntries(fields.map((f) => [f.name, f]))),
    bytes,
  })
}

const region = (name: string): FieldSpec[] => [
  { name: `${name}.offset`, kind: 'u64' },
  { name: `${name}.channelHalfBytes`, kind: 'u64' },
]

export const ALL_REDUCE_PARAMS_LAYOUT = layOut('LlcommAllReduceParams', [
  { name: 'input', kind: 'u64', count: LLCOMM_MAX_RANKS },
  { name: 'output', kind: 'u64', count: LLCOMM_MAX_RANKS },
  { name: 'recvBuf', kind: 'u64', count: LLCOMM_MAX_RANKS },
  { name: 'scratch', kind: 'u64', count: LLCOMM_MAX_RANKS },
  { name: 'errorWord', kind: 'u64' },
  { name: 'count', kind: 'u64' },
  { name: 'timeoutNs', kind: 'u64' },
  ...region('ll'),
  ...region('sentinel'),
  ...region('ll128'),
  ...region('plain'),
  { name: 'nranks', kind: 'u32' },
  { name: 'ranksInLaunch', kind: 'u32' },
  { name: 'blocksPerRank', kind: 'u32' },
  { name: 'signatureChunk', kind: 'u32' },
  { name: 'launchRanks', kind: 'u8', count: LLCOMM_MAX_RANKS },
])

export const SPIN_PARAMS_LAYOUT = layOut('LlcommSpinParams', [
  { name: 'delayNs', kind: 'u64' },
  { name: 'maxDelayNs', kind: 'u64' },
  { name: 'blocksPerRank', kind: 'u32' },
  { name: 'ranksInLaunch', kind: 'u32' },
  { name: 'launchRanks', kind: 'u8', count: LLCOMM_MAX_RANKS },
])

export const STRESS_PARAMS_LAYOUT = layOut('LlcommStressParams', [
  { name: 'packets', kind: 'u64' },
  { name: 'counters', kind: 'u64' },
  { name: 'timeoutNs', kind: 'u64' },
  { name: 'numPackets', kind: 'u32' },
  { name: 'iters', kind: 'u32' },
  { name: 'layout', kind: 'u32' },
  { name: 'writerRank', kind: 'u32' },
  { name: 'readerRank', kind: 'u32' },
  { name: 'blocksPerRank', kind: 'u32' },
  { name: 'ranksInLaunch', kind: 'u32' },
  { name: 'reserved', kind: 'u32' },
  { name: 'launchRanks', kind: 'u8', count: LLCOMM_MAX_RANKS },
])

export const ERROR_WORD_LAYOUT = layOut('LlcommErrorWord', [
  { name: 'code', kind: 'u32' },
  { name: 'rank', kind: 'u32' },
  { name: 'peer', kind: 'u32' },
  { name: 'epoch', kind: 'u32' },
  { name: 'what', kind: 'u32' },
  { name: 'slot', kind: 'u32' },
  { name: 'channel', kind: 'u32' },
  { name: 'reserved', kind: 'u32' },
])

/** Every struct of abi.cuh, for the ABI test. */
export const ABI_STRUCTS: readonly StructLayout[] = [
  ALL_REDUCE_PARAMS_LAYOUT,
  SPIN_PARAMS_LAYOUT,
  STRESS_PARAMS_LAYOUT,
  ERROR_WORD_LAYOUT,
]

/** Every integer constant of abi.cuh that the host relies on, for the ABI test. */
export const ABI_CONSTANTS: Readonly<Record<string, number>> = {
  LLCOMM_MAX_RANKS,
  LLCOMM_MAX_CHANNELS,
  LLCOMM_THREADS,
  LLCOMM_MIN_BLOCKS_PER_SM,
  LLCOMM_SCRATCH_EPOCHS_OFFSET,
  LLCOMM_SCRATCH_BARRIER_OFFSET,
  LLCOMM_SCRATCH_BARRIER_BYTES,
  LLCOMM_MAX_RING_STEPS,
  LLCOMM_SCRATCH_RING_OFFSET,
  LLCOMM_SCRATCH_RING_STRIDE,
  LLCOMM_SCRATCH_BYTES,
  LLCOMM_SENTINEL_WORD,
  LLCOMM_ERR_TIMEOUT,
  LLCOMM_SCRATCH_SIGNATURE_OFFSET,
  LLCOMM_SCRATCH_SIGNATURE_BYTES,
  LLCOMM_SIG_SLOTS,
  LLCOMM_ERR_MISMATCH,
  LLCOMM_WAIT_SIGNATURE,
  LLCOMM_SIG_ALG_ONESHOT_LL,
  LLCOMM_SIG_ALG_ONESHOT_SENTINEL,
  LLCOMM_SIG_ALG_TWOSHOT_SENTINEL,
  LLCOMM_SIG_ALG_TWOSHOT_ATOMIC,
  LLCOMM_SIG_ALG_ONESHOT_BARRIER,
  LLCOMM_SIG_ALG_RING,
  LLCOMM_SIG_PROTOCOL_LL8,
  LLCOMM_SIG_PROTOCOL_LL16,
  LLCOMM_SIG_KIND_MASK,
  LLCOMM_RING_F32_PARTIALS,
  LLCOMM_ATOMIC_F32_LINES,
}

export type Scalar = number | bigint
export type FieldValue = Scalar | readonly Scalar[]

const KIND_MAX: Readonly<Record<FieldKind, bigint>> = { u8: 0xffn, u32: 0xffffffffn, u64: 0xffffffffffffffffn }

function toBig(structName: string, field: string, v: Scalar): bigint {
  if (typeof v === 'number' && !Number.isSafeInteger(v)) {
    throw new LlcommError('INVALID_ARGUMENT', `${structName}.${field}: ${v} is not an integer`, { field, value: v })
  }
  return BigInt(v)
}

/** Writes `values` into a zeroed buffer by layout. Fields left out stay zero; arrays may be shorter than declared. */
export function packStruct(layout: StructLayout, values: Readonly<Record<string, FieldValue | undefined>>): Buffer {
  const buf = Buffer.alloc(layout.bytes)
  for (const [name, value] of Object.entries(values)) {
    if (value === undefined) continue
    const f = layout.byName[name]
    if (!f) throw new LlcommError('INVALID_ARGUMENT', `${layout.cName} has no field ${name}`, { field: name })
    const list: readonly Scalar[] = Array.isArray(value) ? (value as readonly Scalar[]) : [value as Scalar]
    if (list.length > f.count) {
      throw new LlcommError('INVALID_ARGUMENT', `${layout.cName}.${name} holds ${f.count} values, got ${list.length}`, {
        field: name,
      })
    }
    const size = KIND_BYTES[f.kind]
    list.forEach((x, i) => {
      const b = toBig(layout.cName, name, x)
      if (b < 0n || b > KIND_MAX[f.kind]) {
        throw new LlcommError('INVALID_ARGUMENT', `${layout.cName}.${name}[${i}] = ${b} does not fit ${f.kind}`, {
          field: name,
          value: String(b),
        })
      }
      const at = f.offset + i * size
      if (f.kind === 'u64') buf.writeBigUInt64LE(b, at)
      else if (f.kind === 'u32') buf.writeUInt32LE(Number(b), at)
      else buf.writeUInt8(Number(b), at)
    })
  }
  return buf
}

// ---- all-reduce ----
/** Placement of one region in every rank's receive buffer: channel c, half h at offset + (2c + h) * channelHalfBytes. */
export interface BufferRegion {
  offset: number
  channelHalfBytes: number
}

/** The host's values for LlcommAllReduceParams. Device pointers as bigint (a branded bigint fits). */
export interface AllReduceParamsHost {
  /** By global rank; only this launch's ranks need real pointers (16-byte aligned). */
  input: readonly bigint[]
  output: readonly bigint[]
  /** Every rank's receive buffer and scratch, by global rank (peer-mapped). */
  recvBuf: readonly bigint[]
  scratch: readonly bigint[]
  errorWord: bigint
  /** Elements per rank in this launch (<= launchShape().maxCountPerCall). */
  count: bigint | number
  timeoutNs: bigint | number
  ll: BufferRegion
  sentinel: BufferRegion
  ll128: BufferRegion
  plain: BufferRegion
  nranks: number
  ranksInLaunch: number
  blocksPerRank: number
  /** Call-signature word 1, bits 10..31 (signatureChunkBits: chunk index and count); default 0. */
  signatureChunk?: number
  /** Global rank of each rank slot of this launch (length ranksInLaunch). */
  launchRanks: readonly number[]
}

export function packAllReduceParams(p: AllReduceParamsHost): Buffer {
  if (!Number.isInteger(p.nranks) || p.nranks < 1 || p.nranks > LLCOMM_MAX_RANKS) {
    throw new LlcommError('INVALID_ARGUMENT', `nranks ${p.nranks} outside 1..${LLCOMM_MAX_RANKS}`)
  }
  if (p.recvBuf.length !== p.nranks || p.scratch.length !== p.nranks) {
    throw new LlcommError('INVALID_ARGUMENT', `recvBuf and scratch need one pointer per rank (${p.nranks})`)
  }
  if (p.launchRanks.length !== p.ranksInLaunch || p.ranksInLaunch < 1) {
    throw new LlcommError(
      'INVALID_ARGUMENT',
      `launchRanks has ${p.launchRanks.length} entries, ranksInLaunch is ${p.ranksInLaunch}`,
    )
  }
  // blocksPerRank 0 only for an empty call: the launch of the signature block alone (AllReduceLauncher.prepareEmpty)
  const empty = Number(p.count) === 0 && p.blocksPerRank === 0
  if (!empty && (p.blocksPerRank < 1 || p.blocksPerRank > LLCOMM_MAX_CHANNELS)) {
    throw new LlcommError('INVALID_ARGUMENT', `blocksPerRank ${p.blocksPerRank} outside 1..${LLCOMM_MAX_CHANNELS}`)
  }
  for (const r of p.launchRanks) {
    if (!Number.isInteger(r) || r < 0 || r >= p.nranks)
      throw new LlcommError('INVALID_ARGUMENT', `launch rank ${r} outside 0..${p.nranks - 1}`)
    for (const [name, list] of [
      ['input', p.input],
      ['output', p.output],
    ] as const) {
      const ptr = list[r]
      if (ptr === undefined) throw new LlcommError('INVALID_ARGUMENT', `${name} pointer of launch rank ${r} missing`)
      if (ptr % 16n !== 0n)
        throw new LlcommError('MISALIGNED_BUFFER', `${name} pointer of rank ${r} is not 16-byte aligned`, { rank: r })
    }
  }
  const values: Record<string, FieldValue> = {
    input: p.input,
    output: p.output,
    recvBuf: p.recvBuf,
    scratch: p.scratch,
    errorWord: p.errorWord,
    count: p.count,
    timeoutNs: p.timeoutNs,
    nranks: p.nranks,
    ranksInLaunch: p.ranksInLaunch,
    blocksPerRank: p.blocksPerRank,
    signatureChunk: p.signatureChunk ?? 0,
    launchRanks: p.launchRanks,
  }
  for (const name of ['ll', 'sentinel', 'll128', 'plain'] as const) {
    values[`${name}.offset`] = p[name].offset
    values[`${name}.channelHalfBytes`] = p[name].channelHalfBytes
  }
  return packStruct(ALL_REDUCE_PARAMS_LAYOUT, values)
}

/** f32 bits of a number, for kernels' float fields (epsBits, scaleBits, ropeThetaBits). */
export function f32Bits(x: number): number {
  const b = Buffer.alloc(4)
  b.writeFloatLE(x)
  return b.readUInt32LE()
}

// ---- support kernels (skew spin, LL16 stress) ----
export interface SpinParamsHost {
  /** Device array of u64 delays in ns, indexed by global rank. */
  delayNs: bigint | number
  maxDelayNs: bigint | number
  blocksPerRank: number
  ranksInLaunch: number
  launchRanks: readonly number[]
}
export function packSpinParams(p: SpinParamsHost): Buffer {
  return packStruct(SPIN_PARAMS_LAYOUT, { ...p })
}

export interface StressParamsHost {
  packets: bigint | number
  counters: bigint | number
  timeoutNs: bigint | number
  numPackets: number
  iters: number
  /** 0 = llcomm's LL16 (v2.u64 {data, flag} x2); 1 = 8 B data then 8 B flag in one v4.u32 store. */
  layout: 0 | 1
  writerRank: number
  readerRank: number
  blocksPerRank: number
  ranksInLaunch: number
  launchRanks: readonly number[]
}
export function packStressParams(p: StressParamsHost): Buffer {
  return packStruct(STRESS_PARAMS_LAYOUT, { ...p, reserved: 0 })
}

// ---- error word ----
export interface ErrorWordFields {
  code: number
  rank: number
  peer: number
  epoch: number
  what: number
  slot: number
  channel: number
}
/** Decodes the 32 bytes of LlcommErrorWord copied from the device. */
export function decodeErrorWordBytes(bytes: Uint8Array): ErrorWordFields {
  if (bytes.byteLength < LLCOMM_ERROR_WORD_BYTES) {
    throw new LlcommError(
      'INVALID_ARGUMENT',
      `error word needs ${LLCOMM_ERROR_WORD_BYTES} bytes, got ${bytes.byteLength}`,
    )
  }
  const v = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  const at = (name: string) => v.getUint32(ERROR_WORD_LAYOUT.byName[name].offset, true)
  return {
    code: at('code'),
    rank: at('rank'),
    peer: at('peer'),
    epoch: at('epoch'),
    what: at('what'),
    slot: at('slot'),
    channel: at('channel'),
  }
}
