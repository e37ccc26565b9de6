/**
 * Devices of a cuda communicator: one primary context per distinct GPU, peer access between every pair, and the
 * mapping of ranks to devices. A device index repeated in `devices` gives virtual ranks: all ranks of one device
 * run in one cooperative launch (the contract's launch model), so a "launch group" is one device and its ranks.
 */
import { LlcommError } from '../../errors.js'
import { CU_DEVICE_ATTRIBUTE, type CuContext, type CuDevice, type CudaDriver } from '../../ffi/index.js'

export const MAX_RANKS = 64

export interface LaunchGroup {
  /** Position among the distinct devices, in order of first appearance in `devices`. */
  index: number
  ordinal: number
  device: CuDevice
  context: CuContext
  /** Global ranks that live on this device, ascending. */
  ranks: number[]
  name: string
  smCount: number
  /** e.g. 'sm_90'. */
  arch: string
  cooperativeLaunch: boolean
}

/** Checks `devices` without touching a GPU (also used by the CI tests). */
export function validateDeviceList(devices: unknown, deviceCount?: number): number[] {
  if (!Array.isArray(devices) || devices.length === 0) {
    throw new LlcommError(
      'INVALID_ARGUMENT',
      'cuda communicator needs a non-empty devices array (one device index per rank)',
    )
  }
  if (devices.length > MAX_RANKS) {
    throw new LlcommError('INVALID_ARGUMENT', `at most ${MAX_RANKS} ranks per communicator, got ${devices.length}`, {
      ranks: devices.length,
    })
  }
  for (const d of devices) {
    if (!Number.isInteger(d) || (d as number) < 0) {
      throw new LlcommError('INVALID_ARGUMENT', `device index ${String(d)} is not a non-negative integer`)
    }
    if (deviceCount !== undefined && (d as number) >= deviceCount) {
      throw new LlcommError('NO_DEVICE', `device ${d} does not exist (this machine has ${deviceCount})`, {
        device: d,
        deviceCount,
      })
    }
  }
  return devices as number[]
}

/** Groups ranks by device, in order of first appearance. */
export function groupRanks(devices: readonly number[]): { ordinal: number; ranks: number[] }[] {
  const groups: { ordinal: number; ranks: number[] }[] = []
  devices.forEach((ordinal, rank) => {
    let g = groups.find((x) => x.ordinal === ordinal)
    if (!g) {
      g = { ordinal, ranks: [] }
      groups.push(g)
    }
    g.ranks.push(rank)
  })
  return groups
}

export class DeviceSet {
  readonly groups: LaunchGroup[]
  /** rankGroup[r] = index of the launch group of global rank r. */
  readonly rankGroup: number[]
  private readonly driver: CudaDriver
  private released = false

  constructor(driver: CudaDriver, devices: readonly number[]) {
    this.driver = driver
    const count = driver.deviceCount()
    if (count === 0) throw new LlcommError('NO_DEVICE', 'no CUDA device is visible')
    validateDeviceList(devices, count)
    this.groups = []
    try {
      for (const [index, g] of groupRanks(devices).entries()) {
        const device = driver.device(g.ordinal)
        const context = driver.primaryContextRetain(device)
        const major = driver.deviceAttribute(device, CU_DEVICE_ATTRIBUTE.COMPUTE_CAPABILITY_MAJOR)
        const minor = driver.deviceAttribute(device, CU_DEVICE_ATTRIBUTE.COMPUTE_CAPABILITY_MINOR)
        this.groups.push({
          index,
          ordinal: g.ordinal,
          device,
          context,
          ranks: g.ranks,
          name: driver.deviceName(device),
          smCount: driver.deviceAttribute(device, CU_DEVICE_ATTRIBUTE.MULTIPROCESSOR_COUNT),
          arch: `sm_${major}${minor}`,
          cooperativeLaunch: driver.deviceAttribute(device, CU_DEVICE_ATTRIBUTE.COOPERATIVE_LAUNCH) !== 0,
        })
      }
      this.enablePeerAccess()
    } catch (e) {
      this.release()
      throw e
    }
    this.rankGroup = devices.map((ordinal) => this.groups.findIndex((g) => g.ordinal === ordinal))
  }

  /** Every device may read and write every other's memory (P2P in one process: one virtual address space). */
  private enablePeerAccess(): void {
    for (const a of this.groups) {
      for (const b of this.groups) {
        if (a === b) continue
        if (!this.driver.canAccessPeer(a.device, b.device)) {
          throw new LlcommError(
            'NO_DEVICE',
            `device ${a.ordinal} cannot access device ${b.ordinal}'s memory (no P2P)`,
            {
              device: a.ordinal,
              peer: b.ordinal,
            },
          )
        }
        this.driver.setCurrent(a.context)
        this.driver.enablePeerAccess(b.context)
      }
    }
  }

  /** Makes the group's context current on this thread. */
  use(group: LaunchGroup): void {
    this.driver.setCurrent(group.context)
  }

  get multiDevice(): boolean {
    return this.groups.length > 1
  }

  /** Releases the primary contexts in reverse order; idempotent. Peer access ends with the contexts. */
  release(): void {
    if (this.released) return
    this.released = true
    for (const g of [...this.groups].reverse()) {
      try {
        this.driver.primaryContextRelease(g.device)
      } catch {
        // releasing is best effort: the process may be tearing down after a device error
      }
    }
  }
}
