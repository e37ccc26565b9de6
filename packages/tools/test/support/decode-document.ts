import type { DecodeStepPlan } from '../../src/decode/plan.js'
import { type DecodeDocument, type DecodeMeasurement, type DecodeRow, planSummary } from '../../src/decode/report.js'

/**
 * A saved `llcomm decode` document for report, plot and CLI tests: a fixed machine, commit and date around the
 * given plan, rows and measured samples; `computeGBs` from the plan's bytes over `stepUs` (the bytes a step reads,
 * per µs of step); `extra` sets the command, devices, PDL or anything else.
 */
export function decodeDocumentFixture(
  plan: DecodeStepPlan,
  rows: DecodeRow[],
  measured: readonly DecodeMeasurement[],
  stepUs: number,
  extra: Partial<DecodeDocument> = {},
): DecodeDocument {
  return {
    kind: 'llcomm-decode',
    machine: { hostname: 'gpu-box', cpuModel: 'x', cores: 16, gpu: 'NVIDIA H200' },
    commit: 'abc1234',
    date: '2026-11-29T09:00:00.000Z',
    command: `llcomm decode --ranks ${plan.tp} --layers ${plan.layers}`,
    devices: Array.from({ length: plan.tp }, (_, i) => i),
    model: plan.model,
    tp: plan.tp,
    batch: plan.batch,
    context: plan.context,
    layers: plan.layers,
    modelLayers: plan.modelLayers,
    pdl: false,
    plan: planSummary(plan),
    computeGBs: (plan.weightBytes + plan.kvCacheBytesRead) / (stepUs * 1e3),
    rows,
    samplesUs: Object.fromEntries(measured.map((m) => [m.algorithm, [...m.stepUs]])),
    ...extra,
  }
}
