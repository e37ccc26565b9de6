import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import {
  calibrateDecodeStep,
  type DecodeFeatures,
  type DecodeShardRow,
  decodeFeatures,
  readDecodeShardFile,
  validateDecodeFile,
} from '../../src/model/decode-calibration.js'
import {
  countParams,
  estimateDecode,
  expectedExpertsTouched,
  kernelsPerStep,
  parseLaunchMode,
  stepConstantsOf,
} from '../../src/model/decode-model.js'
import {
  findGpu,
  findKernelRecipe,
  findModel,
  loadGpuTable,
  loadKernelRecipes,
  loadModelTable,
} from '../../src/model/decode-tables.js'
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
        launch: 'none',
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

const recipe = findKernelRecipe(loadKernelRecipes(), 'torch-unfused')

describe('decode launch term', () => {
  it('derives the kernels of a step from the architecture and the recipe', () => {
    // By hand, torch-unfused: per GQA layer 2 norms × 8 + 4 GEMMs + 2 cache writes + attention 2 + 4 elementwise
    // = 28; final norm 8 + LM head 1 = 9. Llama-3.1-8B: 32 · 28 + 9 = 905; Llama-3.1-70B: 80 · 28 + 9 = 2249.
    assert.equal(kernelsPerStep(findModel(models, 'llama-3.1-8b'), recipe, 1).kernels, 905)
    assert.equal(kernelsPerStep(findModel(models, 'llama-3.1-70b'), recipe, 16).kernels, 2249)
    // DeepSeek-V3 at batch 1: MLA attention 3·8 + 6 + 2 + 2 + 1 = 35; dense MLP 8 + 2 + 3 = 13; MoE with 8 routed
    // experts touched and 1 shared: 8 + (1 + 16 + 2) + 14 + (32 + 3 + 1) = 77; 3 dense + 58 MoE layers + 9.
    const ds = kernelsPerStep(findModel(models, 'deepseek-v3'), recipe, 1)
    assert.equal(ds.perDenseLayer, 48)
    assert.ok(Math.abs(ds.perMoeLayer - 112) < 1e-9, String(ds.perMoeLayer))
    assert.ok(Math.abs(ds.kernels - (3 * 48 + 58 * 112 + 9)) < 1e-6, String(ds.kernels))
  })

  it('adds kernels × per-kernel cost in graph mode and the host-issue bound in eager mode (hand case)', () => {
    const constants = { graphKernelUs: 2, graphKernelUsPerExtraSequence: 0.1, eagerKernelIssueUs: 10 }
    const req = {
      model: findModel(models, 'llama-3.1-8b'),
      gpu: findGpu(gpus, 'h200'),
      tp: 2,
      batch: 3,
      contextTokens: 1000,
      algorithms: ['oneshot-ll'],
      latencyParams: HAND_PARAMS,
      stepConstants: constants,
    }
    const h200 = getPlatform(platforms, 'h200')
    const none = estimateDecode({ ...req, launch: 'none' }, algorithms, h200)
    const graph = estimateDecode({ ...req, launch: 'graph' }, algorithms, h200)
    const eager = estimateDecode({ ...req, launch: 'eager' }, algorithms, h200)
    // 905 kernels × (2 + 0.1 · 2) µs = 1991 µs
    assert.equal(graph.kernelsPerStep, 905)
    assert.ok(Math.abs(graph.launchUs - 1991) < 1e-9)
    assert.ok(Math.abs(graph.stepUs - (none.memoryUs + 1991)) < 1e-9)
    const comm = graph.perAlgorithm[0].commUs
    assert.ok(Math.abs(graph.perAlgorithm[0].itlMs * 1e3 - (none.memoryUs + 1991 + comm)) < 1e-6)
    // eager: (905 + 64 AllReduces) × 10 µs = 9690 µs to issue, more than the GPU's time
    assert.ok(Math.abs(eager.perAlgorithm[0].itlMs * 1e3 - 9690) < 1e-6)
    assert.ok(Math.abs(eager.stepUs - 9050) < 1e-9)
    assert.equal(none.kernelsPerStep, 0)
    assert.equal(none.stepUs, none.memoryUs)
    assert.throws(() => parseLaunchMode('lazy'), /launch mode/)
  })

  it('fit recovers known constants from synthetic shard rows', () => {
    const truth = { graphKernelUs: 1.7, graphKernelUsPerExtraSequence: 0.05, eagerKernelIssueUs: 12 }
    const shapes: [string, number, number, number][] = [
      ['llama-3.1-8b', 1, 1, 1024],
      ['llama-3.1-8b', 4, 16, 2048],
      ['llama-3.1-70b', 2, 1, 512],
      ['llama-3.1-70b', 8, 8, 4096],
      ['llama-3.1-70b', 4, 32, 1024],
    ]
    const gpu = findGpu(gpus, 'h200')
    const base: DecodeShardRow[] = shapes.map(([model, tp, batch, context]) => ({
      model,
      tp,
      batch,
      context,
      layers: findModel(models, model).layers,
      weightBytes: 1,
      kvBytes: 1,
      kernelsPerStep: 1,
      eagerUs: 1,
      graphUs: 1,
    }))
    const features: DecodeFeatures[] = decodeFeatures(base, models, gpu, recipe).map((f) => {
      const graphUs = f.memoryUs + f.derivedKernels * (1.7 + 0.05 * (f.row.batch - 1))
      return { ...f, row: { ...f.row, graphUs, eagerUs: Math.max(graphUs, f.derivedKernels * 12) } }
    })
    const cal = calibrateDecodeStep(features)
    for (const k of Object.keys(truth) as (keyof typeof truth)[])
      assert.ok(Math.abs(cal.constants[k] / truth[k] - 1) < 1e-6, `${k}: ${cal.constants[k]} vs ${truth[k]}`)
    assert.ok(cal.graph.leaveOneOut.maxAbs < 1e-6)
  })

  it("keeps the committed H200 shard file's fit within the reported error, and the table's constants its fit", () => {
    // Reported in data/models/gpus.json and bench/results/decode-model-validation-2026-11-29.txt:
    // graph rms 1.6% (LOO max 3.8%); eager rms 29.3% (LOO max 66.2%). Bounds a little above, to the 0.1%.
    const gpu = findGpu(gpus, 'h200')
    const doc = readDecodeShardFile()
    const cal = calibrateDecodeStep(decodeFeatures(doc.rows, models, gpu, recipe))
    assert.equal(cal.rows.length, 11)
    assert.ok(cal.graph.inSample.rms < 0.017, String(cal.graph.inSample.rms))
    assert.ok(cal.graph.leaveOneOut.maxAbs < 0.039, String(cal.graph.leaveOneOut.maxAbs))
    assert.ok(cal.eager.inSample.rms < 0.294, String(cal.eager.inSample.rms))
    assert.ok(cal.eager.leaveOneOut.maxAbs < 0.663, String(cal.eager.leaveOneOut.maxAbs))
    const table = stepConstantsOf(gpu)
    assert.ok(table)
    for (const k of ['graphKernelUs', 'graphKernelUsPerExtraSequence', 'eagerKernelIssueUs'] as const)
      assert.ok(Math.abs(cal.constants[k] / table[k] - 1) < 0.001, `${k}: fit ${cal.constants[k]}, table ${table[k]}`)
    // the model's bytes match the shard's own count (norm weights aside) within 0.05%
    for (const r of cal.rows)
      assert.ok(Math.abs((r.row.weightBytes + r.row.kvBytes) / (r.modelWeightBytes + r.modelKvBytes) - 1) < 5e-4)
  })

  it('prints the validation report: one line per measured row, fitted against table constants', () => {
    const v = validateDecodeFile()
    const rows = v.text.split('\n').filter((l) => /^llama-3\.1-(8|70)b /.test(l))
    assert.equal(rows.length, 11)
    assert.match(v.text, /graphKernelUs 2\.297/)
    assert.ok(Math.abs(v.calibration.freeBandwidth.effectiveGBs / 4090.6 - 1) < 0.02)
  })
})
