import assert from 'node:assert/strict'
import { test } from 'node:test'
import { measureCpuPrimitives } from '../../src/sol/measure-cpu.js'
import { hopLatencyUs } from '../../src/sol/model.js'

test('cpu primitives are measured on worker threads and are consistent', async () => {
  const { primitives, raw } = await measureCpuPrimitives({
    pingPongBatches: 5,
    roundTripsPerBatch: 500,
    copyBytes: 1 << 20,
  })
  for (const v of [raw.fenceUs, raw.pingPongRoundTripUs, raw.emptyRegionUs, raw.copyBandwidthGBs])
    assert.ok(Number.isFinite(v) && v >= 0)
  assert.ok(raw.fenceUs > 0)
  assert.ok(raw.pingPongRoundTripUs > 0)
  // By construction L_SoL = 2·fence + (½ ping-pong − 2·fence) = ½ ping-pong.
  assert.ok(Math.abs(hopLatencyUs(primitives) - raw.pingPongRoundTripUs / 2) < 1e-9)
  assert.equal(primitives.copyBandwidthGBs, raw.copyBandwidthGBs)
})
