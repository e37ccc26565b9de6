/**
 * NCCL with one process per rank: ncclGetUniqueId on rank 0 (a 128-byte ncclUniqueId that travels through the
 * rendezvous as base64), then ncclCommInitRank on every rank with the same id. The communicators it returns are
 * used with the existing Nccl.allReduce / commDestroy (src/ffi/nccl.ts). NVLink multicast stays off as there:
 * NCCL_NVLS_ENABLE=0 when unset.
 */
import koffi from 'koffi'
import { LlcommError } from '../errors.js'
import { LIBNCCL, loadLibrary } from './library.js'
import type { NcclComm } from './types.js'

export const NCCL_UNIQUE_ID_BYTES = 128

const UniqueIdStruct = koffi.struct('llcomm_ncclUniqueId', {
  internal: koffi.array('uint8_t', NCCL_UNIQUE_ID_BYTES, 'Typed'),
})

export class NcclRank {
  private readonly _getUniqueId: (out: Uint8Array) => number
  private readonly _commInitRank: (
    out: BigUint64Array,
    nranks: number,
    id: { internal: Uint8Array },
    rank: number,
  ) => number
  private readonly _getErrorString: (rc: number) => string

  constructor() {
    const { lib } = loadLibrary(LIBNCCL)
    this._getUniqueId = lib.func('int ncclGetUniqueId(void *uniqueId)') as NcclRank['_getUniqueId']
    this._commInitRank = lib.func('ncclCommInitRank', 'int', [
      'void *',
      'int',
      UniqueIdStruct,
      'int',
    ]) as NcclRank['_commInitRank']
    this._getErrorString = lib.func('const char *ncclGetErrorString(int result)') as NcclRank['_getErrorString']
  }

  private check(call: string, rc: number): void {
    if (rc === 0) return
    const name = this._getErrorString(rc) ?? `ncclResult ${rc}`
    throw new LlcommError('NCCL_ERROR', `${call} failed: ${name} (${rc})`, { call, code: rc, name })
  }

  uniqueId(): Uint8Array {
    const out = new Uint8Array(NCCL_UNIQUE_ID_BYTES)
    this.check('ncclGetUniqueId', this._getUniqueId(out))
    return out
  }

  /** Collective over the `nranks` processes holding `id`; blocks until every rank has called it. */
  commInitRank(nranks: number, id: Uint8Array, rank: number): NcclComm {
    if (process.env.NCCL_NVLS_ENABLE === undefined) process.env.NCCL_NVLS_ENABLE = '0'
    const out = new BigUint64Array(1)
    this.check('ncclCommInitRank', this._commInitRank(out, nranks, { internal: id }, rank))
    return Number(out[0]) as NcclComm
  }
}

let rankSingleton: NcclRank | undefined
export function ncclRank(): NcclRank {
  rankSingleton ??= new NcclRank()
  return rankSingleton
}
