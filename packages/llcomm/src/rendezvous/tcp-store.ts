/**
 * The rendezvous of one process per rank: a small TCP store hosted by rank 0 (node:net), in the spirit of
 * torch.distributed's TCPStore but with one verb. Every rank (rank 0 too, over loopback) connects as a client,
 * joins, and then exchanges values through named all-gathers: each rank contributes one JSON value under a name
 * and gets every rank's value back, in rank order. A barrier is an all-gather of nulls.
 *
 * Wire format: one JSON object per line.
 *   client -> host: {t:'join', rank, worldSize, pid, config} | {t:'gather', name, value, timeoutMs} | {t:'bye'}
 *   host -> client: {t:'welcome', pids} | {t:'gathered', name, values} | {t:'error', name?, code, message, details}
 *                   | {t:'peer-failed', rank}
 *
 * Rules (issue 20):
 * - A join with rank >= worldSize, a rank already joined, a worldSize or a config other than rank 0's aborts the
 *   whole group at once with INVALID_ARGUMENT (every rank that joined gets it; nobody waits out a deadline).
 * - The host's deadline starts when it listens: a rank missing when it passes makes every joined rank fail with
 *   TIMEOUT naming the missing ranks (details.missing). A gather has the same rule, from its first arrival.
 * - Once every rank has joined the host stops listening (the established connections stay): nothing listens
 *   after the rendezvous, let alone after close.
 * - A connection that drops without a `bye` is a dead process: the host tells every other rank (peer-failed),
 *   and pending and later gathers fail with PEER_FAILED naming it. A client whose connection to the host drops
 *   without its own bye reports rank 0 as failed.
 * - Every client wait has its own backstop timer (the deadline plus a grace period), so even a host that hangs
 *   cannot make a rank wait forever.
 */
import { createConnection, createServer, type Server, type Socket } from 'node:net'
import { LlcommError, type LlcommErrorCode } from '../errors.js'
import { formatRendezvousAddress, type RendezvousAddress } from './address.js'

type ClientMessage =
  | { t: 'join'; rank: number; worldSize: number; pid: number; config: unknown }
  | { t: 'gather'; name: string; value: unknown; timeoutMs: number }
  | { t: 'bye' }

type HostMessage =
  | { t: 'welcome'; pids: number[] }
  | { t: 'gathered'; name: string; values: unknown[] }
  | { t: 'error'; name?: string; code: LlcommErrorCode; message: string; details: Record<string, unknown> }
  | { t: 'peer-failed'; rank: number }

/** Extra time a client waits past a deadline for the host's own TIMEOUT (which names the missing ranks). */
const HOST_ANSWER_GRACE_MS = 1000
/** Pause between connection attempts while the host is not listening yet. */
const CONNECT_RETRY_MS = 50
/** Longest accepted line: a gathered value is a handle or an id (CUDA IPC handles, NCCL ids), never bulk data. */
const MAX_LINE_BYTES = 1 << 20
/** How long a host keeps refusing joins after a bad one (INVALID_ARGUMENT), for ranks still on their way. */
const REFUSAL_LINGER_MS = 2000

/** Splits a socket's bytes into JSON lines. */
function onLines(socket: Socket, handle: (message: unknown) => void, onBad: (why: string) => void): void {
  let pending = ''
  socket.setEncoding('utf8')
  socket.on('data', (chunk: string) => {
    pending += chunk
    if (pending.length > MAX_LINE_BYTES) {
      onBad(`a line longer than ${MAX_LINE_BYTES} bytes`)
      return
    }
    for (let nl = pending.indexOf('\n'); nl >= 0; nl = pending.indexOf('\n')) {
      const line = pending.slice(0, nl)
      pending = pending.slice(nl + 1)
      let message: unknown
      try {
        message = JSON.parse(line)
      } catch {
        onBad('a line that is not JSON')
        return
      }
      handle(message)
    }
  })
}

function send(socket: Socket, message: ClientMessage | HostMessage): void {
  if (!socket.destroyed && socket.writable) socket.write(`${JSON.stringify(message)}\n`)
}

function sameConfig(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b)
}

interface PendingGather {
  values: unknown[]
  arrived: Set<number>
  timer: NodeJS.Timeout
}

/** The host side, in rank 0's process. */
export class RendezvousHost {
  readonly address: RendezvousAddress
  private readonly server: Server
  private readonly worldSize: number
  private readonly config: unknown
  private readonly members: (Socket | undefined)[]
  private readonly pids: number[]
  private readonly leaving = new Set<number>()
  private readonly gathers = new Map<string, PendingGather>()
  private joinTimer: NodeJS.Timeout | undefined
  private failure: { code: LlcommErrorCode; message: string; details: Record<string, unknown> } | undefined
  private readonly sockets = new Set<Socket>()
  private closed = false

  private constructor(server: Server, address: RendezvousAddress, worldSize: number, config: unknown) {
    this.server = server
    this.address = address
    this.worldSize = worldSize
    this.config = config
    this.members = new Array(worldSize).fill(undefined)
    this.pids = new Array(worldSize).fill(0)
  }

  /** Listens at `address`; the join deadline starts now. */
  static listen(
    address: RendezvousAddress,
    worldSize: number,
    config: unknown,
    timeoutMs: number,
  ): Promise<RendezvousHost> {
    return new Promise((resolve, reject) => {
      const server = createServer()
      const host = new RendezvousHost(server, address, worldSize, config)
      server.on('connection', (socket) => host.accept(socket))
      server.once('error', (e: NodeJS.ErrnoException) => {
        reject(
          new LlcommError(
            'INVALID_ARGUMENT',
            `rank 0 cannot host the rendezvous at ${formatRendezvousAddress(address)}: ${e.code ?? e.message}`,
            { address: formatRendezvousAddress(address), errno: e.code },
            { cause: e },
          ),
        )
      })
      server.listen({ host: address.host, port: address.port, exclusive: true }, () => {
        server.removeAllListeners('error')
        server.on('error', () => undefined)
        host.joinDeadline = performance.now() + timeoutMs
        host.joinTimer = setTimeout(() => {
          const missing = host.missingRanks()
          host.abort(
            'TIMEOUT',
            `rendezvous timed out after ${timeoutMs} ms: rank(s) ${missing.join(', ')} never joined`,
            {
              missing,
              timeoutMs,
            },
          )
        }, timeoutMs)
        resolve(host)
      })
    })
  }

  private missingRanks(): number[] {
    const out: number[] = []
    for (let r = 0; r < this.worldSize; r++) if (!this.members[r]) out.push(r)
    return out
  }

  /** Fails every joined rank with the same error and stops everything (a bad join, a join deadline). */
  private abort(code: LlcommErrorCode, message: string, details: Record<string, unknown>): void {
    if (this.failure) return
    this.failure = { code, message, details }
    for (const socket of this.sockets) {
      send(socket, { t: 'error', code, message, details })
      socket.end()
    }
    if (code !== 'INVALID_ARGUMENT' || !this.server.listening) {
      this.stop()
      return
    }
    // A bad join: ranks still on their way would otherwise find nobody listening and wait out their deadline.
    // Keep refusing joins with the same error for a short while (until every rank was seen, the join deadline,
    // or REFUSAL_LINGER_MS), then stop listening.
    if (this.joinTimer) clearTimeout(this.joinTimer)
    this.joinTimer = undefined
    this.lingering = true
    const lingerMs = Math.max(0, Math.min(REFUSAL_LINGER_MS, this.joinDeadline - performance.now()))
    this.lingerTimer = setTimeout(() => this.stop(), lingerMs)
    if (this.seenRanks.size >= this.worldSize) this.stop()
  }

  /** True while a failed join keeps refusing latecomers (see abort). */
  lingering = false
  private lingerTimer: NodeJS.Timeout | undefined
  private readonly seenRanks = new Set<number>()
  private joinDeadline = 0

  private stop(): void {
    if (this.joinTimer) clearTimeout(this.joinTimer)
    this.joinTimer = undefined
    if (this.lingerTimer) clearTimeout(this.lingerTimer)
    this.lingerTimer = undefined
    this.lingering = false
    for (const g of this.gathers.values()) clearTimeout(g.timer)
    this.gathers.clear()
    if (this.server.listening) this.server.close()
  }

  private accept(socket: Socket): void {
    if (this.closed || (this.failure && !this.lingering)) {
      socket.destroy()
      return
    }
    this.sockets.add(socket)
    let rank = -1
    socket.on('error', () => undefined)
    socket.on('close', () => {
      this.sockets.delete(socket)
      if (rank < 0 || this.members[rank] !== socket) return
      if (this.leaving.has(rank)) return
      this.peerFailed(rank)
    })
    onLines(
      socket,
      (raw) => {
        const m = raw as ClientMessage
        if (m.t === 'join') {
          if (rank >= 0) return
          if (Number.isInteger(m.rank) && m.rank >= 0 && m.rank < this.worldSize) this.seenRanks.add(m.rank)
          const failure = this.failure
          if (failure) {
            send(socket, { t: 'error', ...failure })
            socket.end()
            if (this.lingering && this.seenRanks.size >= this.worldSize) this.stop()
            return
          }
          rank = this.join(socket, m)
        } else if (rank < 0) {
          socket.destroy()
        } else if (m.t === 'gather') {
          this.gather(rank, m)
        } else if (m.t === 'bye') {
          this.leaving.add(rank)
          socket.end()
        }
      },
      () => socket.destroy(),
    )
  }

  /** Validates a join; returns the rank, or -1 after aborting the group. */
  private join(socket: Socket, m: Extract<ClientMessage, { t: 'join' }>): number {
    const bad = (message: string, details: Record<string, unknown>): number => {
      this.abort('INVALID_ARGUMENT', message, details)
      return -1
    }
    if (m.worldSize !== this.worldSize) {
      return bad(`rank ${m.rank} says worldSize ${m.worldSize}, rank 0 says ${this.worldSize}`, {
        rank: m.rank,
        worldSize: m.worldSize,
        expectedWorldSize: this.worldSize,
      })
    }
    if (!Number.isInteger(m.rank) || m.rank < 0 || m.rank >= this.worldSize) {
      return bad(`a process joined as rank ${m.rank}, not in 0..${this.worldSize - 1}`, { rank: m.rank })
    }
    if (this.members[m.rank]) {
      return bad(`rank ${m.rank} joined twice (pids ${this.pids[m.rank]} and ${m.pid})`, {
        rank: m.rank,
        pids: [this.pids[m.rank], m.pid],
      })
    }
    if (!sameConfig(m.config, this.config)) {
      return bad(
        `rank ${m.rank}'s options differ from rank 0's: ${JSON.stringify(m.config)} vs ${JSON.stringify(this.config)}`,
        {
          rank: m.rank,
          config: m.config,
          expectedConfig: this.config,
        },
      )
    }
    this.members[m.rank] = socket
    this.pids[m.rank] = m.pid
    if (this.missingRanks().length === 0) {
      if (this.joinTimer) clearTimeout(this.joinTimer)
      this.joinTimer = undefined
      // Everyone is here: stop listening. The established connections stay open until each rank's bye.
      if (this.server.listening) this.server.close()
      for (const s of this.members) if (s) send(s, { t: 'welcome', pids: this.pids })
    }
    return m.rank
  }

  private gather(rank: number, m: Extract<ClientMessage, { t: 'gather' }>): void {
    const socket = this.members[rank]
    if (!socket) return
    const dead = this.deadRank()
    if (dead !== undefined) {
      send(socket, peerFailedError(m.name, dead))
      return
    }
    let g = this.gathers.get(m.name)
    if (!g) {
      const timeoutMs = Math.max(1, Math.min(m.timeoutMs, 2 ** 31 - 1))
      const entry: PendingGather = {
        values: new Array(this.worldSize).fill(null),
        arrived: new Set(),
        timer: setTimeout(() => {
          this.gathers.delete(m.name)
          const missing: number[] = []
          for (let r = 0; r < this.worldSize; r++) if (!entry.arrived.has(r)) missing.push(r)
          for (const r of entry.arrived) {
            const s = this.members[r]
            if (s) {
              send(s, {
                t: 'error',
                name: m.name,
                code: 'TIMEOUT',
                message: `'${m.name}' timed out after ${timeoutMs} ms: rank(s) ${missing.join(', ')} never arrived`,
                details: { rank: r, missing, timeoutMs, waitingFor: m.name },
              })
            }
          }
        }, timeoutMs),
      }
      g = entry
      this.gathers.set(m.name, g)
    }
    g.values[rank] = m.value ?? null
    g.arrived.add(rank)
    if (g.arrived.size === this.worldSize) {
      clearTimeout(g.timer)
      this.gathers.delete(m.name)
      for (const s of this.members) if (s) send(s, { t: 'gathered', name: m.name, values: g.values })
    }
  }

  private failedRanks = new Set<number>()

  private deadRank(): number | undefined {
    for (const r of this.failedRanks) return r
    return undefined
  }

  private peerFailed(rank: number): void {
    this.failedRanks.add(rank)
    for (let r = 0; r < this.worldSize; r++) {
      const s = this.members[r]
      if (r === rank || !s) continue
      send(s, { t: 'peer-failed', rank })
    }
    for (const [name, g] of this.gathers) {
      clearTimeout(g.timer)
      for (const r of g.arrived) {
        const s = this.members[r]
        if (s) send(s, peerFailedError(name, rank))
      }
    }
    this.gathers.clear()
  }

  /** Resolves once every connection has closed (each rank said bye or died), or after `graceMs`. */
  async close(graceMs: number): Promise<void> {
    if (this.closed) return
    this.closed = true
    this.stop()
    if (this.sockets.size > 0) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, graceMs)
        timer.unref()
        const check = (): void => {
          if (this.sockets.size === 0) {
            clearTimeout(timer)
            resolve()
          }
        }
        for (const s of this.sockets) s.once('close', () => setImmediate(check))
        check()
      })
    }
    this.destroy()
  }

  destroy(): void {
    this.closed = true
    this.stop()
    for (const s of this.sockets) s.destroy()
    this.sockets.clear()
  }

  /** The connections no longer keep rank 0's process alive (after the rendezvous). */
  unref(): void {
    for (const s of this.sockets) s.unref()
  }

  /** They do again (while close() waits for every rank's bye). */
  ref(): void {
    for (const s of this.sockets) s.ref()
  }
}

function peerFailedError(name: string, rank: number): HostMessage {
  return {
    t: 'error',
    name,
    code: 'PEER_FAILED',
    message: `rank ${rank} died (its rendezvous connection closed) before '${name}'`,
    details: { peer: rank, waitingFor: name },
  }
}

export interface JoinOptions {
  address: RendezvousAddress
  rank: number
  worldSize: number
  /** Deadline of the whole join in ms; later gathers take their own. */
  timeoutMs: number
  /** Options every rank must agree on (compared as JSON with rank 0's). */
  config: unknown
}

interface Waiter {
  resolve: (values: unknown[]) => void
  reject: (e: LlcommError) => void
  timer: NodeJS.Timeout
}

/**
 * One rank's membership in the group: its connection to the host (and, on rank 0, the host itself). Made by
 * joinRendezvous; `close()` says bye and, on rank 0, waits for every rank to leave; `destroy()` drops all.
 */
export class Rendezvous {
  readonly rank: number
  readonly worldSize: number
  /** Process id of every rank, in rank order (for liveness checks on one host). */
  pids: number[] = []
  private readonly socket: Socket
  private readonly host: RendezvousHost | undefined
  private readonly waiters = new Map<string, Waiter>()
  private groupError: LlcommError | undefined
  private failedPeer: number | undefined
  private saidBye = false
  private readonly failureListeners: ((peer: number) => void)[] = []

  private constructor(socket: Socket, host: RendezvousHost | undefined, rank: number, worldSize: number) {
    this.socket = socket
    this.host = host
    this.rank = rank
    this.worldSize = worldSize
  }

  /** The first peer known dead (host's peer-failed, or the host's own connection gone), if any. */
  get deadPeer(): number | undefined {
    return this.failedPeer
  }

  /** Calls `listener(peer)` when a peer is reported dead (at most once per rendezvous). */
  onPeerFailed(listener: (peer: number) => void): void {
    this.failureListeners.push(listener)
  }

  static async join(options: JoinOptions): Promise<Rendezvous> {
    const { address, rank, worldSize, timeoutMs } = options
    const deadline = performance.now() + timeoutMs
    const host = rank === 0 ? await RendezvousHost.listen(address, worldSize, options.config, timeoutMs) : undefined
    try {
      const socket = await connectWithRetry(address, rank, deadline)
      const rv = new Rendezvous(socket, host, rank, worldSize)
      rv.listen()
      send(socket, { t: 'join', rank, worldSize, pid: process.pid, config: options.config })
      const [welcome] = await rv.await('\0welcome', Math.max(1, deadline - performance.now()))
      rv.pids = welcome as number[]
      return rv
    } catch (e) {
      // A host refusing latecomers after a bad join stops by itself (see RendezvousHost.abort).
      if (!host?.lingering) host?.destroy()
      throw e
    }
  }

  private listen(): void {
    const socket = this.socket
    socket.on('error', () => undefined)
    socket.on('close', () => {
      if (this.saidBye) return
      const e =
        this.groupError ??
        new LlcommError('PEER_FAILED', `rank ${this.rank} lost its connection to the rendezvous host (rank 0)`, {
          rank: this.rank,
          peer: 0,
        })
      if (!this.groupError && this.rank !== 0) this.markPeerFailed(0)
      this.failAll(e)
    })
    onLines(
      socket,
      (raw) => {
        const m = raw as HostMessage
        switch (m.t) {
          case 'welcome':
            this.settle('\0welcome', [m.pids])
            break
          case 'gathered':
            this.settle(m.name, m.values)
            break
          case 'peer-failed':
            this.markPeerFailed(m.rank)
            break
          case 'error': {
            const e = new LlcommError(m.code, m.message, { ...m.details, rank: this.rank })
            if (m.name === undefined) {
              this.groupError = e
              this.failAll(e)
            } else {
              const w = this.waiters.get(m.name)
              if (w) {
                this.waiters.delete(m.name)
                clearTimeout(w.timer)
                w.reject(e)
              }
            }
            break
          }
        }
      },
      () => socket.destroy(),
    )
  }

  private markPeerFailed(peer: number): void {
    if (this.failedPeer !== undefined) return
    this.failedPeer = peer
    for (const l of this.failureListeners) l(peer)
  }

  private settle(name: string, values: unknown[]): void {
    const w = this.waiters.get(name)
    if (!w) return
    this.waiters.delete(name)
    clearTimeout(w.timer)
    w.resolve(values)
  }

  private failAll(e: LlcommError): void {
    for (const w of this.waiters.values()) {
      clearTimeout(w.timer)
      w.reject(e)
    }
    this.waiters.clear()
  }

  private await(name: string, timeoutMs: number): Promise<unknown[]> {
    if (this.groupError) return Promise.reject(this.groupError)
    if (this.waiters.has(name)) {
      return Promise.reject(
        new LlcommError('BUSY', `rank ${this.rank} already waits on '${name}'`, { rank: this.rank }),
      )
    }
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters.delete(name)
        reject(
          new LlcommError(
            'TIMEOUT',
            `rank ${this.rank}: no answer from the rendezvous host (rank 0) for '${name === '\0welcome' ? 'join' : name}' within ${timeoutMs} ms`,
            { rank: this.rank, peer: 0, missing: [0], waitingFor: name === '\0welcome' ? 'join' : name },
          ),
        )
      }, timeoutMs + HOST_ANSWER_GRACE_MS)
      this.waiters.set(name, { resolve, reject, timer })
    })
  }

  /** Every rank's `value` under `name`, in rank order; TIMEOUT naming the missing ranks after `timeoutMs`. */
  allGather<T = unknown>(name: string, value: T, timeoutMs: number): Promise<T[]> {
    if (this.saidBye) return Promise.reject(new LlcommError('CLOSED', 'the rendezvous is closed'))
    const result = this.await(name, timeoutMs)
    send(this.socket, { t: 'gather', name, value: value ?? null, timeoutMs })
    return result as Promise<T[]>
  }

  async barrier(name: string, timeoutMs: number): Promise<void> {
    await this.allGather(name, null, timeoutMs)
  }

  /** After the rendezvous: the connection no longer keeps the process alive (peer-failed still arrives). */
  unref(): void {
    this.socket.unref()
    this.host?.unref()
  }

  /** Says bye; on rank 0 also waits (up to `graceMs`) until every rank has left, then stops the host. */
  async close(graceMs: number): Promise<void> {
    if (this.saidBye) return
    this.saidBye = true
    this.failAll(new LlcommError('CLOSED', 'the rendezvous is closed'))
    // The goodbye must finish even when nothing else keeps the process alive (see unref).
    this.socket.ref()
    this.host?.ref()
    const socket = this.socket
    const closed = new Promise<void>((resolve) => {
      if (socket.destroyed) resolve()
      else socket.once('close', () => resolve())
    })
    if (!socket.destroyed) {
      send(socket, { t: 'bye' })
      socket.end()
    }
    await this.host?.close(graceMs)
    // The bye must reach the host before the socket goes (a destroy would drop a write still queued, and the
    // host would take the silent close for a dead rank): the host ends its side on bye, which closes ours.
    let timer: NodeJS.Timeout | undefined
    await Promise.race([closed, new Promise<void>((resolve) => (timer = setTimeout(resolve, Math.min(graceMs, 2000))))])
    clearTimeout(timer)
    socket.destroy()
  }

  destroy(): void {
    this.saidBye = true
    this.failAll(new LlcommError('CLOSED', 'the rendezvous was destroyed'))
    this.socket.destroy()
    this.host?.destroy()
  }
}

export function joinRendezvous(options: JoinOptions): Promise<Rendezvous> {
  return Rendezvous.join(options)
}

/** Connects, retrying while the host is not listening yet; TIMEOUT naming rank 0 at the deadline. */
function connectWithRetry(address: RendezvousAddress, rank: number, deadline: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const attempt = (): void => {
      const socket = createConnection({ host: address.host, port: address.port })
      socket.setNoDelay(true)
      const onError = (e: NodeJS.ErrnoException): void => {
        socket.destroy()
        const retryable = e.code === 'ECONNREFUSED' || e.code === 'ECONNRESET' || e.code === 'ENOENT'
        if (retryable && performance.now() + CONNECT_RETRY_MS < deadline) {
          setTimeout(attempt, CONNECT_RETRY_MS)
          return
        }
        reject(
          retryable
            ? new LlcommError(
                'TIMEOUT',
                `rank ${rank}: no rendezvous host (rank 0) at ${formatRendezvousAddress(address)} before the deadline`,
                { rank, peer: 0, missing: [0], waitingFor: 'join' },
              )
            : new LlcommError(
                'INVALID_ARGUMENT',
                `rank ${rank} cannot reach the rendezvous at ${formatRendezvousAddress(address)}: ${e.code ?? e.message}`,
                { rank, errno: e.code },
                { cause: e },
              ),
        )
      }
      socket.once('error', onError)
      socket.once('connect', () => {
        socket.removeListener('error', onError)
        resolve(socket)
      })
    }
    attempt()
  })
}
