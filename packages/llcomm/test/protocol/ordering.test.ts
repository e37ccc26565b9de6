// The ordering checks are load-bearing: with the LL8 epoch check or the sentinel re-arm removed (fault
// variants), the in-rank checker of benchmark() finds wrong elements under random arrival skew; the intact
// protocol, in the same run shape, finds none.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { createCpuCommunicator } from '../../src/backends/cpu/communicator.js'
import type { ProtocolTestFaults } from '../../src/protocol/cpu/rank-protocol.js'

async function wrongElements(
  algorithm: 'oneshot-ll' | 'oneshot-sentinel',
  testFaults: ProtocolTestFaults,
): Promise<number> {
  const comm = await createCpuCommunicator({ backend: 'cpu', ranks: 3, timeoutMs: 10_000, testFaults })
  try {
    const r = await comm.benchmark({ algorithm, dtype: 'f32', count: 16, iters: 150, skewUs: 300 })
    return r.wrong
  } finally {
    await comm.close()
  }
}

test('oneshot-ll without the epoch in the flag check returns stale data; with it, none', async () => {
  // Without the call-signature check too: its wait for every peer's header narrows the window for stale reads.
  assert.ok((await wrongElements('oneshot-ll', { ignoreEpochInFlag: true, skipSignatureCheck: true })) > 0)
  assert.equal(await wrongElements('oneshot-ll', {}), 0)
})

test('oneshot-sentinel without the re-arm returns stale data; with it, none', async () => {
  assert.ok((await wrongElements('oneshot-sentinel', { skipRearm: true, skipSignatureCheck: true })) > 0)
  assert.equal(await wrongElements('oneshot-sentinel', {}), 0)
})
