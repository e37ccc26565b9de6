/**
 * Typed errors. One class, a stable `code` users match on (after undici's errors.js), and structured
 * details so that a timeout names the rank, the peer and the epoch instead of only saying "hang".
 */
export type LlcommErrorCode =
  | 'INVALID_ARGUMENT' // bad option value, wrong number of inputs
  | 'LENGTH_MISMATCH' // inputs of different lengths, or a typed array that does not match the dtype
  | 'UNSUPPORTED_DTYPE'
  | 'UNSUPPORTED_OP'
  | 'UNSUPPORTED_ALGORITHM' // unknown name, or not usable on this communicator
  | 'MISALIGNED_BUFFER'
  | 'TIMEOUT' // a peer never arrived: details carry rank, peer, epoch
  | 'CLOSED' // the communicator was closed
  | 'BUSY' // a call was issued while another is in flight on the same channel
  | 'WORKER_FAILED' // a CPU worker thread died
  | 'LIBRARY_NOT_FOUND' // libcuda / libnvrtc / libnccl could not be loaded
  | 'CUDA_ERROR' // a driver API call failed: details carry the call and the CUresult
  | 'NVRTC_ERROR' // run-time compilation failed: details carry the compile log
  | 'NCCL_ERROR'
  | 'NO_DEVICE'
  | 'TRACE_FORMAT' // diagnose could not read a trace
  | 'MISMATCH' // ranks made different calls (count, dtype, op, algorithm, protocol, chunk): details name both
  | 'OUT_OF_MEMORY' // an allocation (host SharedArrayBuffer, device memory) failed or would not fit
  | 'INTERNAL' // an unexpected error inside llcomm (a bug): details.cause names the original error
  | 'PEER_FAILED' // a peer process died or left: names the rank
  | 'SYSTEM_ERROR' // an operating-system call failed (shm_open, mmap, futex): details carry the call and errno

/**
 * The codes of a call refused by its own rank before anything of it ran: its arguments, or (OUT_OF_MEMORY) the
 * memory to stage them; not the group's state (TIMEOUT, MISMATCH, PEER_FAILED, CLOSED).
 */
const REFUSAL_CODES: ReadonlySet<LlcommErrorCode> = new Set<LlcommErrorCode>([
  'INVALID_ARGUMENT',
  'LENGTH_MISMATCH',
  'UNSUPPORTED_DTYPE',
  'UNSUPPORTED_OP',
  'UNSUPPORTED_ALGORITHM',
  'MISALIGNED_BUFFER',
  'OUT_OF_MEMORY',
  // per process: a call on another stream while this rank's previous call is in flight (nothing of it issued)
  'BUSY',
])

/**
 * Whether `e` is a call's refusal by its own rank: a typed error about the call's arguments (or the memory to stage
 * them), thrown before anything of the call ran (only the call paths ask). Per process such a call still takes its signature epoch (a "refused" signature), so that peers
 * who made the call fail with MISMATCH instead of meeting this rank's next call (docs/protocols.md).
 */
export function isCallRefusal(e: unknown): e is LlcommError {
  return e instanceof LlcommError && REFUSAL_CODES.has(e.code)
}

export interface TimeoutDetails {
  rank: number
  peer: number
  epoch: number
  /** What the waiting rank was doing when the deadline passed, e.g. 'recv slot 12' or 'barrier'. */
  waitingFor?: string
}

export class LlcommError extends Error {
  readonly code: LlcommErrorCode
  readonly details: Record<string, unknown>
  constructor(
    code: LlcommErrorCode,
    message: string,
    details: Record<string, unknown> = {},
    options?: { cause?: unknown },
  ) {
    super(message, options)
    this.name = 'LlcommError'
    this.code = code
    this.details = details
  }

  /** Plain-object form, for passing through postMessage (structured clone drops the subclass). */
  toJSON(): { code: LlcommErrorCode; message: string; details: Record<string, unknown> } {
    return { code: this.code, message: this.message, details: this.details }
  }

  static fromJSON(o: { code: LlcommErrorCode; message: string; details?: Record<string, unknown> }): LlcommError {
    return new LlcommError(o.code, o.message, o.details ?? {})
  }

  static timeout(d: TimeoutDetails): LlcommError {
    return new LlcommError(
      'TIMEOUT',
      `rank ${d.rank} timed out waiting for peer ${d.peer} at epoch ${d.epoch}${d.waitingFor ? ` (${d.waitingFor})` : ''}`,
      { ...d },
    )
  }
}

/** What a MISMATCH names: the two ranks, the epoch, and each one's call signature (src/protocol/call-signature.ts). */
export interface MismatchDetails {
  rank: number
  peer: number
  epoch: number
  /** The signature `rank` sent, readable, and its two words. */
  mine: string
  theirs: string
  mineWords: [number, number]
  theirsWords: [number, number]
}

/** A MISMATCH error naming both ranks and both signatures. */
export function mismatchError(d: MismatchDetails): LlcommError {
  return new LlcommError(
    'MISMATCH',
    `rank ${d.rank} and rank ${d.peer} made different calls at epoch ${d.epoch}: rank ${d.rank} ${d.mine}, rank ${d.peer} ${d.theirs}`,
    { ...d },
  )
}

export function isLlcommError(e: unknown, code?: LlcommErrorCode): e is LlcommError {
  return e instanceof LlcommError && (code === undefined || e.code === code)
}

/**
 * Any error as an LlcommError (the library's boundary: nothing else leaves it). LlcommErrors pass through; a failed
 * allocation (RangeError "Array buffer allocation failed", "Invalid array buffer length") is OUT_OF_MEMORY; anything
 * else is INTERNAL with the original error as `cause`.
 */
export function toLlcommError(e: unknown, what = 'llcomm'): LlcommError {
  if (e instanceof LlcommError) return e
  const message = e instanceof Error ? `${e.name}: ${e.message}` : String(e)
  if (e instanceof RangeError && /allocation failed|array buffer length|Array buffer|memory/i.test(e.message)) {
    return new LlcommError('OUT_OF_MEMORY', `${what}: ${message}`, { cause: message }, { cause: e })
  }
  return new LlcommError('INTERNAL', `${what}: unexpected ${message}`, { cause: message }, { cause: e })
}
