/**
 * NVRTC through koffi: compile CUDA C++ source to a cubin for one architecture. Every nvrtcResult is checked;
 * a failed compile becomes LlcommError('NVRTC_ERROR') carrying the compiler's log.
 */
import { LlcommError } from '../errors.js'
import { LIBNVRTC, loadLibrary } from './library.js'

export interface NvrtcHeader {
  /** The name the source #includes, e.g. 'llcomm/abi.cuh'. */
  name: string
  source: string
}

export interface NvrtcOutput {
  cubin: Uint8Array
  log: string
}

export class Nvrtc {
  readonly libraryPath: string
  private readonly u64 = new BigUint64Array(1)
  private readonly i32 = new Int32Array(2)
  private readonly _version
  private readonly _getErrorString
  private readonly _create
  private readonly _destroy
  private readonly _compile
  private readonly _getCubinSize
  private readonly _getCubin
  private readonly _getLogSize
  private readonly _getLog

  constructor() {
    const { lib, path } = loadLibrary(LIBNVRTC)
    this.libraryPath = path
    const f = (p: string) => lib.func(p) as (...args: unknown[]) => number
    this._version = f('int nvrtcVersion(void *major, void *minor)')
    this._getErrorString = lib.func('const char *nvrtcGetErrorString(int result)') as (r: number) => string
    this._create = f(
      'int nvrtcCreateProgram(void *prog, const char *src, const char *name, int numHeaders, const char **headers, const char **includeNames)',
    )
    this._destroy = f('int nvrtcDestroyProgram(void *prog)')
    this._compile = f('int nvrtcCompileProgram(uint64_t prog, int numOptions, const char **options)')
    this._getCubinSize = f('int nvrtcGetCUBINSize(uint64_t prog, void *size)')
    this._getCubin = f('int nvrtcGetCUBIN(uint64_t prog, void *cubin)')
    this._getLogSize = f('int nvrtcGetProgramLogSize(uint64_t prog, void *size)')
    this._getLog = f('int nvrtcGetProgramLog(uint64_t prog, void *log)')
  }

  private check(call: string, rc: number, log?: string): void {
    if (rc === 0) return
    const name = this._getErrorString(rc) ?? `nvrtcResult ${rc}`
    throw new LlcommError('NVRTC_ERROR', `${call} failed: ${name} (${rc})${log ? `\n${log}` : ''}`, {
      call,
      code: rc,
      name,
      log: log ?? '',
    })
  }

  /** { major, minor } of this libnvrtc. */
  version(): { major: number; minor: number } {
    const minor = new Int32Array(1)
    this.check('nvrtcVersion', this._version(this.i32, minor))
    return { major: this.i32[0], minor: minor[0] }
  }

  compile(source: string, programName: string, headers: NvrtcHeader[], options: string[]): NvrtcOutput {
    const progOut = new BigUint64Array(1)
    this.check(
      'nvrtcCreateProgram',
      this._create(
        progOut,
        source,
        programName,
        headers.length,
        headers.length ? headers.map((h) => h.source) : null,
        headers.length ? headers.map((h) => h.name) : null,
      ),
    )
    const prog = Number(progOut[0])
    try {
      const rc = this._compile(prog, options.length, options.length ? options : null)
      const log = this.log(prog)
      if (rc !== 0) this.check(`nvrtcCompileProgram(${programName})`, rc, log)
      this.check('nvrtcGetCUBINSize', this._getCubinSize(prog, this.u64))
      const cubin = new Uint8Array(Number(this.u64[0]))
      this.check('nvrtcGetCUBIN', this._getCubin(prog, cubin))
      return { cubin, log }
    } finally {
      this._destroy(progOut)
    }
  }

  private log(prog: number): string {
    if (this._getLogSize(prog, this.u64) !== 0) return ''
    const size = Number(this.u64[0])
    if (size <= 1) return ''
    const buf = Buffer.alloc(size)
    if (this._getLog(prog, buf) !== 0) return ''
    return buf.toString('utf8', 0, size - 1).trim()
  }
}

let nvrtcSingleton: Nvrtc | undefined
export function nvrtc(): Nvrtc {
  nvrtcSingleton ??= new Nvrtc()
  return nvrtcSingleton
}
