// AllReduceLauncher.issuer (allreduce-launcher.ts) without a GPU: the one-launch fast path and the general loop must
// launch the same thing as issue(): every chunk's launch, in order, on its group's stream and context, with the
// parameter bytes that chunk was packed with (read from the launch's native block at the moment of cuLaunchKernelEx).
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { ALL_REDUCE_PARAMS_LAYOUT } from '../../../src/backends/cuda/abi.js'
import { AllReduceLauncher } from '../../../src/backends/cuda/allreduce-launcher.js'
import type { LaunchGroup } from '../../../src/backends/cuda/devices.js'
import { deviceBufferLayout, SIGNATURE_BLOCK } from '../../../src/backends/cuda/kernel-table.js'
import type { CudaDriver, CuStream, DevicePtr, PreparedLaunch } from '../../../src/ffi/index.js'

interface Recorded {
  context: number
  stream: number
  params: string
  grid: number
}

function group(index: number, ranks: number[]): LaunchGroup {
  return {
    index,
    ordinal: index,
    device: index as LaunchGroup['device'],
    context: (0x1000 + index) as LaunchGroup['context'],
    ranks,
    name: 'stand-in',
    smCount: 132,
    arch: 'sm_90',
    cooperativeLaunch: true,
  } as LaunchGroup
}

/** A launcher over a stand-in driver; `groups` of ranks (one group: virtual ranks on one device). */
function fakeLauncher(groups: number[][], bufferBytes: number) {
  const nranks = groups.flat().length
  const recorded: Recorded[] = []
  let current = 0
  let launcher: AllReduceLauncher | undefined
  const launchesOf = () => [...(launcher as unknown as { launches: Map<string, PreparedLaunch> }).launches.values()]
  const driver = {
    setCurrent(context: number) {
      current = context
    },
    occupancyMaxActiveBlocksPerSm: () => 1,
    setFunctionAttribute() {},
    streamQuery: () => true,
    error: (call: string, rc: number) => new Error(`${call} ${rc}`),
    cuLaunchKernelExRaw(config: number, _f: number, kernelParams: number) {
      const launch = launchesOf().find((l) => l.snapshot().address === config)
      if (!launch) throw new Error('a launch of an unknown config')
      const { address, bytes } = launch.snapshot()
      const v = new DataView(bytes.buffer)
      const paramsAt = Number(v.getBigUint64(kernelParams - address, true)) - address
      recorded.push({
        context: current,
        stream: Number(v.getBigUint64(config - address + 32, true)), // CUlaunchConfig.hStream
        params: Buffer.from(bytes.subarray(paramsAt, paramsAt + launch.paramBytes)).toString('hex'),
        grid: v.getUint32(config - address, true), // CUlaunchConfig.gridDimX
      })
      return 0
    },
  }
  const gs = groups.map((ranks, i) => group(i, ranks))
  const deviceSet = {
    groups: gs,
    rankGroup: groups.flatMap((ranks, i) => ranks.map(() => i)),
    multiDevice: groups.length > 1,
    use() {},
  }
  const modules = { function: () => 0x2000 }
  launcher = new AllReduceLauncher(
    driver as unknown as CudaDriver,
    deviceSet as unknown as ConstructorParameters<typeof AllReduceLauncher>[1],
    modules as unknown as ConstructorParameters<typeof AllReduceLauncher>[2],
    {
      nranks,
      recvBuf: Array.from({ length: nranks }, (_, r) => (0x7f0000000000 + r * 0x1000000) as DevicePtr),
      scratch: Array.from({ length: nranks }, (_, r) => (0x7f4000000000 + r * 0x1000000) as DevicePtr),
      errorWord: 0x7f8000000000 as DevicePtr,
      timeoutNs: 10e9,
      bufferBytes,
      layout: deviceBufferLayout(nranks, bufferBytes),
    } as unknown as ConstructorParameters<typeof AllReduceLauncher>[3],
  )
  const streams = gs.map((g) => (0x4000 + 0x100 * g.index) as CuStream)
  // `base` moves every pointer: two calls of the same shape share one PreparedLaunch (its native block) and differ in
  // their parameter bytes only
  const call = (count: number, base = 0) => ({
    inputs: Array.from({ length: nranks }, (_, r) => (0x7e0000000000 + base + r * 0x10000000) as DevicePtr),
    outputs: Array.from({ length: nranks }, (_, r) => (0x7e8000000000 + base + r * 0x10000000) as DevicePtr),
    count,
    dtype: 'bf16' as const,
    op: 'sum' as const,
    algorithm: 'oneshot-ll' as const,
    protocol: 'll8' as const,
    pdl: false,
    streams,
  })
  return { launcher, recorded, streams, call }
}

/**
 * What issue() launches for two calls of `count` elements that share their launches (A, B, A), and what issuer()'s
 * functions launch for the same sequence.
 */
function bothWays(groups: number[][], bufferBytes: number, count: number) {
  const f = fakeLauncher(groups, bufferBytes)
  const a = f.launcher.prepare(f.call(count))
  const b = f.launcher.prepare(f.call(count, 0x1000000))
  for (const chunks of [a, b, a]) f.launcher.issue(chunks, f.streams)
  const viaIssue = f.recorded.splice(0)
  const [issueA, issueB] = [f.launcher.issuer(a), f.launcher.issuer(b)]
  for (const issue of [issueA, issueB, issueA]) issue(f.streams)
  return { chunks: a, viaIssue, viaIssuer: f.recorded, streams: f.streams }
}

test('issuer: one chunk on one device (the fast path) launches what issue() launches', () => {
  const { chunks, viaIssue, viaIssuer, streams } = bothWays([[0, 1]], 1 << 20, 4096)
  assert.equal(chunks.length, 1)
  assert.equal(viaIssuer.length, 3)
  assert.deepEqual(viaIssuer, viaIssue)
  assert.equal(viaIssuer[0].stream, streams[0])
  assert.notEqual(viaIssuer[0].params, viaIssuer[1].params) // A's pointers, then B's
  assert.equal(viaIssuer[0].params, viaIssuer[2].params)
})

test('issuer: several chunks launch in order, each with its own parameters', () => {
  // 64 KiB of buffer: 1 Mi bf16 elements take several launches
  const { chunks, viaIssue, viaIssuer } = bothWays([[0, 1]], 1 << 16, 1 << 20)
  assert.ok(chunks.length > 1, `expected several chunks, got ${chunks.length}`)
  assert.equal(viaIssuer.length, 3 * chunks.length)
  assert.deepEqual(viaIssuer, viaIssue)
  assert.notEqual(viaIssuer[0].params, viaIssuer[1].params) // the chunks' pointers differ
})

test('issuer: two devices make the context current before each launch, on each group stream', () => {
  const { chunks, viaIssue, viaIssuer, streams } = bothWays([[0], [1]], 1 << 20, 4096)
  assert.equal(chunks.length, 1)
  assert.equal(viaIssuer.length, 6)
  assert.deepEqual(viaIssuer, viaIssue)
  assert.deepEqual(
    viaIssuer.slice(0, 2).map((r) => [r.context, r.stream]),
    [
      [0x1000, streams[0]],
      [0x1001, streams[1]],
    ],
  )
})

test('prepareEmpty: an empty call per process is one launch of the signature block alone (grid 1, count 0, no data block), on this rank only', (t) => {
  if (!SIGNATURE_BLOCK) return t.skip('LLCOMM_SIG_BLOCK=0: no signature block to launch')
  // as the per-process communicator launches: this rank (1 of 3) alone
  const f = fakeLauncher([[0, 1, 2]], 1 << 20)
  for (const algorithm of ['oneshot-ll', 'oneshot-sentinel', 'twoshot-sentinel', 'ring'] as const) {
    const { inputs: _i, outputs: _o, count: _c, ...rest } = f.call(0)
    const chunks = f.launcher.prepareEmpty({
      ...rest,
      algorithm,
      protocol: algorithm === 'oneshot-ll' ? 'll8' : undefined,
      launchRanks: [1],
    })
    assert.equal(chunks.length, 1)
    assert.equal(chunks[0].launches.length, 1)
    f.launcher.issuer(chunks)(f.streams)
    const [r] = f.recorded.splice(0)
    assert.equal(r.grid, 1, `${algorithm}: the signature block alone`)
    const params = Buffer.from(r.params, 'hex')
    const field = (name: string) => ALL_REDUCE_PARAMS_LAYOUT.byName[name].offset
    assert.equal(params.readBigUInt64LE(field('count')), 0n, `${algorithm}: count 0`)
    assert.equal(params.readUInt32LE(field('blocksPerRank')), 0, `${algorithm}: no data block`)
    assert.equal(params.readUInt32LE(field('ranksInLaunch')), 1)
    assert.equal(params.readUInt8(field('launchRanks')), 1)
    assert.equal(
      params.readUInt32LE(field('signatureChunk')),
      0,
      `${algorithm}: chunk 0 of 0, as the cpu protocol's empty call`,
    )
  }
})
