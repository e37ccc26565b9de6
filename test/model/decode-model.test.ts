import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { countParams, estimateDecode, expectedExpertsTouched } from '../../src/model/decode-model.js'
import { findGpu, findModel, loadGpuTable, loadModelTable } from '../../src/model/decode-tables.js'
import { getPlatform, loadAlgorithmTable, loadPlatformTable } from '../../src/model/latency-tables.js'

const models = loadModelTable()
const gpus = loadGpuTable()
const algorithms = loadAlgorithmTable()
const platforms = loadPlatformTable()

// Latency constants fixed here, so that a calibration written into the h200 table cannot change the hand case.
const HAND_PARAMS = {
  kernelFloorUs: 0.796,
  hopUs: 2 * 0.306 + 0.792,
  barrierFixedUs: null,
  barrierPerPeerUs: null,
  barrierQuadUs: null,
  usPerWireByte: 1 / 450e3,
  usPerAtomicByte: null,
  libraryOverheadUs: null,
  nvlsSwitchReduceUs: null,
  pollRoundUs: null,
  storeRoundUs: null,
  ringStepUs: null,
  serialRecvUs: null,
  rearmUs: null,
  atomicLineUs: null,
  usPerRearmByte: null,
}

describe('decode cost model', () => {
  it("computes parameter counts within 1.5% of the model cards' totals", () => {
    for (const m of Object.values(models.models)) {
      const c = countParams(m)
      assert.ok(
        Math.abs(c.total / 1e9 / m.paramsTotalB - 1) < 0.015,
        `${m.name}: total ${(c.total / 1e9).toFixed(2)}B vs card ${m.paramsTotalB}B`,
      )
      assert.ok(
        Math.abs(c.activePerToken / 1e9 / m.paramsActiveB - 1) < 0.015,
        `${m.name}: active ${(c.activePerToken / 1e9).toFixed(2)}B vs card ${m.paramsActiveB}B`,
      )
      assert.ok(m.source.length > 10, `${m.name} has a source`)
    }
  })

  it('matches a hand-computed case: Llama-3.1-8B, TP=2 on H200, batch 1, context 1000, oneshot-ll', () => {
    // By hand: attention 4096·4096 + 2·4096·1024 + 4096·4096 = 41 943 040; MLP 3·4096·14336 = 176 160 768;
    // 32 layers → 6 979 321 856; LM head 128256·4096 = 525 336 576; bf16 ×2, TP /2 → 7 504 658 432 bytes.
    // KV: 32 layers · 2 · (8/2 heads) · 128 · 2 bytes = 65 536 B/token × 1000 = 65 536 000 bytes.
    // HBM: 4800 GB/s × 0.8522 = 4 090 560 bytes/µs → (7 504 658 432 + 65 536 000) / 4 090 560 = 1850.6499 µs.
    // AllReduce 8192 B at N=2 on h200: 0.796 + (2·0.306 + 0.792) + 2·1·8192 / 450 000 = 2.2364089 µs; ×64 calls.
    const est = estimateDecode(
      {
        model: findModel(models, 'llama-3.1-8b'),
        gpu: findGpu(gpus, 'h200'),
        tp: 2,
        batch: 1,
        contextTokens: 1000,
        algorithms: ['oneshot-ll'],
        usdPerGpuHour: 2,
        latencyParams: HAND_PARAMS,
      },
      algorithms,
      getPlatform(platforms, 'h200'),
    )
    assert.equal(est.weightBytesPerGpu, 7_504_658_432)
    assert.equal(est.kvBytesPerGpu, 65_536_000)
    assert.ok(Math.abs(est.memoryUs - 1850.6499) < 1e-3, String(est.memoryUs))
    assert.equal(est.allReducesPerToken, 64)
    assert.equal(est.allReduceBytes, 8192)
    const row = est.perAlgorithm[0]
    assert.ok(Math.abs(row.allReduceUs - 2.2364089) < 1e-6, String(row.allReduceUs))
    const itlUs = 1850.6499 + 64 * 2.2364089
    assert.ok(Math.abs(row.itlMs - itlUs / 1e3) < 1e-5)
    assert.ok(Math.abs(row.tokensPerSec - 1e6 / itlUs) < 1e-2)
    // $2 per GPU-hour × 2 GPUs, per million tokens
    assert.ok(Math.abs((row.usdPerMillionTokens as number) - ((2 * 2) / 3600) * (itlUs / 1e6) * 1e6) < 1e-6)
  })

  it('counts MoE experts touched by a batch', () => {
    assert.ok(Math.abs(expectedExpertsTouched(256, 8, 1) - 8) < 1e-9)
    assert.ok(expectedExpertsTouched(256, 8, 1000) > 255.9)
    const ds = findModel(models, 'deepseek-v3')
    const one = estimateDecode(
      { model: ds, gpu: findGpu(gpus, 'gb200'), tp: 8, batch: 1, contextTokens: 0, algorithms: [] },
      algorithms,
      getPlatform(platforms, 'gb200'),
    )
    const many = estimateDecode(
      { model: ds, gpu: findGpu(gpus, 'gb200'), tp: 8, batch: 64, contextTokens: 0, algorithms: [] },
      algorithms,
      getPlatform(platforms, 'gb200'),
    )
    assert.ok(many.weightBytesPerGpu > 5 * one.weightBytesPerGpu)
  })

  it('has no AllReduce at TP=1', () => {
    const est = estimateDecode(
      {
        model: findModel(models, 'qwen3'),
        gpu: findGpu(gpus, 'h200'),
        tp: 1,
        batch: 1,
        contextTokens: 128,
        algorithms: ['nccl'],
      },
      algorithms,
      getPlatform(platforms, 'h200'),
    )
    assert.equal(est.allReducesPerToken, 0)
    assert.equal(est.perAlgorithm[0].itlMs, est.noAllReduce.itlMs)
  })
})
