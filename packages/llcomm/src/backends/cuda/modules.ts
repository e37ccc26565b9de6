/**
 * Loaded kernel modules: one NVRTC compile per (source file, architecture) through the cubin cache, one
 * cuModuleLoadData per (source file, device context), one cuModuleGetFunction per (kernel, device). Unloaded in
 * reverse order by `unloadAll()`.
 */
import type { CudaDriver, CuFunction, CuModule, Nvrtc } from '../../ffi/index.js'
import { type CompiledCubin, compileCubin } from './compiler.js'
import type { LaunchGroup } from './devices.js'

export interface ModuleSourceSet {
  /** Every header NVRTC may need (the contract's kernelSources()). */
  headers: { name: string; path: string }[]
  cacheDir?: string
  extraOptions?: string[]
}

export class KernelModules {
  private readonly driver: CudaDriver
  private readonly nvrtc: Nvrtc
  private readonly sources: ModuleSourceSet
  private readonly cubins = new Map<string, CompiledCubin>()
  private readonly modules = new Map<string, CuModule>()
  private readonly loadOrder: { key: string; group: LaunchGroup }[] = []
  private readonly functions = new Map<string, CuFunction>()
  /** Compile statistics for reports: how many compiled, how many came from the cache. */
  readonly stats = { compiled: 0, cached: 0, compileMs: 0 }

  constructor(driver: CudaDriver, nvrtc: Nvrtc, sources: ModuleSourceSet) {
    this.driver = driver
    this.nvrtc = nvrtc
    this.sources = sources
  }

  cubin(sourceFile: string, arch: string): CompiledCubin {
    const key = `${arch}|${sourceFile}`
    let c = this.cubins.get(key)
    if (!c) {
      const v = this.nvrtc.version()
      c = compileCubin(
        {
          sourceFile,
          headers: this.sources.headers,
          arch,
          driverVersion: this.driver.driverVersion(),
          nvrtcVersion: `${v.major}.${v.minor}`,
          cacheDir: this.sources.cacheDir,
          extraOptions: this.sources.extraOptions,
        },
        (src, name, headers, options) => this.nvrtc.compile(src, name, headers, options),
      )
      if (c.fromCache) this.stats.cached++
      else {
        this.stats.compiled++
        this.stats.compileMs += c.compileMs
      }
      this.cubins.set(key, c)
    }
    return c
  }

  module(group: LaunchGroup, sourceFile: string): CuModule {
    const key = `${group.index}|${sourceFile}`
    let m = this.modules.get(key)
    if (m === undefined) {
      const c = this.cubin(sourceFile, group.arch)
      this.driver.setCurrent(group.context)
      m = this.driver.moduleLoadData(c.cubin)
      this.modules.set(key, m)
      this.loadOrder.push({ key, group })
    }
    return m
  }

  function(group: LaunchGroup, sourceFile: string, kernelName: string): CuFunction {
    const key = `${group.index}|${kernelName}`
    let f = this.functions.get(key)
    if (f === undefined) {
      f = this.driver.moduleFunction(this.module(group, sourceFile), kernelName)
      this.functions.set(key, f)
    }
    return f
  }

  unloadAll(): void {
    this.functions.clear()
    let first: unknown
    for (const { key, group } of this.loadOrder.splice(0).reverse()) {
      const m = this.modules.get(key)
      this.modules.delete(key)
      if (m === undefined) continue
      try {
        this.driver.setCurrent(group.context)
        this.driver.moduleUnload(m)
      } catch (e) {
        first ??= e
      }
    }
    if (first) throw first
  }
}
