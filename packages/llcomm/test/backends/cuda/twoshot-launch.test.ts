// AllReduceLauncher.prepare picks twoshot-sentinel's push or pull kernel per launch (kernel-table.ts
// launchVariant / twoshotAllGather) and launches that kernel: no GPU (a fake driver and modules that record which
// kernel each launch asked for; PreparedLaunch only touches koffi's host memory).
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { AllReduceLauncher } from '../../../src/backends/cuda/allreduce-launcher.js'
import type { DeviceSet, LaunchGroup } from '../../../src/backends/cuda/devices.js'
import { deviceBufferLayout, type TwoshotAllGatherMode } from '../../../src/backends/cuda/kernel-table.js'
import type { KernelModules } from '../../../src/backends/cuda/modules.js'
import type { CudaDriver, CuFunction, DevicePtr } from '../../../src/ffi/index.js'

/** The kernel of every launch of one call of `bytes` bf16 bytes per rank, in launch order. */
function kernelsOf(nranks: number, bytes: number, bufferBytes: number, mode?: TwoshotAllGatherMode): string[] {
  const asked: string[] = []
  const driver = { setCurrent: () => {}, occupancyMaxActiveBlocksPerSm: () => 1 } as unknown as CudaDriver
  const modules = {
    function: (_g: LaunchGroup, sourceFile: string, kernelName: string) => {
      assert.equal(sourceFile, 'allreduce/twoshot_sentinel.cu')
      asked.push(kernelName)
      return asked.length as unknown as CuFunction
    },
  } as unknown as KernelModules
  const group = {
    index: 0,
    ordinal: 0,
    ranks: Array.from({ length: nranks }, (_, r) => r),
    smCount: 132,
    arch: 'sm_90',
    cooperativeLaunch: true,
  } as unknown as LaunchGroup
  const devices = { groups: [group], multiDevice: false } as unknown as DeviceSet
  const L = deviceBufferLayout(nranks, bufferBytes)
  const zero = new Array(nranks).fill(0) as DevicePtr[]
  const launcher = new AllReduceLauncher(driver, devices, modules, {
    nranks,
    recvBuf: zero,
    scratch: zero,
    errorWord: 0 as DevicePtr,
    timeoutNs: 1e9,
    bufferBytes,
    layout: { ll: L.ll, sentinel: L.sentinel, ll128: L.ll128, plain: L.plain },
    twoshotAllGather: mode,
  })
  try {
    const chunks = launcher.prepare({
      inputs: zero,
      outputs: zero,
      count: bytes / 2,
      dtype: 'bf16',
      op: 'sum',
      algorithm: 'twoshot-sentinel',
      pdl: false,
      streams: [],
    })
    const launched = chunks.flatMap((c) => c.launches.map((l) => l.launch.name))
    assert.equal(launched.length, chunks.length, 'one launch group: one launch per chunk')
    // every kernel launched was the one the modules were asked for (launchFor: one function per kernel)
    assert.deepEqual([...new Set(launched)].sort(), [...new Set(asked)].sort())
    return launched
  } finally {
    launcher.disposeAll()
  }
}

const PUSH = 'llcomm_twoshot_sentinel_sentinel_bf16_sum'
const PULL = 'llcomm_twoshot_sentinel_pull_sentinel_bf16_sum'
const MB = 1 << 20

test('twoshot-sentinel launches: the pull kernel where twoshotAllGather picks it, per launch; push forced; pull forced on the serial path only', () => {
  // 8 ranks, 1 MB: two launches of 256-slot parts (1 MB buffer) or one of 512 (4 MB buffer): pull.
  assert.deepEqual(kernelsOf(8, MB, MB), [PULL, PULL])
  assert.deepEqual(kernelsOf(8, MB, 4 * MB), [PULL])
  assert.deepEqual(kernelsOf(8, MB, MB, 'push'), [PUSH, PUSH])
  // 8 ranks, 256 KB: the spread path, push even when pull is forced; 2 ranks: push, pull only when forced.
  assert.deepEqual(kernelsOf(8, 256 << 10, MB), [PUSH])
  assert.deepEqual(kernelsOf(8, 256 << 10, MB, 'pull'), [PUSH])
  for (const bytes of [16, 8192, 65536, 256 << 10]) {
    assert.deepEqual(kernelsOf(2, bytes, MB), [PUSH], `2 ranks ${bytes} B`)
    assert.deepEqual(kernelsOf(2, bytes, MB, 'pull'), [PULL], `2 ranks ${bytes} B, pull forced`)
  }
  // A call whose last launch is short: 8 ranks, 1 MB + 64 KB at the 1 MB buffer: two full launches pull, the third
  // (64 KB: 4 channels of 16 KB, 128-slot parts, the spread path) pushes.
  assert.deepEqual(kernelsOf(8, MB + 65536, MB), [PULL, PULL, PUSH])
})

test('LLCOMM_TWOSHOT_ALLGATHER is read when a communicator is created: another value than auto, push, pull fails the creation with INVALID_ARGUMENT', async () => {
  const { CudaCommunicator } = await import('../../../src/backends/cuda/communicator.js')
  const { createCudaProcessCommunicator } = await import('../../../src/backends/cuda/process-communicator.js')
  const before = process.env.LLCOMM_TWOSHOT_ALLGATHER
  const refused = (e: unknown) => {
    assert.equal((e as { code?: string }).code, 'INVALID_ARGUMENT', String(e))
    assert.match(String((e as Error).message), /LLCOMM_TWOSHOT_ALLGATHER=pulll must be auto, push or pull/)
    return true
  }
  try {
    process.env.LLCOMM_TWOSHOT_ALLGATHER = 'pulll'
    // Checked before any driver or device is touched (so this runs without a GPU too).
    assert.throws(() => new CudaCommunicator({ backend: 'cuda', devices: [0, 0] }), refused)
    // Per process: before the rendezvous (nobody listens at this address).
    await assert.rejects(
      createCudaProcessCommunicator({ backend: 'cuda', rank: 1, worldSize: 2, rendezvous: 'tcp://127.0.0.1:9' }),
      refused,
    )
  } finally {
    if (before === undefined) delete process.env.LLCOMM_TWOSHOT_ALLGATHER
    else process.env.LLCOMM_TWOSHOT_ALLGATHER = before
  }
})
