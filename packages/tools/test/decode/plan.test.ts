// planDecodeStep and decodeFillSpecs (src/decode/plan.ts): per-rank shapes of the Llama 3.1 models under tensor
// parallelism, the slab layout, attention splits, the GEMV batch bound, argument errors and fill seeds. Pure
// arithmetic: no GPU.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import fc from 'fast-check'
import { isLlcommError } from 'llcomm/internal'
import {
  type DecodeStepOptions,
  type DecodeStepPlan,
  decodeFillSpecs,
  type LayerBuffers,
  planDecodeStep,
  type SlabBuffer,
} from '../../src/decode/plan.js'
import { findModel, loadModelTable, type ModelArchitecture } from '../../src/model/decode-tables.js'

const table = loadModelTable()
const llama8b = findModel(table, 'llama-3.1-8b')
const llama70b = findModel(table, 'llama-3.1-70b')

const plan = (arch: ModelArchitecture, o: Partial<DecodeStepOptions> = {}): DecodeStepPlan =>
  planDecodeStep(arch, { tp: 1, batch: 1, context: 4096, smCount: 132, ...o })

/** Every {offset, bytes} of a plan, named, the layer buffers included. */
function slabBuffers(p: DecodeStepPlan): [string, SlabBuffer][] {
  const out: [string, SlabBuffer][] = []
  const isBuffer = (v: unknown): v is SlabBuffer =>
    typeof v === 'object' &&
    v !== null &&
    typeof (v as SlabBuffer).offset === 'number' &&
    typeof (v as SlabBuffer).bytes === 'number'
  for (const [k, v] of Object.entries(p)) if (isBuffer(v)) out.push([k, v])
  p.layerBuffers.forEach((lb, l) => {
    for (const [k, v] of Object.entries(lb)) {
      assert.ok(isBuffer(v), `layerBuffers[${l}].${k} is a slab buffer`)
      out.push([`layerBuffers[${l}].${k}`, v])
    }
  })
  return out
}

/** Weight bytes one rank reads per step, from the architecture alone (all bf16). */
function expectedWeightBytes(arch: ModelArchitecture, tp: number, layers: number): number {
  const h = arch.hiddenSize
  const d = arch.headDim
  const qkv = ((arch.heads + 2 * arch.kvHeads) / tp) * d * h
  const o = h * (arch.heads / tp) * d
  const mlp = 3 * (arch.intermediateSize / tp) * h // gate, up, down
  const perLayer = 2 * h + qkv + o + mlp // attention and MLP norms are replicated
  return 2 * (layers * perLayer + h + (arch.vocabSize / tp) * h) // + final norm + LM head shard
}

const cases: [ModelArchitecture, number][] = [
  [llama8b, 1],
  [llama8b, 2],
  [llama8b, 4],
  [llama8b, 8],
  [llama70b, 2],
  [llama70b, 8],
]

for (const [arch, tp] of cases) {
  test(`${arch.name} at TP ${tp}: per-rank shapes, AllReduce size and weight bytes`, () => {
    const batch = 4
    const p = plan(arch, { tp, batch })
    assert.equal(p.model, arch.name)
    assert.equal(p.tp, tp)
    assert.equal(p.layers, arch.layers)
    assert.equal(p.modelLayers, arch.layers)
    assert.equal(p.hidden, arch.hiddenSize)
    assert.equal(p.headDim, 128)
    assert.equal(p.vocab, 128256)
    assert.equal(p.qHeads, arch.heads / tp)
    assert.equal(p.kvHeads, 8 / tp)
    assert.equal(p.qkvRows, (p.qHeads + 2 * p.kvHeads) * 128)
    assert.equal(p.intermediate, arch.intermediateSize / tp)
    if (arch === llama8b) assert.equal(p.intermediate, 14336 / tp)
    assert.equal(p.vocabRows, 128256 / tp)
    assert.equal(p.allReduceCount, batch * arch.hiddenSize)
    assert.equal(p.allReduceBytes, batch * arch.hiddenSize * 2)
    assert.equal(p.allReducesPerStep, 2 * arch.layers)
    assert.equal(p.layerBuffers.length, arch.layers)
    assert.equal(p.weightBytes, expectedWeightBytes(arch, tp, arch.layers))
    assert.equal(p.kvCacheBytesRead, arch.layers * 2 * 2 * batch * p.kvHeads * 4096 * 128)

    // Summed over the ranks, the weights are the model's dense parameters without the input embedding table
    // (the step starts from an already looked-up embedding row; the LM head is untied), all bf16. The
    // replicated norms are counted once per rank: (2 L + 1) × hidden × (tp − 1) extra parameters, under 0.01 %
    // of the model. paramsTotalB is given to 3 significant figures (8.03, 70.6): its rounding error is below
    // 0.07 %, so 0.2 % is a comfortable tolerance that still catches a missing or doubled matrix (the smallest,
    // a layer's norm pair aside, is the LM head: 6.5 % of 8B, 1.5 % of 70B).
    const summed = tp * p.weightBytes
    const expected = arch.paramsTotalB * 2e9 - 2 * arch.vocabSize * arch.hiddenSize
    assert.ok(
      Math.abs(summed - expected) / expected < 2e-3,
      `${arch.name} TP ${tp}: ${summed} B over the ranks vs ${expected} B from paramsTotalB`,
    )
  })
}

test('--layers N: the first N layers, weight and KV bytes scale with N, AllReduces 2 N', () => {
  const p = plan(llama8b, { tp: 2, layers: 3, batch: 2, context: 100 })
  assert.equal(p.layers, 3)
  assert.equal(p.modelLayers, 32)
  assert.equal(p.layerBuffers.length, 3)
  assert.equal(p.allReducesPerStep, 6)
  assert.equal(p.weightBytes, expectedWeightBytes(llama8b, 2, 3))
  assert.equal(p.kvCacheBytesRead, 3 * 2 * 2 * 2 * p.kvHeads * 100 * 128)
})

function checkSlab(p: DecodeStepPlan): void {
  const buffers = slabBuffers(p)
  // 8 per layer + finalNorm, lmHead, embedding, residual, normed, qkvOut, attentionPartial, attentionOut,
  // activation, logits
  assert.equal(buffers.length, 8 * p.layers + 10)
  for (const [name, b] of buffers) {
    assert.ok(Number.isSafeInteger(b.offset) && Number.isSafeInteger(b.bytes), name)
    assert.equal(b.offset % 256, 0, `${name} at ${b.offset} is not 256-aligned`)
    assert.ok(b.bytes > 0, `${name} is empty`)
    assert.ok(b.offset >= 0 && b.offset + b.bytes <= p.slabBytes, `${name} lies outside the slab`)
  }
  const sorted = [...buffers].sort((a, b) => a[1].offset - b[1].offset)
  for (let i = 1; i < sorted.length; i++) {
    const [prevName, prev] = sorted[i - 1]
    const [name, cur] = sorted[i]
    assert.ok(prev.offset + prev.bytes <= cur.offset, `${prevName} overlaps ${name}`)
  }
}

test('slab layout: every buffer is 256-aligned, inside slabBytes, and no two overlap', () => {
  for (const [arch, tp] of cases) checkSlab(plan(arch, { tp, batch: 3, context: 1000 }))
  checkSlab(plan(llama8b, { tp: 2, batch: 1, context: 1, layers: 2 }))
  checkSlab(plan(llama8b, { tp: 8, batch: 16, context: 7, layers: 1 }))
})

test('slab layout holds for random batch, context and TP (fast-check)', () => {
  fc.assert(
    fc.property(
      fc.constantFrom(1, 2, 4, 8),
      fc.integer({ min: 1, max: 16 }),
      fc.integer({ min: 1, max: 20_000 }),
      fc.integer({ min: 1, max: 4 }),
      (tp, batch, context, layers) => checkSlab(plan(llama8b, { tp, batch, context, layers, smCount: 132 })),
    ),
    { numRuns: 100, seed: 20260801 },
  )
})

function checkSplits(p: DecodeStepPlan): void {
  const { attentionSplits: s, tokensPerSplit: t, context } = p
  assert.ok(Number.isInteger(s) && s >= 1, `splits ${s}`)
  assert.ok(Number.isInteger(t) && t >= 1, `tokens per split ${t}`)
  assert.ok(s * t >= context, `${s} splits × ${t} tokens do not cover ${context}`)
  assert.ok((s - 1) * t < context, `${s} splits × ${t} tokens leave the last split empty (context ${context})`)
}

test('attention splits: context 1 gives one split; typical shapes split the context', () => {
  for (const smCount of [1, 132, 200]) {
    const p = plan(llama8b, { tp: 8, batch: 1, context: 1, smCount })
    assert.equal(p.attentionSplits, 1)
    assert.equal(p.tokensPerSplit, 1)
  }
  const p = plan(llama8b, { tp: 8, batch: 1, context: 4096, smCount: 132 })
  checkSplits(p)
  assert.ok(p.attentionSplits > 1, 'one KV head per rank and 132 SMs: the context is split')
  assert.ok(p.tokensPerSplit >= 16, 'a split takes at least MIN_TOKENS_PER_SPLIT tokens')
})

test('attention splits are never empty (fast-check over batch, context, SMs)', () => {
  fc.assert(
    fc.property(
      fc.constantFrom(1, 2, 4, 8),
      fc.integer({ min: 1, max: 16 }),
      fc.integer({ min: 1, max: 20_000 }),
      fc.integer({ min: 1, max: 200 }),
      (tp, batch, context, smCount) => checkSplits(plan(llama8b, { tp, batch, context, smCount, layers: 1 })),
    ),
    { numRuns: 500, seed: 20260802 },
  )
})

test('gemvBatch is the smallest of 1, 4, 16 that holds the batch', () => {
  for (let batch = 1; batch <= 16; batch++) {
    const expected = batch <= 1 ? 1 : batch <= 4 ? 4 : 16
    assert.equal(plan(llama8b, { tp: 2, batch, layers: 1 }).gemvBatch, expected, `batch ${batch}`)
  }
})

function assertInvalid(f: () => unknown, message: RegExp): void {
  assert.throws(f, (e: unknown) => {
    assert.ok(isLlcommError(e, 'INVALID_ARGUMENT'), `expected INVALID_ARGUMENT, got ${String(e)}`)
    assert.match(e.message, message)
    return true
  })
}

test('errors: MoE / MLA models, heads that do not split, batch, context and layers out of range', () => {
  assertInvalid(() => plan(findModel(table, 'deepseek-v3')), /dense GQA.*DeepSeek-V3 has (MoE|mla)/)
  assertInvalid(() => plan(findModel(table, 'qwen3-235b-a22b')), /dense GQA.*Qwen3-235B-A22B has MoE/)
  assertInvalid(() => plan(llama8b, { tp: 3 }), /32 query and 8 KV heads do not split over 3 ranks/)
  assertInvalid(() => plan(llama8b, { tp: 16 }), /32 query and 8 KV heads do not split over 16 ranks/)
  assertInvalid(() => plan(llama8b, { tp: 0 }), /tensor-parallel degree/)
  assertInvalid(() => plan(llama8b, { batch: 0 }), /batch must be an integer in 1\.\.16, got 0/)
  assertInvalid(() => plan(llama8b, { batch: 17 }), /batch must be an integer in 1\.\.16, got 17/)
  assertInvalid(() => plan(llama8b, { batch: 1.5 }), /batch/)
  assertInvalid(() => plan(llama8b, { context: 0 }), /context must be a positive integer, got 0/)
  assertInvalid(() => plan(llama8b, { layers: 0 }), /layers must be an integer in 1\.\.32, got 0/)
  assertInvalid(() => plan(llama8b, { layers: 33 }), /layers must be an integer in 1\.\.32, got 33/)
  assertInvalid(() => plan(llama70b, { layers: 81 }), /layers must be an integer in 1\.\.80, got 81/)
  assertInvalid(() => plan({ ...llama8b, headDim: 64 }), /head size 128/)
})

test('errors: above batch 1 every GEMV row count must be a multiple of the tensor-core tile (16 rows)', () => {
  // 14352 / 2 = 7176 MLP rows a rank: a multiple of 8 (16-byte vectors) but not of 16
  const odd = { ...llama8b, intermediateSize: 14352 }
  assert.equal(plan(odd, { tp: 2, batch: 1, layers: 1 }).intermediate, 7176) // batch 1: the CUDA-core GEMV
  assertInvalid(() => plan(odd, { tp: 2, batch: 2, layers: 1 }), /MLP shard 7176 is not a multiple of 16.*batch-4 GEMV/)
  assertInvalid(() => plan(odd, { tp: 2, batch: 16, layers: 1 }), /MLP shard 7176 is not a multiple of 16.*batch-16/)
})

const REPLICATED: (keyof LayerBuffers)[] = ['attentionNorm', 'mlpNorm']

test('decodeFillSpecs: one spec per weight/cache/embedding buffer; replicated seeds agree, shard seeds differ', () => {
  const p = plan(llama8b, { tp: 4, batch: 2, context: 64, layers: 3 })
  const perRank = Array.from({ length: p.tp }, (_, r) => decodeFillSpecs(p, r))
  const filled: SlabBuffer[] = [
    ...p.layerBuffers.flatMap((lb) => Object.values(lb) as SlabBuffer[]),
    p.finalNorm,
    p.lmHead,
    p.embedding,
  ]
  const replicated = new Set<SlabBuffer>([
    ...p.layerBuffers.flatMap((lb) => REPLICATED.map((k) => lb[k])),
    p.finalNorm,
    p.embedding,
  ])
  for (const [rank, specs] of perRank.entries()) {
    assert.equal(specs.length, filled.length, `rank ${rank}: one spec per filled buffer`)
    assert.deepEqual(
      specs.map((s) => s.buffer.offset).sort((a, b) => a - b),
      filled.map((b) => b.offset).sort((a, b) => a - b),
      `rank ${rank}: the specs cover exactly the filled buffers`,
    )
    for (const s of specs) {
      assert.ok(Number.isInteger(s.seed) && s.seed >= 0 && s.seed <= 0xffffffff, `seed ${s.seed} is not a u32`)
      assert.ok(Number.isFinite(s.scale) && s.scale > 0 && s.scale <= 1, `scale ${s.scale}`)
    }
  }
  for (let i = 0; i < filled.length; i++) {
    const buffer = perRank[0][i].buffer
    for (const specs of perRank) assert.equal(specs[i].buffer, buffer, 'the ranks list the buffers in one order')
    const seeds = perRank.map((specs) => specs[i].seed)
    if (replicated.has(buffer)) assert.equal(new Set(seeds).size, 1, `replicated buffer at ${buffer.offset}: ${seeds}`)
    else assert.equal(new Set(seeds).size, p.tp, `shard buffer at ${buffer.offset}: ${seeds}`)
  }
  // Within a rank, no two buffers share a seed (they would be the same random tensor).
  for (const specs of perRank) assert.equal(new Set(specs.map((s) => s.seed)).size, specs.length)
})

test('decodeFillSpecs: seeds stay u32 at the largest shapes (70B, TP 8, every layer)', () => {
  const p = plan(llama70b, { tp: 8, batch: 16, context: 1 })
  for (let rank = 0; rank < 8; rank++)
    for (const s of decodeFillSpecs(p, rank))
      assert.ok(Number.isInteger(s.seed) && s.seed >= 0 && s.seed <= 0xffffffff, `rank ${rank} seed ${s.seed}`)
})
