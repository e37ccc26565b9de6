/**
 * The decode step on the host in float64, from the same seeded tensors as the GPU (decodeFillSpecs + the fill
 * kernel's hash, recomputed here bit for bit), rounding to bf16 exactly where the kernels store bf16: the oracle of
 * test/gpu/decode.test.ts. `allReduce: false` is the step without AllReduce (each rank adds its own partial sum).
 */

import { DTYPE_CODECS } from 'llcomm/internal'
import {
  DECODE_RMS_EPS,
  DECODE_ROPE_THETA,
  type DecodeStepPlan,
  decodeFillSpecs,
  type SlabBuffer,
} from '../../src/decode/plan.js'

const bf16 = DTYPE_CODECS.bf16
/** Round to bf16 (nearest even) and back. */
export const roundBf16 = (x: number): number => bf16.decodeLane(bf16.encodeLane(Math.fround(x)))

/** packages/tools/kernels/decode.cu llcDecodeUniform, in u32 arithmetic. */
export function decodeUniform(i: number, seed: number): number {
  const lo = i >>> 0
  const hi = Math.floor(i / 2 ** 32) >>> 0
  let h = (Math.imul(lo, 0x9e3779b1) ^ Math.imul(hi, 0x85ebca77) ^ Math.imul(seed >>> 0, 0xc2b2ae3d)) >>> 0
  h = (h ^ (h >>> 16)) >>> 0
  h = Math.imul(h, 0x7feb352d) >>> 0
  h = (h ^ (h >>> 15)) >>> 0
  h = Math.imul(h, 0x846ca68b) >>> 0
  h = (h ^ (h >>> 16)) >>> 0
  return (h >>> 8) * (2 / 16777216) - 1
}

/** What the fill kernel writes: bf16(f32(scale) × u). */
function filled(count: number, seed: number, scale: number): Float64Array {
  const s = Math.fround(scale)
  const out = new Float64Array(count)
  for (let i = 0; i < count; i++) out[i] = roundBf16(Math.fround(s * decodeUniform(i, seed)))
  return out
}

interface RankTensors {
  get(b: SlabBuffer): Float64Array
}

function tensorsOf(plan: DecodeStepPlan, rank: number): RankTensors {
  const byOffset = new Map<number, { seed: number; scale: number; count: number }>()
  for (const f of decodeFillSpecs(plan, rank))
    byOffset.set(f.buffer.offset, { seed: f.seed, scale: f.scale, count: f.buffer.bytes / 2 })
  const cache = new Map<number, Float64Array>()
  return {
    get(b) {
      let t = cache.get(b.offset)
      if (!t) {
        const spec = byOffset.get(b.offset)
        if (!spec) throw new Error(`no fill for the buffer at ${b.offset}`)
        t = filled(spec.count, spec.seed, spec.scale)
        cache.set(b.offset, t)
      }
      return t
    },
  }
}

/** y[b][r] = sum_k w[r][k] x[b][k], each output rounded to bf16. */
function gemv(
  x: Float64Array,
  w: Float64Array,
  batch: number,
  rows: number,
  cols: number,
  weightRow0 = 0,
): Float64Array {
  const y = new Float64Array(batch * rows)
  for (let b = 0; b < batch; b++)
    for (let r = 0; r < rows; r++) {
      let s = 0
      const wr = (weightRow0 + r) * cols
      for (let k = 0; k < cols; k++) s += w[wr + k] * x[b * cols + k]
      y[b * rows + r] = s
    }
  return y
}

function rmsNorm(residual: Float64Array, weight: Float64Array, batch: number, hidden: number): Float64Array {
  const out = new Float64Array(batch * hidden)
  for (let b = 0; b < batch; b++) {
    let ss = 0
    for (let i = 0; i < hidden; i++) ss += residual[b * hidden + i] ** 2
    const inv = 1 / Math.sqrt(ss / hidden + DECODE_RMS_EPS)
    for (let i = 0; i < hidden; i++) out[b * hidden + i] = roundBf16(residual[b * hidden + i] * inv * weight[i])
  }
  return out
}

export interface DecodeReference {
  /** [rank] f32-rounded residual stream after the step. */
  residual: Float64Array[]
  /** [rank] bf16 logits of the rank's vocabulary shard. */
  logits: Float64Array[]
}

export function decodeReference(plan: DecodeStepPlan, allReduce: boolean): DecodeReference {
  const { batch: B, hidden: H, headDim: D, context: T } = plan
  const ranks = Array.from({ length: plan.tp }, (_, r) => tensorsOf(plan, r))
  const embedding = ranks[0].get(plan.embedding)
  const residual = ranks.map(() => Float64Array.from(embedding))
  const round32 = (a: Float64Array) => a.map((v) => Math.fround(v))
  const pos = T - 1
  for (let l = 0; l < plan.layers; l++) {
    const lb = plan.layerBuffers[l]
    // attention: each rank's partial O projection
    const attnPartials = ranks.map((t, r) => {
      const normed = rmsNorm(residual[r], t.get(lb.attentionNorm), B, H)
      const qkv = gemv(normed, t.get(lb.qkv), B, plan.qkvRows, H).map(roundBf16)
      const heads = plan.qHeads + 2 * plan.kvHeads
      const kCache = Float64Array.from(t.get(lb.kCache))
      const vCache = Float64Array.from(t.get(lb.vCache))
      for (let b = 0; b < B; b++) {
        for (let h = 0; h < heads; h++) {
          const base = (b * heads + h) * D
          if (h < plan.qHeads + plan.kvHeads) {
            for (let i = 0; i < D / 2; i++) {
              const invFreq = DECODE_ROPE_THETA ** (-(2 * i) / D)
              const a = pos * invFreq
              const x0 = qkv[base + i]
              const x1 = qkv[base + i + D / 2]
              qkv[base + i] = roundBf16(x0 * Math.cos(a) - x1 * Math.sin(a))
              qkv[base + i + D / 2] = roundBf16(x1 * Math.cos(a) + x0 * Math.sin(a))
            }
          }
          if (h >= plan.qHeads) {
            const isK = h < plan.qHeads + plan.kvHeads
            const kvh = isK ? h - plan.qHeads : h - plan.qHeads - plan.kvHeads
            const dst = ((b * plan.kvHeads + kvh) * T + pos) * D
            for (let i = 0; i < D; i++) (isK ? kCache : vCache)[dst + i] = qkv[base + i]
          }
        }
      }
      const group = plan.qHeads / plan.kvHeads
      const attnOut = new Float64Array(B * plan.qHeads * D)
      for (let b = 0; b < B; b++)
        for (let qh = 0; qh < plan.qHeads; qh++) {
          const kvh = Math.floor(qh / group)
          const q = (b * heads + qh) * D
          const scores = new Float64Array(T)
          for (let t2 = 0; t2 < T; t2++) {
            let s = 0
            const k = ((b * plan.kvHeads + kvh) * T + t2) * D
            for (let i = 0; i < D; i++) s += qkv[q + i] * kCache[k + i]
            scores[t2] = s / Math.sqrt(D)
          }
          const m = Math.max(...scores)
          let sum = 0
          for (let t2 = 0; t2 < T; t2++) sum += Math.exp(scores[t2] - m)
          for (let i = 0; i < D; i++) {
            let a = 0
            for (let t2 = 0; t2 < T; t2++)
              a += Math.exp(scores[t2] - m) * vCache[((b * plan.kvHeads + kvh) * T + t2) * D + i]
            attnOut[(b * plan.qHeads + qh) * D + i] = roundBf16(a / sum)
          }
        }
      return gemv(attnOut, t.get(lb.o), B, H, plan.qHeads * D).map(roundBf16)
    })
    addReduced(residual, attnPartials, allReduce)
    const mlpPartials = ranks.map((t, r) => {
      const normed = rmsNorm(residual[r], t.get(lb.mlpNorm), B, H)
      const w = t.get(lb.gateUp)
      const gate = gemv(normed, w, B, plan.intermediate, H)
      const up = gemv(normed, w, B, plan.intermediate, H, plan.intermediate)
      const act = gate.map((g, i) => roundBf16((g / (1 + Math.exp(-g))) * up[i]))
      return gemv(act, t.get(lb.down), B, H, plan.intermediate).map(roundBf16)
    })
    addReduced(residual, mlpPartials, allReduce)
    for (let r = 0; r < residual.length; r++) residual[r] = round32(residual[r])
  }
  const logits = ranks.map((t, r) =>
    gemv(rmsNorm(residual[r], t.get(plan.finalNorm), B, H), t.get(plan.lmHead), B, plan.vocabRows, H).map(roundBf16),
  )
  return { residual, logits }
}

/** residual[r] += the bf16 sum over ranks of the partials (AllReduce), or rank r's own partial. */
function addReduced(residual: Float64Array[], partials: Float64Array[], allReduce: boolean): void {
  const sum = partials[0].map((_, i) => roundBf16(partials.reduce((s, p) => s + p[i], 0)))
  residual.forEach((res, r) => {
    const delta = allReduce ? sum : partials[r]
    for (let i = 0; i < res.length; i++) res[i] = Math.fround(res[i] + delta[i])
  })
}
