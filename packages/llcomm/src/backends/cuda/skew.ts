/**
 * Per-rank arrival skew for benchmarks and stress tests: before each call, every rank's blocks run the device
 * side's spin kernel (`llcomm_spin_ns`, kernels/tools) for that rank's delay, read from a device array of u64
 * nanoseconds indexed by global rank (one row per call). With virtual ranks the spin kernel of a device ends when
 * its longest-delayed rank ends, so the collective that follows sees all ranks of that device arrive together:
 * on one GPU the skew measured is the wait for the last rank, not a staggered arrival inside the collective.
 * Across distinct GPUs each device's stream is delayed by its own ranks, which is a real staggered arrival.
 */
import type { CudaDriver, CuStream, DevicePtr } from '../../ffi/index.js'
import { PreparedLaunch } from '../../ffi/index.js'
import { packSpinParams } from './abi.js'
import type { DeviceSet } from './devices.js'
import type { DeviceAllocations } from './memory.js'
import type { KernelModules } from './modules.js'
import { SPIN_KERNEL_NAME, toolKernel } from './tool-kernels.js'

export class SkewSpinner {
  private readonly driver: CudaDriver
  private readonly devices: DeviceSet
  private readonly allocs: DeviceAllocations
  /** delays[g] = device array on group g: rows × nranks u64 ns. */
  private readonly delays: DevicePtr[] = []
  private readonly launches: PreparedLaunch[] = []
  private readonly rowParams: Uint8Array[][] = []
  readonly rows: number
  /** Host copy of the delays (ns), rows × nranks. */
  readonly delayNs: Float64Array

  constructor(
    driver: CudaDriver,
    devices: DeviceSet,
    allocs: DeviceAllocations,
    modules: KernelModules,
    nranks: number,
    rows: number,
    randomDelayNs: number,
    random: () => number = Math.random,
    /** A delay every rank spins before every call, on top of the random one (BenchmarkRequest.computeUs). */
    fixedDelayNs = 0,
  ) {
    const maxDelayNs = fixedDelayNs + randomDelayNs
    this.driver = driver
    this.devices = devices
    this.allocs = allocs
    this.rows = rows
    this.delayNs = new Float64Array(rows * nranks)
    const host = new BigUint64Array(rows * nranks)
    for (let i = 0; i < host.length; i++) {
      const ns = fixedDelayNs + Math.floor(random() * randomDelayNs)
      this.delayNs[i] = ns
      host[i] = BigInt(ns)
    }
    for (const g of devices.groups) {
      const ptr = allocs.alloc(g.context, host.byteLength, `skewDelays[dev ${g.ordinal}]`)
      driver.copyHtoD(ptr, host)
      this.delays.push(ptr)
      const spin = toolKernel(SPIN_KERNEL_NAME)
      const f = modules.function(g, spin.sourceFile, spin.kernelName)
      const params: Uint8Array[] = []
      for (let row = 0; row < rows; row++) {
        params.push(
          new Uint8Array(
            packSpinParams({
              delayNs: ptr + row * nranks * 8,
              maxDelayNs,
              blocksPerRank: 1,
              ranksInLaunch: g.ranks.length,
              launchRanks: g.ranks,
            }),
          ),
        )
      }
      this.rowParams.push(params)
      // One block per rank; not cooperative (spinning blocks wait on nothing but the clock).
      this.launches.push(
        new PreparedLaunch(
          driver,
          f,
          SPIN_KERNEL_NAME,
          { gridDimX: g.ranks.length, blockDimX: 32, sharedBytes: 0 },
          { cooperative: false, pdl: false },
          params[0].byteLength,
        ),
      )
    }
  }

  /** Enqueues row `row`'s delays on every device's stream. */
  issue(row: number, streams: readonly CuStream[]): void {
    const multi = this.devices.multiDevice
    for (const g of this.devices.groups) {
      if (multi) this.driver.setCurrent(g.context)
      const l = this.launches[g.index]
      l.setParams(this.rowParams[g.index][row % this.rows])
      l.launchOn(streams[g.index])
    }
  }

  /** Mean over rows of the largest delay of a row (the wait for the last rank), in µs. */
  meanMaxDelayUs(nranks: number): number {
    let s = 0
    for (let row = 0; row < this.rows; row++) {
      let m = 0
      for (let r = 0; r < nranks; r++) m = Math.max(m, this.delayNs[row * nranks + r])
      s += m
    }
    return s / this.rows / 1000
  }

  dispose(): void {
    for (const l of this.launches) l.dispose()
    this.launches.length = 0
    for (const p of this.delays.splice(0).reverse()) this.allocs.release(p)
  }
}
