/**
 * Runs the interleaving checker over a list of configurations and prints one table row each (markdown),
 * with measured states, transitions, schedules and time: the source of docs/interleavings.md's tables.
 * Usage: node dist/src/verify/run-checks.js [--quick]
 */
import { checkProtocol } from './check-protocol.js'
import { MUTATIONS_BY_MODEL, PROTOCOL_MODELS, type ProtocolModelName, type ProtocolMutation } from './protocol-model.js'

interface Config {
  model: ProtocolModelName
  ranks: number
  calls: number
  mutation: ProtocolMutation
}

function configs(quick: boolean): Config[] {
  const out: Config[] = []
  const sizes = quick
    ? [
        [2, 3],
        [3, 3],
      ]
    : [
        [2, 3],
        [2, 4],
        [3, 3],
        [3, 4],
        [3, 5],
        [4, 3],
        [4, 4],
      ]
  for (const model of PROTOCOL_MODELS) {
    for (const [ranks, calls] of sizes) out.push({ model, ranks, calls, mutation: 'none' })
  }
  for (const model of PROTOCOL_MODELS) {
    for (const mutation of MUTATIONS_BY_MODEL[model]) {
      if (mutation === 'none') continue
      for (const [ranks, calls] of quick
        ? [[3, 3]]
        : [
            [2, 3],
            [2, 4],
            [3, 3],
            [3, 4],
          ])
        out.push({ model, ranks, calls, mutation })
    }
  }
  return out
}

function main(): void {
  const quick = process.argv.includes('--quick')
  const started = performance.now()
  console.log('| model | mutation | ranks | calls | states | transitions | schedules | time (s) | result |')
  console.log('|---|---|---|---|---|---|---|---|---|')
  for (const c of configs(quick)) {
    const r = checkProtocol(c.model, { ranks: c.ranks, calls: c.calls, mutation: c.mutation })
    const result = r.ok
      ? 'ok'
      : r.complete
        ? r.violations.map((v) => `${v.kind} (${v.trace.length} steps)`).join(', ')
        : 'incomplete'
    const schedules = r.schedulesCovered.toString()
    const schedulesText = schedules.length > 12 ? `${schedules.slice(0, 3)}e${schedules.length - 1}` : schedules
    console.log(
      `| ${c.model} | ${c.mutation} | ${c.ranks} | ${c.calls} | ${r.statesExplored} | ${r.transitionsExplored} | ${schedulesText} | ${(r.elapsedMs / 1000).toFixed(2)} | ${result} |`,
    )
  }
  console.log(`\ntotal ${((performance.now() - started) / 1000).toFixed(1)} s`)
}

main()
