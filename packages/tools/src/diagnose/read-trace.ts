/**
 * Reads a trace file into a NormalizedTrace: the Chrome-trace JSON the PyTorch profiler writes (optionally
 * gzipped), a plain Chrome trace (array of events), or llcomm's own format (see trace-types.ts).
 *
 * PyTorch profiler traces tie a kernel to its collective in four ways, tried in this order: the kernel's own
 * args ('Collective name', 'In msg nelems', 'dtype': recent PyTorch copies them onto NCCL kernels); its
 * correlation id → the runtime launch (cudaLaunchKernel…) → the record_param_comms op on the same thread whose
 * time span contains the launch; its 'External id' = the op's; and, last, the kernel's name (nccl…AllReduce…),
 * which gives the collective but not its size. Kernels without a correlation arg get it from the ac2g flow
 * event that ends on them.
 */
import { readFileSync } from 'node:fs'
import { gunzipSync } from 'node:zlib'
import { LlcommError } from 'llcomm/internal'
import type { CollectiveInfo, CpuCollectiveOp, GpuActivity, NormalizedTrace } from './trace-types.js'

type Json = Record<string, unknown>

/** Bytes per element of the dtype names PyTorch writes in record_param_comms ('Float', 'BFloat16', …). */
const TORCH_DTYPE_BYTES: Readonly<Record<string, number>> = {
  float: 4,
  float32: 4,
  double: 8,
  float64: 8,
  half: 2,
  float16: 2,
  bfloat16: 2,
  int: 4,
  int32: 4,
  long: 8,
  int64: 8,
  short: 2,
  int16: 2,
  char: 1,
  int8: 1,
  byte: 1,
  uint8: 1,
  bool: 1,
  float8_e4m3fn: 1,
  float8_e5m2: 1,
  float8_e4m3fnuz: 1,
  float8_e5m2fnuz: 1,
}

export function dtypeBytes(dtype: string | undefined): number | undefined {
  if (!dtype) return undefined
  return TORCH_DTYPE_BYTES[dtype.toLowerCase().replace(/^torch\./, '')]
}

/** 'allreduce', 'all_reduce', 'AllReduce', 'allgather_into_tensor_coalesced' → 'allreduce', 'allgather'. */
export function normalizeCollectiveName(name: string): string {
  const n = name.toLowerCase().replace(/[^a-z]/g, '')
  for (const key of [
    'allreduce',
    'allgather',
    'reducescatter',
    'alltoall',
    'broadcast',
    'sendrecv',
    'reduce',
    'gather',
    'scatter',
    'send',
    'recv',
    'barrier',
  ]) {
    if (n.includes(key)) return key
  }
  return n || 'unknown'
}

const COMM_KERNEL_NAME =
  /nccl|all_?reduce|all_?gather|reduce_?scatter|all_?to_?all|cross_device_reduce|llcomm_|multimem|onerank/i
const KERNEL_COLLECTIVE =
  /(AllReduce|AllGather|ReduceScatter|Broadcast|SendRecv|AllToAll|oneRankReduce|cross_device_reduce|all_reduce|allreduce|all_gather|reduce_scatter)/i

/** The collective a kernel's name reveals (nccl…AllReduce…, llcomm_oneshot…, oneRankReduce), or undefined. */
export function collectiveFromKernelName(name: string): CollectiveInfo | undefined {
  if (!COMM_KERNEL_NAME.test(name)) return undefined
  const m = KERNEL_COLLECTIVE.exec(name)
  const raw = m ? m[1] : name.startsWith('llcomm_') ? 'allreduce' : 'unknown'
  const normalized = /onerankreduce|cross_device_reduce/i.test(raw) ? 'allreduce' : normalizeCollectiveName(raw)
  // NCCL names the element type: ncclDevKernel_AllReduce_Sum_bf16_RING_LL (kept in PyTorch's spelling)
  const dtype = NCCL_NAME_DTYPES[/_(bf16|f16|f32|f64|i8|u8|i32|u32|i64|u64)_/.exec(name)?.[1] ?? '']
  return { name: normalized, bytes: null, via: 'kernel-name', ...(dtype ? { dtype } : {}) }
}

const NCCL_NAME_DTYPES: Record<string, string> = {
  bf16: 'BFloat16',
  f16: 'Half',
  f32: 'Float',
  f64: 'Double',
  i8: 'Char',
  u8: 'Byte',
  i32: 'Int',
  i64: 'Long',
}

function num(v: unknown): number | undefined {
  if (typeof v === 'number' && Number.isFinite(v)) return v
  if (typeof v === 'string' && v.trim() !== '' && Number.isFinite(Number(v))) return Number(v)
  return undefined
}

/** The collective a record_param_comms op (or a kernel carrying its args) describes. */
export function collectiveFromArgs(args: Json | undefined, via: CollectiveInfo['via']): CollectiveInfo | undefined {
  if (!args) return undefined
  const name = args['Collective name']
  if (typeof name !== 'string') return undefined
  const elements = num(args['In msg nelems']) ?? num(args['Out msg nelems'])
  const dtype = typeof args.dtype === 'string' ? args.dtype : undefined
  const size = dtypeBytes(dtype)
  return {
    name: normalizeCollectiveName(name),
    bytes: elements !== undefined && size !== undefined ? elements * size : null,
    elements,
    dtype,
    groupSize: num(args['Group size']),
    via,
  }
}

export function parseTraceText(text: string, where = 'trace'): NormalizedTrace {
  let doc: unknown
  try {
    doc = JSON.parse(text)
  } catch (e) {
    throw new LlcommError('TRACE_FORMAT', `${where} is not JSON: ${(e as Error).message}`, { path: where })
  }
  if (typeof doc === 'object' && doc !== null && (doc as Json).llcommTrace !== undefined)
    return fromOwnFormat(doc as Json, where)
  const events = Array.isArray(doc) ? doc : (doc as Json | null)?.traceEvents
  if (!Array.isArray(events))
    throw new LlcommError('TRACE_FORMAT', `${where} has neither traceEvents nor llcommTrace`, { path: where })
  return fromChromeEvents(events as Json[], where)
}

export function readTraceFile(path: string): NormalizedTrace {
  let buf: Buffer
  try {
    buf = readFileSync(path)
  } catch (e) {
    throw new LlcommError('TRACE_FORMAT', `cannot read ${path}: ${(e as Error).message}`, { path })
  }
  const gz = buf.length >= 2 && buf[0] === 0x1f && buf[1] === 0x8b
  let text: Buffer = buf
  if (gz) {
    try {
      text = gunzipSync(buf)
    } catch (e) {
      throw new LlcommError(
        'TRACE_FORMAT',
        `cannot decompress ${path}: ${(e as Error).message} (a truncated or damaged .gz file?)`,
        { path },
      )
    }
  }
  return parseTraceText(text.toString('utf8'), path)
}

function fromOwnFormat(doc: Json, where: string): NormalizedTrace {
  if (doc.llcommTrace !== 1 || !Array.isArray(doc.events)) {
    throw new LlcommError('TRACE_FORMAT', `${where}: llcommTrace must be 1 with an events array`, { path: where })
  }
  const activities: GpuActivity[] = (doc.events as Json[]).map((e, i) => {
    const startUs = num(e.startUs)
    const durUs = num(e.durUs)
    if (typeof e.name !== 'string' || startUs === undefined || durUs === undefined || durUs < 0) {
      throw new LlcommError('TRACE_FORMAT', `${where}: event ${i} needs name, startUs and durUs ≥ 0`, {
        path: where,
        index: i,
      })
    }
    const c = e.collective as Json | undefined
    const collective: CollectiveInfo | undefined = c
      ? {
          name: normalizeCollectiveName(String(c.name ?? 'allreduce')),
          bytes: num(c.bytes) ?? null,
          groupSize: num(c.ranks),
          via: 'own-format',
        }
      : undefined
    return { name: e.name, stream: String(e.stream ?? '0'), startUs, durUs, kind: 'kernel', collective }
  })
  return { format: 'llcomm', activities, cpuCollectives: [], annotations: [], notes: [] }
}

interface Launch {
  ts: number
  thread: string
}

function fromChromeEvents(events: Json[], where: string): NormalizedTrace {
  const notes: string[] = []
  const launches = new Map<number, Launch>()
  const flowEnds = new Map<string, number>()
  const cpuOps: CpuCollectiveOp[] = []
  const gpuEvents: Json[] = []
  const annotations: NormalizedTrace['annotations'] = []
  let sawTorch = false
  for (const e of events) {
    if (typeof e !== 'object' || e === null) continue
    const cat = typeof e.cat === 'string' ? e.cat.toLowerCase() : ''
    const args = (e.args ?? undefined) as Json | undefined
    if (e.ph === 'f' && cat === 'ac2g' && num(e.id) !== undefined) {
      flowEnds.set(`${e.pid}|${e.tid}|${e.ts}`, num(e.id) as number)
      continue
    }
    if (e.ph !== 'X') continue
    if (cat === 'kernel' || cat === 'gpu_memcpy' || cat === 'gpu_memset') {
      gpuEvents.push(e)
    } else if (cat === 'cuda_runtime' || cat === 'cuda_driver') {
      sawTorch = true
      const corr = num(args?.correlation)
      const ts = num(e.ts)
      if (corr !== undefined && ts !== undefined) launches.set(corr, { ts, thread: `${e.pid}|${e.tid}` })
    } else if (cat === 'user_annotation' || cat === 'gpu_user_annotation') {
      const ts = num(e.ts)
      const dur = num(e.dur)
      if (ts !== undefined && dur !== undefined)
        annotations.push({ name: String(e.name), startUs: ts, durUs: dur, onGpu: cat === 'gpu_user_annotation' })
    } else if (e.name === 'record_param_comms') {
      sawTorch = true
      const info = collectiveFromArgs(args, 'cpu-only')
      const ts = num(e.ts)
      if (info && ts !== undefined)
        cpuOps.push({
          startUs: ts,
          durUs: num(e.dur) ?? 0,
          thread: `${e.pid}|${e.tid}`,
          externalId: num(args?.['External id']),
          info,
          kernels: 0,
        })
    }
  }
  const opsByThread = new Map<string, CpuCollectiveOp[]>()
  for (const op of cpuOps) {
    const list = opsByThread.get(op.thread)
    if (list) list.push(op)
    else opsByThread.set(op.thread, [op])
  }
  for (const list of opsByThread.values()) list.sort((a, b) => a.startUs - b.startUs)
  const opsByExternalId = new Map<number, CpuCollectiveOp>()
  for (const op of cpuOps) if (op.externalId !== undefined) opsByExternalId.set(op.externalId, op)

  /**
   * The innermost record_param_comms op on the launch's thread whose span contains the launch: binary search for
   * the last op starting at or before the launch, then look back over a few ops (comms ops nest shallowly).
   */
  const enclosingOp = (launch: Launch): CpuCollectiveOp | undefined => {
    const list = opsByThread.get(launch.thread)
    if (!list) return undefined
    let lo = 0
    let hi = list.length
    while (lo < hi) {
      const mid = (lo + hi) >> 1
      if (list[mid].startUs <= launch.ts) lo = mid + 1
      else hi = mid
    }
    let best: CpuCollectiveOp | undefined
    for (let k = lo - 1; k >= 0 && k >= lo - 8; k--) {
      const op = list[k]
      if (launch.ts <= op.startUs + op.durUs && (!best || op.durUs < best.durUs)) best = op
    }
    return best
  }

  let skipped = 0
  const activities: GpuActivity[] = []
  for (const e of gpuEvents) {
    const ts = num(e.ts)
    const dur = num(e.dur)
    if (ts === undefined || dur === undefined || dur < 0) {
      skipped++
      continue
    }
    const args = (e.args ?? {}) as Json
    const cat = String(e.cat).toLowerCase()
    const kind: GpuActivity['kind'] = cat === 'gpu_memcpy' ? 'memcpy' : cat === 'gpu_memset' ? 'memset' : 'kernel'
    const correlation = num(args.correlation) ?? flowEnds.get(`${e.pid}|${e.tid}|${e.ts}`)
    const device = num(args.device) ?? e.pid
    const stream = num(args.stream) ?? e.tid
    const name = String(e.name ?? '')
    let op: CpuCollectiveOp | undefined
    let collective = kind === 'kernel' ? collectiveFromArgs(args, 'kernel-args') : undefined
    const launch = correlation !== undefined ? launches.get(correlation) : undefined
    if (launch) op = enclosingOp(launch)
    const external = num(args['External id'])
    if (!op && external !== undefined) op = opsByExternalId.get(external)
    const named = kind === 'kernel' ? collectiveFromKernelName(name) : undefined
    // A kernel inside a record_param_comms op is that collective's only if its name says communication or the
    // kernel carries the op's args: PyTorch may also launch copies or casts inside the op.
    if (op && (collective || named)) {
      op.kernels++
      if (!collective) collective = { ...op.info, via: launch ? 'correlation' : 'external-id' }
    }
    if (!collective && named) collective = named
    activities.push({ name, stream: `${device}:${stream}`, startUs: ts, durUs: dur, kind, correlation, collective })
  }
  if (skipped) notes.push(`${skipped} GPU events without ts/dur skipped`)
  const unmatched = cpuOps.filter((o) => o.kernels === 0).length
  if (unmatched) notes.push(`${unmatched} record_param_comms ops launched no GPU kernel that could be tied to them`)
  if (activities.length === 0) notes.push(`${where}: no GPU activity (kernel, gpu_memcpy, gpu_memset events) found`)
  return { format: sawTorch ? 'pytorch' : 'chrome', activities, cpuCollectives: cpuOps, annotations, notes }
}
