/**
 * Rendezvous addresses: `tcp://HOST:PORT` (HOST a name, an IPv4 address or a bracketed IPv6 address), or `env`,
 * which reads LLCOMM_RANK, LLCOMM_WORLD_SIZE and LLCOMM_RENDEZVOUS (torchrun's habit; `llcomm launch` sets them).
 */
import { LlcommError } from '../errors.js'

export interface RendezvousAddress {
  host: string
  port: number
}

export const RENDEZVOUS_ENV = {
  rank: 'LLCOMM_RANK',
  worldSize: 'LLCOMM_WORLD_SIZE',
  address: 'LLCOMM_RENDEZVOUS',
} as const

/** Parses `tcp://HOST:PORT`. An empty host (`tcp://:PORT`) is the loopback address. */
export function parseRendezvousAddress(text: unknown): RendezvousAddress {
  if (typeof text !== 'string') {
    throw new LlcommError('INVALID_ARGUMENT', `rendezvous must be 'tcp://HOST:PORT' or 'env', got ${String(text)}`)
  }
  const m = /^tcp:\/\/(\[[0-9a-fA-F:.]+\]|[^:/[\]]*):(\d{1,5})$/.exec(text)
  if (!m) {
    throw new LlcommError(
      'INVALID_ARGUMENT',
      `rendezvous must be 'tcp://HOST:PORT' or 'env', got ${JSON.stringify(text)}`,
      {
        rendezvous: text,
      },
    )
  }
  const port = Number(m[2])
  if (port < 1 || port > 65535) {
    throw new LlcommError('INVALID_ARGUMENT', `rendezvous port must be in 1..65535, got ${port}`, { rendezvous: text })
  }
  let host = m[1]
  if (host.startsWith('[')) host = host.slice(1, -1)
  if (host === '' || host === 'localhost') host = '127.0.0.1'
  return { host, port }
}

export function formatRendezvousAddress(a: RendezvousAddress): string {
  return `tcp://${a.host.includes(':') ? `[${a.host}]` : a.host}:${a.port}`
}

/** An integer in [min, max] from an option or an environment variable, else INVALID_ARGUMENT naming it. */
export function parseIntegerSetting(value: unknown, name: string, min: number, max: number): number {
  const n = typeof value === 'string' && value.trim() !== '' ? Number(value) : value
  if (typeof n !== 'number' || !Number.isInteger(n) || n < min || n > max) {
    throw new LlcommError(
      'INVALID_ARGUMENT',
      `${name} must be an integer in ${min}..${max}, got ${JSON.stringify(value)}`,
      {
        [name]: value,
      },
    )
  }
  return n
}

/** rank, worldSize and address from explicit options, or from the environment when rendezvous is 'env'. */
export function resolveRendezvousSettings(
  options: { rank?: unknown; worldSize?: unknown; rendezvous?: unknown },
  env: Readonly<Record<string, string | undefined>> = process.env,
): { rank: number; worldSize: number; address: RendezvousAddress } {
  const fromEnv = options.rendezvous === 'env'
  const rawWorld = options.worldSize ?? (fromEnv ? env[RENDEZVOUS_ENV.worldSize] : undefined)
  const rawRank = options.rank ?? (fromEnv ? env[RENDEZVOUS_ENV.rank] : undefined)
  const worldSize = parseIntegerSetting(
    rawWorld,
    fromEnv && options.worldSize === undefined ? RENDEZVOUS_ENV.worldSize : 'worldSize',
    1,
    1024,
  )
  const rank = parseIntegerSetting(
    rawRank,
    fromEnv && options.rank === undefined ? RENDEZVOUS_ENV.rank : 'rank',
    0,
    Number.MAX_SAFE_INTEGER,
  )
  if (rank >= worldSize) {
    throw new LlcommError('INVALID_ARGUMENT', `rank ${rank} is not below worldSize ${worldSize}`, { rank, worldSize })
  }
  let addressText = options.rendezvous
  if (fromEnv) {
    addressText = env[RENDEZVOUS_ENV.address]
    if (addressText === undefined || addressText === '') {
      throw new LlcommError('INVALID_ARGUMENT', `rendezvous 'env' needs ${RENDEZVOUS_ENV.address}=tcp://HOST:PORT`)
    }
  }
  return { rank, worldSize, address: parseRendezvousAddress(addressText) }
}
