/**
 * The last few eager `deviceAllReduce` calls, packed (the eager path must cost about what a C++ launch loop costs:
 * docs/launch-overhead.md). A call whose pointers, count, dtype, op, algorithm, protocol, pdl, fallback,
 * deterministic and streams all equal an entry's reuses its packed launches: no validation, resolution or packing
 * again (those depend only on these values and on the communicator's fixed configuration), and no allocation.
 * Entries hold copies of the caller's arrays, so a caller may reuse or change its own.
 */
import type { AlgorithmChoice, Dtype, LlProtocol, ReduceOp } from '../../api/types.js'
import type { CuStream, DevicePtr } from '../../ffi/types.js'
import type {
  DeviceAllReduceArgs,
  DeviceAllReduceInfo,
  DeviceFallback,
  PreparedDeviceAllReduce,
} from './device-call.js'

/** How many distinct eager deviceAllReduce calls stay packed (e.g. one per layer's buffer in a model step). */
export const EAGER_CALLS_KEPT = 8

/** A packed eager call and the argument values it was packed for. */
export interface EagerCall {
  inputs: DevicePtr[]
  outputs: DevicePtr[]
  count: number
  dtype: Dtype
  op: ReduceOp
  algorithm: AlgorithmChoice
  protocol: LlProtocol | undefined
  pdl: boolean
  fallback: DeviceFallback
  deterministic: boolean | undefined
  stream: CuStream | undefined
  argStreams: CuStream[] | undefined
  /** The streams the call runs on (a private copy, passed to issue() every time). */
  streams: CuStream[]
  prepared: PreparedDeviceAllReduce
  info: DeviceAllReduceInfo
}

export class EagerCallCache {
  private readonly calls: EagerCall[] = []
  private next = 0

  /** The packed call `args` asks for exactly, or undefined (a linear scan of at most EAGER_CALLS_KEPT entries). */
  find(args: DeviceAllReduceArgs): EagerCall | undefined {
    const calls = this.calls
    for (let i = 0; i < calls.length; i++) if (sameEagerCall(calls[i], args)) return calls[i]
    return undefined
  }

  /** Keeps a packed call for `args` (replacing the oldest once EAGER_CALLS_KEPT are kept). */
  remember(
    args: DeviceAllReduceArgs,
    streams: CuStream[],
    prepared: PreparedDeviceAllReduce,
    info: DeviceAllReduceInfo,
  ): EagerCall {
    const entry: EagerCall = {
      inputs: [...args.inputs],
      outputs: [...args.outputs],
      count: args.count,
      dtype: args.dtype,
      op: args.op ?? 'sum',
      algorithm: args.algorithm ?? 'auto',
      protocol: args.protocol,
      pdl: args.pdl ?? false,
      fallback: args.fallback ?? true,
      deterministic: args.deterministic,
      stream: args.stream,
      argStreams: args.streams ? [...args.streams] : undefined,
      streams,
      prepared,
      info,
    }
    if (this.calls.length < EAGER_CALLS_KEPT) this.calls.push(entry)
    else this.calls[this.next] = entry
    this.next = (this.next + 1) % EAGER_CALLS_KEPT
    return entry
  }

  /** Forgets every packed call (after recover(): the packed launches stay valid, but nothing relies on that). */
  clear(): void {
    this.calls.length = 0
    this.next = 0
  }

  get size(): number {
    return this.calls.length
  }
}

function samePointers(a: readonly number[], b: unknown): boolean {
  if (!Array.isArray(b) || b.length !== a.length) return false
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false
  return true
}

/** True when `args` asks for exactly the call `c` was packed for (no allocation). */
export function sameEagerCall(c: EagerCall, args: DeviceAllReduceArgs): boolean {
  return (
    args.count === c.count &&
    args.dtype === c.dtype &&
    (args.op ?? 'sum') === c.op &&
    (args.algorithm ?? 'auto') === c.algorithm &&
    args.protocol === c.protocol &&
    (args.pdl ?? false) === c.pdl &&
    (args.fallback ?? true) === c.fallback &&
    args.deterministic === c.deterministic &&
    args.stream === c.stream &&
    (args.streams === undefined
      ? c.argStreams === undefined
      : c.argStreams !== undefined && samePointers(c.argStreams, args.streams)) &&
    samePointers(c.inputs, args.inputs) &&
    samePointers(c.outputs, args.outputs)
  )
}
