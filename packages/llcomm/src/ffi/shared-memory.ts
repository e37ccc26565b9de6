/**
 * Memory shared between processes (libc shm_open + ftruncate + mmap MAP_SHARED, through koffi) and futex waits on
 * it: the CPU backend's one-process-per-rank path. Linux only (x86-64 and arm64 futex numbers).
 *
 * Why a futex: Node has no SharedArrayBuffer across processes. koffi.view(ptr, len) gives an ArrayBuffer over the
 * mapping, and Atomics.load/store/add/compareExchange work on a non-shared Int32Array (they compile to the same
 * locked instructions, which order accesses to the same physical page whichever process mapped it), but
 * Atomics.wait refuses a non-shared buffer (TypeError) and Atomics.notify on one wakes nobody. FUTEX_WAIT /
 * FUTEX_WAKE (without FUTEX_PRIVATE_FLAG, so they key on the physical page and work across processes) take their
 * place, with the same no-lost-wake-up contract: FUTEX_WAIT compares the word with `expected` after queueing the
 * waiter, under the futex bucket lock that FUTEX_WAKE takes.
 *
 * What rests on the engine rather than the language: ECMAScript's memory model orders accesses between agents
 * only for SharedArrayBuffer; for an ArrayBuffer that another process also maps, the ordering comes from V8
 * emitting the same instructions for Atomics on either kind of buffer (x86-64: locked read-modify-writes and an
 * xchg for Atomics.store; arm64: acquire/release and exclusive pairs) and from the hardware's coherence. Atomics
 * ops stay in TurboFan's effect chain, so plain reads after an Atomics.load are not hoisted above it. The CI tests
 * (test/process/) exercise it with checked outputs across real processes.
 *
 * Lifetime: the mapping's ArrayBuffer must not be touched after unmap() (the pages are gone: a segfault, not an
 * exception); the owner (src/backends/cpu/process-*.ts) stops every use before unmapping. The name is unlinked
 * by its creator as soon as every process has mapped it, so /dev/shm holds nothing while the ranks run; the
 * creator's pid is part of the name, so that a later run can remove a segment whose creator was killed first.
 */
import { readdirSync } from 'node:fs'
import koffi from 'koffi'
import { LlcommError } from '../errors.js'

const O_RDWR = 0o2
const O_CREAT = 0o100
const O_EXCL = 0o200
const PROT_READ = 0x1
const PROT_WRITE = 0x2
const MAP_SHARED = 0x1
const SEEK_END = 2
const FUTEX_WAIT = 0
const FUTEX_WAKE = 1
const EAGAIN = 11
const EINTR = 4
const ETIMEDOUT = 110
const SYS_FUTEX: Partial<Record<string, number>> = { x64: 202, arm64: 98 }

/** Prefix of every segment name llcomm creates: `/llcomm-<creator pid>-<random hex>`. */
export const SEGMENT_PREFIX = 'llcomm-'
const SHM_DIR = '/dev/shm'

interface Libc {
  shm_open: (name: string, oflag: number, mode: number) => number
  shm_unlink: (name: string) => number
  ftruncate: (fd: number, length: number) => number
  lseek: (fd: number, offset: number, whence: number) => number
  mmap: (addr: null, length: number, prot: number, flags: number, fd: number, offset: number) => unknown
  munmap: (addr: unknown, length: number) => number
  close: (fd: number) => number
  futex: (
    nr: number,
    addr: number,
    op: number,
    val: number,
    timeout: BigInt64Array | null,
    a2: null,
    v3: number,
  ) => number
  strerror: (errnum: number) => string
}

let libcCache: Libc | undefined

function libc(): Libc {
  if (libcCache) return libcCache
  if (process.platform !== 'linux' || SYS_FUTEX[process.arch] === undefined) {
    throw new LlcommError(
      'LIBRARY_NOT_FOUND',
      `shared memory between processes needs Linux on x64 or arm64 (this is ${process.platform}/${process.arch})`,
    )
  }
  let lib: ReturnType<typeof koffi.load>
  try {
    lib = koffi.load('libc.so.6')
  } catch (e) {
    throw new LlcommError('LIBRARY_NOT_FOUND', `cannot load libc.so.6: ${(e as Error).message}`, {}, { cause: e })
  }
  libcCache = {
    shm_open: lib.func('int shm_open(const char *name, int oflag, uint32_t mode)'),
    shm_unlink: lib.func('int shm_unlink(const char *name)'),
    ftruncate: lib.func('int ftruncate(int fd, int64_t length)'),
    lseek: lib.func('int64_t lseek(int fd, int64_t offset, int whence)'),
    mmap: lib.func('void *mmap(void *addr, size_t length, int prot, int flags, int fd, int64_t offset)'),
    munmap: lib.func('int munmap(void *addr, size_t length)'),
    close: lib.func('int close(int fd)'),
    // syscall(2) is variadic; glibc's implementation moves registers only, so fixed prototypes are exact on
    // x86-64 and arm64 (integer and pointer arguments travel in the same registers either way).
    futex: lib.func('syscall', 'long', ['long', 'uintptr_t', 'int', 'int', 'void *', 'void *', 'int']),
    strerror: lib.func('const char *strerror(int errnum)'),
  }
  return libcCache
}

function systemError(call: string, detail: Record<string, unknown> = {}): LlcommError {
  const errno = koffi.errno()
  const lc = libcCache
  return new LlcommError('SYSTEM_ERROR', `${call} failed: ${lc ? lc.strerror(errno) : `errno ${errno}`}`, {
    call,
    errno,
    ...detail,
  })
}

/** Removes segments left in /dev/shm by llcomm processes that no longer run (a creator killed before unlink). */
export function removeStaleSegments(isAlive: (pid: number) => boolean): string[] {
  let names: string[]
  try {
    names = readdirSync(SHM_DIR)
  } catch {
    return []
  }
  const removed: string[] = []
  for (const name of names) {
    if (!name.startsWith(SEGMENT_PREFIX)) continue
    const pid = Number(name.slice(SEGMENT_PREFIX.length).split('-')[0])
    if (!Number.isInteger(pid) || pid <= 0 || isAlive(pid)) continue
    if (libc().shm_unlink(`/${name}`) === 0) removed.push(name)
  }
  return removed
}

/** Names in /dev/shm that llcomm created (for tests: nothing may be left behind). */
export function listSegments(): string[] {
  try {
    return readdirSync(SHM_DIR).filter((n) => n.startsWith(SEGMENT_PREFIX))
  } catch {
    return []
  }
}

export class SharedMemorySegment {
  readonly name: string
  readonly bytes: number
  /** The mapping, as an ArrayBuffer (not shared: see the header for what Atomics can do with it). */
  readonly buffer: ArrayBuffer
  /** Address of the first byte in this process, as a number (user-space addresses are far below 2^53). */
  readonly address: number
  private pointer: unknown
  private linked: boolean

  private constructor(name: string, bytes: number, pointer: unknown, linked: boolean) {
    this.name = name
    this.bytes = bytes
    this.pointer = pointer
    this.linked = linked
    this.address = Number(koffi.address(pointer))
    this.buffer = koffi.view(pointer, bytes)
  }

  /** A new zero-filled segment `name` ('/llcomm-…'); fails if the name exists. */
  static create(name: string, bytes: number): SharedMemorySegment {
    const c = libc()
    const fd = c.shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0o600)
    if (fd < 0) throw systemError('shm_open', { name })
    try {
      if (c.ftruncate(fd, bytes) !== 0) throw systemError('ftruncate', { name, bytes })
      return new SharedMemorySegment(name, bytes, mapOrThrow(c, fd, bytes, name), true)
    } catch (e) {
      c.shm_unlink(name)
      throw e
    } finally {
      c.close(fd)
    }
  }

  /** Maps an existing segment; its size must be `bytes`. The caller does not own the name (never unlinks it). */
  static open(name: string, bytes: number): SharedMemorySegment {
    const c = libc()
    const fd = c.shm_open(name, O_RDWR, 0)
    if (fd < 0) throw systemError('shm_open', { name })
    try {
      const size = c.lseek(fd, 0, SEEK_END)
      if (size !== bytes) {
        throw new LlcommError('INVALID_ARGUMENT', `shared memory ${name} holds ${size} bytes, expected ${bytes}`, {
          name,
          size,
          bytes,
        })
      }
      return new SharedMemorySegment(name, bytes, mapOrThrow(c, fd, bytes, name), false)
    } finally {
      c.close(fd)
    }
  }

  get mapped(): boolean {
    return this.pointer !== null
  }

  /** Removes the name (the memory stays until every process has unmapped it). Idempotent. */
  unlink(): void {
    if (!this.linked) return
    this.linked = false
    libc().shm_unlink(this.name)
  }

  /** Unmaps; every view of `buffer` is dead afterwards (see the header). Idempotent. */
  unmap(): void {
    if (this.pointer === null) return
    libc().munmap(this.pointer, this.bytes)
    this.pointer = null
  }
}

function mapOrThrow(c: Libc, fd: number, bytes: number, name: string): unknown {
  const p = c.mmap(null, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
  // MAP_FAILED is (void *)-1.
  if (p === null || koffi.address(p) === 0xffffffffffffffffn) throw systemError('mmap', { name, bytes })
  return p
}

export type FutexWaitResult = 'woken' | 'changed' | 'timeout'

/**
 * FUTEX_WAIT on the 32-bit word at `address`: sleeps while it holds `expected`, at most `timeoutMs`. 'changed'
 * when the word already differed (EAGAIN); 'woken' on a wake-up, an EINTR or a spurious return (callers re-check
 * their condition in a loop either way).
 */
export function futexWait(address: number, expected: number, timeoutMs: number): FutexWaitResult {
  const c = libc()
  const ms = Math.max(0, timeoutMs)
  const seconds = Math.floor(ms / 1000)
  const timespec = new BigInt64Array([BigInt(seconds), BigInt(Math.floor((ms - seconds * 1000) * 1e6))])
  const r = c.futex(SYS_FUTEX[process.arch] as number, address, FUTEX_WAIT, expected | 0, timespec, null, 0)
  if (r === 0) return 'woken'
  const errno = koffi.errno()
  if (errno === EAGAIN) return 'changed'
  if (errno === ETIMEDOUT) return 'timeout'
  if (errno === EINTR) return 'woken'
  throw systemError('futex(FUTEX_WAIT)', { address })
}

/** FUTEX_WAKE: wakes up to `count` waiters on the word at `address`; returns how many woke. */
export function futexWake(address: number, count = 2 ** 31 - 1): number {
  const c = libc()
  const r = c.futex(SYS_FUTEX[process.arch] as number, address, FUTEX_WAKE, count, null, null, 0)
  if (r < 0) throw systemError('futex(FUTEX_WAKE)', { address })
  return r
}
