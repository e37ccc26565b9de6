/**
 * Checks the model against the seeds' claims (data/latency/seed-claims.json): for each claim, what the model
 * predicts under the stated assumptions, the claimed figure, and the relative error. Nothing here is tuned to
 * the claims: the constants come from the latency and GPU tables (or a calibration), whatever the errors are.
 * Decode claims are priced once per launch mode asked for (none, graph and eager by default), each figure labelled.
 */
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { BARRIER_FREE_ALGORITHMS } from 'llcomm/internal'
import { estimateDecode, type LaunchMode } from './decode-model.js'
import { findGpu, findModel, loadGpuTable, loadModelTable } from './decode-tables.js'
import { type ParamValues, paramsFromPlatform, predictLatency } from './latency-model.js'
import { type AlgorithmTable, getAlgorithm, getPlatform, type PlatformTable } from './latency-tables.js'

interface ClaimBase {
  id: string
  source: string
  baseline: string
  assume: Record<string, unknown> & { why: string }
}
export type SeedClaim =
  | (ClaimBase & { kind: 'allreduce-pair'; platform: string; ranks: number; baselineUs: number; improvedUs: number })
  | (ClaimBase & { kind: 'allreduce-reduction'; platform: string; ranks: number; reduction: number })
  | (ClaimBase & { kind: 'itl-pair'; model: string; gpu: string; tp: number; baselineMs: number; improvedMs: number })
  | (ClaimBase & { kind: 'throughput-without-allreduce'; model: string; gpu: string; tp: number; gain: number })

export interface SeedCheckFigure {
  what: string
  /** The decode model's launch mode (decode claims only). */
  launch?: LaunchMode
  unit: string
  predicted: number
  claimed: number
  /** (predicted − claimed) / claimed */
  relError: number
}

export interface SeedCheck {
  id: string
  source: string
  assumptions: string
  /** The barrier-free algorithm the model finds fastest at that size, used as "improved". */
  improvedAlgorithm?: string
  figures: SeedCheckFigure[]
  missingTerms: string[]
}

const CLAIMS_URL = new URL('../../../data/latency/seed-claims.json', import.meta.url)

export function loadSeedClaims(): SeedClaim[] {
  return (JSON.parse(readFileSync(fileURLToPath(CLAIMS_URL), 'utf8')) as { claims: SeedClaim[] }).claims
}

function figure(what: string, unit: string, predicted: number, claimed: number, launch?: LaunchMode): SeedCheckFigure {
  return { what, ...(launch ? { launch } : {}), unit, predicted, claimed, relError: (predicted - claimed) / claimed }
}

/** The fastest barrier-free algorithm the model predicts at (ranks, bytes) on a platform, among those with complete terms. */
export function fastestBarrierFree(
  algorithms: AlgorithmTable,
  platforms: PlatformTable,
  platform: string,
  ranks: number,
  bytes: number,
  params?: ParamValues,
): { algorithm: string; latencyUs: number } {
  const p = getPlatform(platforms, platform)
  let best = { algorithm: '', latencyUs: Number.POSITIVE_INFINITY }
  // algorithms with a term absent from the table are left out: their prediction would be too low
  for (const name of BARRIER_FREE_ALGORITHMS) {
    const prediction = predictLatency(getAlgorithm(algorithms, name), p, ranks, bytes, params ?? paramsFromPlatform(p))
    if (prediction.missingTerms.length === 0 && prediction.latencyUs < best.latencyUs)
      best = { algorithm: name, latencyUs: prediction.latencyUs }
  }
  return best
}

export function runSeedChecks(
  algorithms: AlgorithmTable,
  platforms: PlatformTable,
  paramsByPlatform: Record<string, ParamValues> = {},
  launchModes: LaunchMode[] = ['none', 'graph', 'eager'],
): SeedCheck[] {
  const models = loadModelTable()
  const gpus = loadGpuTable()
  const assumptions = (c: SeedClaim) =>
    `${Object.entries(c.assume)
      .filter(([k]) => k !== 'why')
      .map(([k, v]) => `${k}=${v}`)
      .join(', ')} (${c.assume.why})`
  return loadSeedClaims().map((c): SeedCheck => {
    if (c.kind === 'allreduce-pair' || c.kind === 'allreduce-reduction') {
      const p = getPlatform(platforms, c.platform)
      const params = paramsByPlatform[c.platform] ?? paramsFromPlatform(p)
      const bytes = Number(c.assume.bytes)
      const base = predictLatency(getAlgorithm(algorithms, c.baseline), p, c.ranks, bytes, params)
      const best = fastestBarrierFree(algorithms, platforms, c.platform, c.ranks, bytes, params)
      const figures =
        c.kind === 'allreduce-pair'
          ? [
              figure(`${c.baseline} AllReduce`, 'µs', base.latencyUs, c.baselineUs),
              figure(`${best.algorithm} AllReduce`, 'µs', best.latencyUs, c.improvedUs),
            ]
          : [
              figure(
                `AllReduce latency reduction vs ${c.baseline}`,
                'fraction',
                1 - best.latencyUs / base.latencyUs,
                c.reduction,
              ),
            ]
      return {
        id: c.id,
        source: c.source,
        assumptions: assumptions(c),
        improvedAlgorithm: best.algorithm,
        figures,
        missingTerms: base.missingTerms,
      }
    }
    const model = findModel(models, c.model)
    const gpu = findGpu(gpus, c.gpu)
    const platform = getPlatform(platforms, gpu.latencyPlatform)
    const params = paramsByPlatform[gpu.latencyPlatform] ?? paramsFromPlatform(platform)
    const batch = Number(c.assume.batch)
    const contextTokens = Number(c.assume.contextTokens)
    const arBytes = batch * model.hiddenSize * 2
    const best = fastestBarrierFree(algorithms, platforms, gpu.latencyPlatform, c.tp, arBytes, params)
    const priced = launchModes.map((launch) => {
      const est = estimateDecode(
        {
          model,
          gpu,
          tp: c.tp,
          batch,
          contextTokens,
          algorithms: [c.baseline, best.algorithm],
          latencyParams: params,
          launch,
        },
        algorithms,
        platform,
      )
      return { launch, est, base: est.perAlgorithm[0], improved: est.perAlgorithm[1] }
    })
    const missingTerms = [...new Set(priced.flatMap((p) => [...p.base.missingTerms, ...p.improved.missingTerms]))]
    if (c.kind === 'itl-pair') {
      return {
        id: c.id,
        source: c.source,
        assumptions: assumptions(c),
        improvedAlgorithm: best.algorithm,
        figures: priced.flatMap(({ launch, base, improved }) => [
          figure(`ITL with ${c.baseline} (${launch})`, 'ms', base.itlMs, c.baselineMs, launch),
          figure(`ITL with ${best.algorithm} (${launch})`, 'ms', improved.itlMs, c.improvedMs, launch),
          figure(
            `ITL reduction (${launch})`,
            'fraction',
            1 - improved.itlMs / base.itlMs,
            1 - c.improvedMs / c.baselineMs,
            launch,
          ),
        ]),
        missingTerms,
      }
    }
    return {
      id: c.id,
      source: c.source,
      assumptions: assumptions(c),
      figures: priced.map(({ launch, est, base }) =>
        figure(
          `throughput gain without AllReduce (${launch})`,
          'fraction',
          base.itlMs / est.noAllReduce.itlMs - 1,
          c.gain,
          launch,
        ),
      ),
      missingTerms,
    }
  })
}
